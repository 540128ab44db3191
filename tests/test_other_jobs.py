"""The launch's other SLURM jobs, waited for before the recap when submitit gave up on one (pilot/other_jobs.py;
with a cluster: tests/test_cluster.py). A local launch's jobs are not waited for: they stop with their launcher
(tests/test_startup_signals.py -k controller_killed)."""

from pilot.other_jobs import job_ids, wait_for_other_jobs


def test_job_ids_are_the_launch_s_folders_named_by_a_job_id(tmp_path):
    for name in ("12_0", "12_1", "%j", "12"):
        (tmp_path / ".submitit" / name).mkdir(parents=True)
    assert job_ids(tmp_path) == ["12", "12_0", "12_1"]  # submitit's folder pattern itself is no job


def test_no_submitit_folder_no_wait(tmp_path):
    assert wait_for_other_jobs(tmp_path / "none") == []
