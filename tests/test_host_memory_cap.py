"""A CPU run's host memory cap (pilot/host_memory_cap.py): an allocation past what the host has is
refused and recorded as out of memory, instead of the kernel's OOM killer ending the run unrecorded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pilot.errors import out_of_memory_line
from pilot.pilot_run import _guarded

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA is Linux's")


def _in_a_new_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_allocation_past_the_room_is_refused_as_out_of_memory_and_a_smaller_one_is_not():
    out = _in_a_new_process(
        """
        import torch
        import pilot.host_memory_cap as cap
        from pilot.errors import out_of_memory
        cap.host_room = lambda: (2 * 1024**3, "MemAvailable")  # a host with 2 GiB free
        print(cap.cap_host_memory("cpu"))  # a library call: not capped
        cap.enable()  # as pilot's command line does
        record = cap.cap_host_memory("cpu")
        torch.empty(256 * 1024**2, dtype=torch.uint8).fill_(1)  # 256 MiB: within the room
        try:
            torch.empty(3 * 1024**3, dtype=torch.uint8)
        except RuntimeError as error:
            print("refused", out_of_memory(error), record["limit_bytes"] < 3 * 1024**3, "85%" in record["why"])
        else:
            print("allocated")
        """
    )
    assert out.splitlines() == ["None", "refused True True True"]


def test_a_lower_limit_already_set_is_kept_a_cuda_run_is_not_capped_and_the_run_end_releases_it():
    out = _in_a_new_process(
        """
        import resource
        import pilot.host_memory_cap as cap
        cap.enable()
        resource.setrlimit(resource.RLIMIT_DATA, (8 * 1024**3, resource.RLIM_INFINITY))
        print(cap.cap_host_memory("cuda"))
        cap.host_room = lambda: (1 << 50, "MemAvailable")
        record = cap.cap_host_memory("cpu")
        print(record["limit_bytes"] == 8 * 1024**3, "ulimit -d" in record["why"])
        resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        cap.release_host_memory_cap()
        cap.host_room = lambda: (2 * 1024**3, "MemAvailable")
        record = cap.cap_host_memory("cpu")  # the next run: its own cap
        print(resource.getrlimit(resource.RLIMIT_DATA)[0] == record["limit_bytes"] < 3 * 1024**3)
        cap.release_host_memory_cap()  # the limit before it is back
        print(resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY)
        """
    )
    assert out.splitlines() == ["None", "True True", "True", "True"]


def test_a_step_out_of_memory_fails_naming_the_size_and_the_fix_not_as_a_crash(tmp_path):
    def work():
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
            "you tried to allocate 44006400000 bytes. Error code 12 (Cannot allocate memory)"
        )

    result = _guarded("alignment", work, tmp_path)
    assert result.verdict == "fail"
    assert "out of memory: an allocation of 40.98 GiB was refused" in result.reason
    assert "batch.micro_batch" in result.reason and "crashed" not in result.reason
    assert not (tmp_path / "alignment.error.txt").exists()
    crashed = _guarded("alignment", lambda: 1 / 0, tmp_path)  # any other error is still a crash
    assert crashed.reason.startswith("crashed: ZeroDivisionError")
    assert out_of_memory_line(MemoryError()) == "MemoryError: MemoryError (no message)"


def test_a_training_run_out_of_host_memory_is_recorded_oom_and_said_in_one_paragraph(tmp_path):
    """A data-segment limit of 3 GiB (``ulimit -d``, kept by the cap) and a micro-batch whose logits need
    more: the allocation is refused, run.json says oom, the console one paragraph, no traceback."""
    import json
    import os
    import resource

    from tests.conftest import REPO_ROOT

    def three_gib() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (3 * 1024**3, resource.RLIM_INFINITY))

    run_dir = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "RANK", "WORLD_SIZE")}
    done = subprocess.run(
        [sys.executable, "-m", "pilot", "mode=train", "batch.micro_batch=512", "model.vocab_size=50000",
         "budget.value=2", "run.threads=1", f"hydra.run.dir={run_dir}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, preexec_fn=three_gib,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    assert "pilot: the run ran out of memory: an allocation of" in done.stderr and "batch.micro_batch" in done.stderr
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "oom" and record["host_memory_cap"]["limit_bytes"] == 3 * 1024**3
