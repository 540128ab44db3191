"""The launch's other jobs, waited for before the recap when submitit gave up on one (pilot/other_jobs.py):
the sweep recapped them 'running' and exited while they went on (a SLURM job cancelled with scancel). A local
launch's jobs are not waited for: they stop with their launcher (tests/test_startup_signals.py)."""

import subprocess
import sys

from pilot.other_jobs import job_ids, wait_for_other_jobs

LOCAL = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"


def test_a_local_job_still_running_is_not_waited_for_it_stops_with_its_launcher(tmp_path, capsys):
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / ".submitit" / str(job.pid)).mkdir(parents=True)
        (tmp_path / ".submitit" / "%j").mkdir()  # submitit's folder pattern itself: no job
        assert job_ids(tmp_path) == [str(job.pid)]
        assert wait_for_other_jobs(tmp_path, LOCAL, poll_s=0.05) == [] and capsys.readouterr().err == ""
        assert job.poll() is None
    finally:
        job.kill()


def test_no_submitit_folder_no_wait(tmp_path):
    assert wait_for_other_jobs(tmp_path / "none", "x.SlurmLauncher") == []
