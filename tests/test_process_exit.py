"""pilot.process_exit: a finished entry point ends without module teardown, but after what the
interpreter's own exit does first (atexit callbacks, flushed output, running threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT


def _run(code: str, tmp_path) -> subprocess.CompletedProcess:
    script = textwrap.dedent(code).replace("TMP", str(tmp_path))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_exit_now_runs_atexit_flushes_and_keeps_the_code(tmp_path):
    done = _run(
        """
        import atexit, sys
        from pilot.process_exit import exit_now
        atexit.register(lambda: open("TMP/atexit", "w").write("ran"))
        sys.stdout.write("unflushed line")
        exit_now(3)
        """,
        tmp_path,
    )
    assert done.returncode == 3
    assert done.stdout == "unflushed line"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_exit_now_waits_for_a_working_thread_by_exiting_normally(tmp_path):
    done = _run(
        """
        import threading, time
        from pilot.process_exit import exit_now
        def work():
            time.sleep(0.5)
            open("TMP/thread", "w").write("finished")
        threading.Thread(target=work).start()
        exit_now(4)
        """,
        tmp_path,
    )
    assert done.returncode == 4
    assert (tmp_path / "thread").read_text() == "finished"


def test_a_message_exits_one(tmp_path):
    from pilot.process_exit import exit_code_of

    assert exit_code_of(SystemExit("pilot: bad value")) == 1
    assert exit_code_of(SystemExit(None)) == 0
    assert exit_code_of(SystemExit(2)) == 2


def test_ctrl_c_while_python_m_pilot_imports_is_one_line_and_writes_nothing(tmp_path):
    """SIGINT half a second in (torch and Hydra still importing): one line and 130, not an import traceback."""
    import signal
    import time

    run = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "pilot", "mode=train", "budget.value=2", f"hydra.run.dir={run}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-2000:]
    assert "interrupted (SIGINT) while starting" in stderr and "Traceback" not in stderr
    assert not run.exists()


def test_a_training_job_never_imports_what_only_a_pilot_or_a_recap_needs(tmp_path):
    """A `mode=train` job's process (a sweep job under local_parallel or SLURM) pays its imports in its
    fixed cost: pandas (the report, the recap, the sheet's CSVs), matplotlib and rich are a pilot's or a
    recap's, ~0.3 s and more of each job's start (issue 17). Hydra imports the recap callback in every run."""
    seen = tmp_path / "modules.txt"
    script = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: open({str(seen)!r}, 'w').write(' '.join(sorted(sys.modules))))\n"
        f"sys.argv = ['pilot', 'mode=train', 'budget.value=2', 'hydra.run.dir={tmp_path / 'run'}']\n"
        "runpy.run_module('pilot', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(seen.read_text().split())
    assert "torch" in modules and "pilot.train" in modules  # the hook saw the job
    assert not modules & {"pandas", "matplotlib", "rich"}, sorted(modules & {"pandas", "matplotlib", "rich"})


def test_a_signal_while_the_atexit_callbacks_run_ends_the_process_without_a_traceback(tmp_path):
    """A second Ctrl-C that landed in torch._dynamo's atexit callback printed "Exception ignored in atexit
    callback" and a KeyboardInterrupt traceback after the run had recorded its interruption."""
    done = _run(
        """
        import atexit, os, signal, time
        from pilot.process_exit import exit_now
        def slow():
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the callbacks run
            time.sleep(5)
            open("TMP/finished", "w").write("the callback ran on")
        atexit.register(slow)
        exit_now(130)
        """,
        tmp_path,
    )
    assert done.returncode == 130 and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert not (tmp_path / "finished").exists()


def _submitit_job(tmp_path, result: bool, end: str = "") -> subprocess.CompletedProcess:
    """A process standing for submitit's job process after pilot's task returned: its result file written
    (``result``), an earlier ``atexit`` callback, a module global whose teardown writes a file, and then
    ``end`` (a statement: the exception submitit re-raises when the job failed)."""
    from submitit.core.utils import JobPaths

    folder = tmp_path / "submitit"
    folder.mkdir()
    if result:
        JobPaths(folder, job_id="7", task_id=0).result_pickle.write_bytes(b"submitit's result")
    env = {"SUBMITIT_FOLDER": str(folder), "SUBMITIT_EXECUTOR": "local", "SUBMITIT_LOCAL_JOB_ID": "7",
           "SUBMITIT_LOCAL_GLOBALID": "0", "SUBMITIT_LOCAL_NTASKS": "1", "SUBMITIT_LOCAL_JOB_NUM_NODES": "1",
           "SUBMITIT_LOCAL_NODEID": "0", "SUBMITIT_LOCAL_LOCALID": "0"}  # fmt: skip
    script = (
        textwrap.dedent(
            """
        import atexit, sys
        from pathlib import Path
        import pilot.process_exit as process_exit
        atexit.register(lambda: Path("TMP/atexit").write_text("ran"))
        class TornDown:
            def __del__(self):
                Path("TMP/teardown").write_text("ran")
        kept = TornDown()
        sys.modules["__main__"].__spec__ = type("Spec", (), {"name": process_exit.SUBMITIT_MAIN})()
        process_exit.leave_submitit_job_without_teardown()
        process_exit.leave_submitit_job_without_teardown()  # a second job in the process: registered once
        """
        ).replace("TMP", str(tmp_path))
        + end
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_a_submitit_job_whose_result_is_written_ends_without_teardown_after_the_other_callbacks(tmp_path):
    done = _submitit_job(tmp_path, result=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "atexit").read_text() == "ran" and not (tmp_path / "teardown").exists()


def test_a_submitit_job_that_failed_or_left_no_result_ends_as_python_ends_it(tmp_path):
    """A failed job (submitit re-raises its exception: traceback, exit 1), or one without a result."""
    for name, result, end, code in (
        ("failed", True, "raise RuntimeError('the job failed')", 1),
        ("none", False, "", 0),
    ):
        where = tmp_path / name
        where.mkdir()
        done = _submitit_job(where, result, end)
        assert done.returncode == code, done.stderr
        assert (where / "teardown").read_text() == "ran" and (where / "atexit").read_text() == "ran"
        assert ("the job failed" in done.stderr) == bool(end)
