"""The launch's other jobs, waited for before the recap when submitit gave up on one (pilot/other_jobs.py):
the sweep recapped them 'running' and exited while they went on (a SLURM job cancelled with scancel)."""

import subprocess
import sys
import time

from pilot.other_jobs import job_ids, wait_for_other_jobs

LOCAL = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher"


def test_a_local_job_still_running_is_waited_for(tmp_path, capsys):
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    (tmp_path / ".submitit" / str(job.pid)).mkdir(parents=True)
    (tmp_path / ".submitit" / "%j").mkdir()  # submitit's folder pattern itself: no job
    started = time.monotonic()
    assert wait_for_other_jobs(tmp_path, LOCAL, poll_s=0.05) == []
    assert time.monotonic() - started >= 1.0 and job.poll() is not None
    assert f"still queued or running ({job.pid})" in capsys.readouterr().err


def test_jobs_that_ended_are_not_waited_for(tmp_path, capsys):
    job = subprocess.Popen([sys.executable, "-c", "pass"])
    job.wait()
    (tmp_path / ".submitit" / str(job.pid)).mkdir(parents=True)
    assert job_ids(tmp_path) == [str(job.pid)]
    assert wait_for_other_jobs(tmp_path, LOCAL) == [] and capsys.readouterr().err == ""
    assert wait_for_other_jobs(tmp_path / "none", LOCAL) == []
