"""Issue 15 item 3: FSDP checkpoints as shards on disk (``torch.distributed.checkpoint``), in one process.

``distributed=fsdp`` on one rank writes the same sharded format as N ranks (DCP without a process
group), so the format's guarantees are tested here in-process: what is in the directory, a bit-identical
resume, rotation and leftovers, a lost or cut shard falling back to the previous checkpoint, a full disk,
and planted files that would run code. Several ranks, kill -9 and another world size: test_fsdp_train.py.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import torch

from pilot.checkpoint import (
    STATE_FILE,
    Checkpointer,
    atomic_torch_save,
    latest_valid_checkpoint,
    list_checkpoints,
    load_checkpoint,
    restore_training_state,
    safe_load,
    training_state,
)
from pilot.engine.build import build_trainer
from pilot.engine.sharding import whole_training_state
from pilot.errors import DiskFull, UnsafeFileError
from pilot.phases.resume_check import compare, trajectory
from pilot.sharded_checkpoint import METADATA_FILE, load_into, read_whole

FSDP = ("distributed=fsdp", "+experiment=classification", "budget.fixed=updates", "budget.value=20")
MARKER = Path("/tmp/pilot-malicious-dcp-marker")


class Malicious:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


@pytest.fixture
def cfg(make_cfg):
    return make_cfg(*FSDP)


def saved(cfg, directory: Path, updates: int, keep_last: int = 3):
    trainer = build_trainer(cfg)
    for _ in range(updates):
        trainer.train_step()
        Checkpointer(directory, cfg, keep_last=keep_last).save(trainer)
    return trainer


def test_a_sharded_checkpoint_is_a_directory_of_shards_and_resumes_bit_for_bit(cfg, tmp_path):
    reference_trainer = build_trainer(cfg)
    reference = trajectory(reference_trainer, 5)
    first = build_trainer(cfg)
    trajectory(first, 2)
    path = Checkpointer(tmp_path, cfg).save(first)
    assert path.name == "ckpt-00000002.dcp" and path.is_dir()
    assert sorted(p.name for p in path.iterdir()) == [METADATA_FILE, "__0_0.distcp", STATE_FILE]
    state = safe_load(path / STATE_FILE)
    assert "model" not in state and "optimizer" not in state  # the tensors are in the shards only
    whole = read_whole(path)
    assert whole.keys() == first.raw_model.state_dict().keys()
    assert all(torch.equal(whole[k], v) for k, v in first.raw_model.state_dict().items())
    second = build_trainer(cfg)
    restore_training_state(second, load_checkpoint(path))
    resumed = trajectory(second, 5)
    ok, reason = compare(
        reference[2:], resumed, reference_trainer.raw_model.state_dict(), second.raw_model.state_dict(), 0.0, 0.0
    )
    assert ok, reason


def test_rotation_removes_directories_and_a_killed_saves_leftover_is_cleaned(cfg, tmp_path):
    saved(cfg, tmp_path, 4, keep_last=2)
    assert [u for u, _ in list_checkpoints(tmp_path)] == [4, 3]
    leftover = tmp_path / "ckpt-00000005.dcp.tmp-save"  # a save killed before its rename
    leftover.mkdir()
    (leftover / "__0_0.distcp").write_bytes(b"half")
    assert Checkpointer(tmp_path, cfg).clean_temporary_files() == [leftover.name]
    assert not leftover.exists() and [u for u, _ in list_checkpoints(tmp_path)] == [4, 3]


@pytest.mark.parametrize("damage", ["shard lost", "shard cut short", "metadata lost"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(cfg, tmp_path, caplog, damage):
    saved(cfg, tmp_path, 3)
    newest = tmp_path / "ckpt-00000003.dcp"
    shard = newest / "__0_0.distcp"
    if damage == "shard lost":
        shard.unlink()
    elif damage == "shard cut short":
        shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    else:
        (newest / METADATA_FILE).unlink()
    with caplog.at_level(logging.WARNING, logger="pilot"):
        path, state = latest_valid_checkpoint(tmp_path)
    assert path.name == "ckpt-00000002.dcp" and state["position"]["updates_done"] == 2
    assert "ckpt-00000003.dcp is unreadable" in caplog.text


def test_a_full_disk_during_a_sharded_save_keeps_the_previous_checkpoint(cfg, tmp_path, monkeypatch):
    trainer = saved(cfg, tmp_path, 2)
    trainer.train_step()
    monkeypatch.setenv("PILOT_FAULT", "enospc@3")
    with pytest.raises(DiskFull, match="no space left"):
        Checkpointer(tmp_path, cfg).save(trainer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-00000001.dcp", "ckpt-00000002.dcp"]
    assert latest_valid_checkpoint(tmp_path)[0].name == "ckpt-00000002.dcp"


def test_planted_metadata_that_would_run_code_is_refused_and_never_runs(cfg, tmp_path):
    MARKER.unlink(missing_ok=True)
    saved(cfg, tmp_path, 1)
    path = tmp_path / "ckpt-00000001.dcp"
    import pickle

    (path / METADATA_FILE).write_bytes(pickle.dumps(Malicious()))
    with pytest.raises(UnsafeFileError, match="posix.system|os.system"):
        latest_valid_checkpoint(tmp_path)  # refused outright, not skipped quietly
    assert not MARKER.exists()


def test_a_planted_value_in_a_shard_is_read_weights_only_and_never_runs(tmp_path):
    """DCP's own planner reads a non-tensor value with torch.load, weights_only off: pilot's does not."""
    from torch.distributed.checkpoint import FileSystemWriter, save

    MARKER.unlink(missing_ok=True)
    save({"payload": Malicious()}, storage_writer=FileSystemWriter(tmp_path))
    with pytest.raises(Exception, match="[Ww]eights only load failed|Unsupported global"):
        load_into({"payload": None}, tmp_path)
    assert not MARKER.exists()


def test_a_checkpoint_gathered_whole_by_an_earlier_pilot_still_resumes_bit_for_bit(cfg, tmp_path):
    """Before checkpoints were sharded, an FSDP run saved the whole model and optimizer (by parameter
    name) in one file: a run started with that version still resumes from it."""
    reference_trainer = build_trainer(cfg)
    reference = trajectory(reference_trainer, 4)
    first = build_trainer(cfg)
    trajectory(first, 2)
    state = training_state(first, cfg)
    state["model"], state["optimizer"] = whole_training_state(first.raw_model, first.optimizer, False)
    atomic_torch_save(state, tmp_path / "ckpt-00000002.pt")
    second = build_trainer(cfg)
    restore_training_state(second, load_checkpoint(tmp_path / "ckpt-00000002.pt"))
    resumed = trajectory(second, 4)
    ok, reason = compare(
        reference[2:], resumed, reference_trainer.raw_model.state_dict(), second.raw_model.state_dict(), 0.0, 0.0
    )
    assert ok, reason
