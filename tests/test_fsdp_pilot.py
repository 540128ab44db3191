"""Issue 15 item 6: the pilot under FSDP. Every rank measures its phases (its rows in phases.csv), the
checkpoint phase writes each rank's shards, rank 0 exports and reloads the gathered model, the resume
check resumes as the same number of ranks in new processes (and fails when the saved state is
tampered with), and the estimate step checks the per-rank estimate against rank 0 of the real ranks."""

from __future__ import annotations

import csv
import json

from _ddp_helpers import resume_check_and_save
from conftest import run_pilot

from pilot.engine.distributed import spawn

FSDP = ["distributed=fsdp", "distributed.replicas=2", "run.device=cpu", "run.threads=1"]


def test_the_pilot_under_fsdp_runs_every_phase_on_every_rank_and_passes(tmp_path):
    result = run_pilot(tmp_path, *FSDP)
    assert result.returncode == 0, result.stderr[-3000:]
    checks = {c["step"]: c for c in json.loads((tmp_path / "checks.json").read_text())}
    assert all(c["verdict"] == "pass" for c in checks.values()), checks
    assert "estimate within" in checks["estimate"]["reason"]  # the fake ranks vs rank 0 of the real ones
    with (tmp_path / "phases.csv").open() as handle:
        rows = {(r["phase"], r["rank"]): r for r in csv.DictReader(handle)}
    phases = {phase for phase, _ in rows}
    assert {(phase, rank) for phase in phases for rank in ("0", "1")} == set(rows)  # every rank, every phase
    assert all(r["verdict"] == "pass" for (phase, rank), r in rows.items() if (phase, rank) != ("reload_check", "1"))
    assert "__1_0.distcp" in rows[("checkpoint_save", "1")]["detail"]
    assert sorted(p.name for p in (tmp_path / "checkpoints" / "pilot" / "ckpt-00000006.dcp").glob("*.distcp")) == [
        "__0_0.distcp",
        "__1_0.distcp",
    ]
    assert "bit-identical" in rows[("resume_check", "0")]["detail"]
    assert "as 2 ranks of a new process group" in rows[("resume_check", "0")]["detail"]


def test_the_fsdp_resume_check_fails_when_the_saved_schedule_is_tampered(tmp_path, make_cfg):
    cfg = make_cfg("distributed=fsdp", "distributed.replicas=2", "run.device=cpu", "run.threads=1")
    spawn(resume_check_and_save, (cfg, str(tmp_path), True), 2)
    verdict, reason = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict == "fail" and "lr differs" in reason, reason
