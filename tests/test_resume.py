"""Resume continues the same run, bit for bit; kills at any instant never leave a bad latest checkpoint."""

import json
import logging
import os
import pickle
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import run_pilot
from safetensors.torch import load_file, save_file

from pilot.checkpoint import (
    Checkpointer,
    UnsafeCheckpointError,
    latest_valid_checkpoint,
    list_checkpoints,
    load_checkpoint,
    restore_training_state,
    safe_load,
)
from pilot.closing import export_with_controls, reload_and_compare
from pilot.engine.build import build_trainer
from pilot.phases.resume_check import compare, noise_control, trajectory

TRAIN = [  # run.threads pinned: the default reads the machine's load, and every run here is compared bit for bit
    "mode=train",
    "run.threads=1",
    "budget.value=10",
    "checkpoint.every=2",
    "closing.control_examples=0",
    "+experiment=classification",
    "budget.fixed=updates",
    "batch.micro_batch=8",
]


def run_cli(run_dir, *overrides, fault=None):
    return run_pilot(run_dir, *TRAIN, *overrides, fault=fault, timeout=300)


def final_model(run_dir):
    path, state = latest_valid_checkpoint(Path(run_dir) / "checkpoints")
    return state["position"]["updates_done"], state["model"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    assert run_cli(run_dir).returncode == 0
    return final_model(run_dir)


@pytest.mark.xdist_group("resume_uninterrupted")  # its module fixture computed once, on one worker
@pytest.mark.parametrize(
    "fault",
    [
        pytest.param("update@5", marks=pytest.mark.slow),
        "update@9",
        pytest.param("before_write@4", marks=pytest.mark.slow),  # nothing written yet: as update@9
        pytest.param("after_write@6", marks=pytest.mark.slow),  # a temporary file left, as before_rename@8
        "before_rename@8",
    ],
)
def test_kill_9_then_resume_equals_uninterrupted(tmp_path, uninterrupted, fault):
    killed = run_cli(tmp_path, fault=fault)
    assert killed.returncode == -9, killed.stderr[-1000:]
    # whatever the kill point, every file under a checkpoint name is complete and loadable
    for _, path in list_checkpoints(tmp_path / "checkpoints"):
        load_checkpoint(path)
    resumed = run_cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    updates, weights = final_model(tmp_path)
    reference_updates, reference = uninterrupted
    assert updates == reference_updates == 10
    assert all(torch.equal(weights[k], reference[k]) for k in reference)  # bit for bit
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "ok" and len(record["resumes"]) == 1
    if fault.startswith(("after_write", "before_rename")):  # a temporary file was left behind
        assert record["resumes"][0]["cleaned_temporary_files"]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows if r["kind"] == "train"] == list(range(1, 11))
    # the killed attempt left the phases it finished (each written as it ended); the resume's are attempt 2
    phases = pd.read_csv(tmp_path / "phases.csv")
    assert phases[phases["attempt"] == 1]["phase"].tolist() == ["build_model", "first_step"]
    assert set(phases["attempt"]) == {1, 2}


@pytest.mark.parametrize(
    "overrides, k_values, n",
    [
        # 1262 training digits / (64 x 4) = 4 full updates + 1 partial per epoch: k=5 is the boundary
        (["+experiment=classification", "batch.micro_batch=64", "batch.accumulation=4"], [1, 2, 4, 5, 6], 8),
        (["precision=fp16"], [1, 3], 4),  # the gradient scaler's state resumes too
    ],
)
def test_resume_equivalence_for_every_k(make_cfg, tmp_path, overrides, k_values, n):
    cfg = make_cfg(*overrides, "budget.fixed=updates", "budget.value=20")
    reference_trainer = build_trainer(cfg)
    reference = trajectory(reference_trainer, n)
    if "precision=fp16" in overrides:
        assert reference_trainer.scaler.is_enabled()
    for k in k_values:
        first = build_trainer(cfg)
        trajectory(first, k)
        path = Checkpointer(tmp_path / f"k{k}", cfg, keep_last=1).save(first)
        second = build_trainer(cfg)
        restore_training_state(second, load_checkpoint(path))
        resumed = trajectory(second, n)
        ok, reason = compare(
            reference[k:], resumed, reference_trainer.raw_model.state_dict(), second.raw_model.state_dict(), 0.0, 0.0
        )
        assert ok, f"k={k}: {reason}"
        if "precision=fp16" in overrides:
            assert second.scaler.get_scale() == reference_trainer.scaler.get_scale()


def test_resume_check_can_fail():
    ref = [{"update": 4, "lr": 1e-3, "loss": 2.0, "examples": [1, 2]}]
    weights = {"w": torch.zeros(2)}
    ok, _ = compare(ref, ref, weights, weights, 0.0, 0.0)
    assert ok
    for changed, word in (
        ({"lr": 2e-3}, "lr differs"),
        ({"examples": [2, 1]}, "different examples"),
        ({"loss": 2.0000001}, "loss differs"),
    ):
        ok, reason = compare(ref, [{**ref[0], **changed}], weights, weights, 0.0, 0.0)
        assert not ok and word in reason
    ok, reason = compare(ref, ref, weights, {"w": torch.tensor([0.0, 1e-9])}, 0.0, 0.0)
    assert not ok and "final parameters differ" in reason


def test_corrupt_newest_checkpoint_falls_back_with_a_warning(make_cfg, tmp_path, caplog):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    for _ in range(3):
        trainer.train_step()
        Checkpointer(tmp_path, cfg, keep_last=3).save(trainer)
    newest = tmp_path / "ckpt-00000003.pt"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # truncated
    (tmp_path / "ckpt-00000002.pt").write_bytes(b"garbage")  # corrupt
    with caplog.at_level(logging.WARNING, logger="pilot"):
        path, state = latest_valid_checkpoint(tmp_path)
    assert path.name == "ckpt-00000001.pt" and state["position"]["updates_done"] == 1
    assert "ckpt-00000003.pt is unreadable" in caplog.text and "ckpt-00000002.pt is unreadable" in caplog.text


def test_a_resume_past_a_corrupt_checkpoint_names_it_in_the_record(tmp_path, uninterrupted):
    assert run_cli(tmp_path, fault="update@5").returncode == -9  # checkpoints of updates 4 and 2 kept
    newest = tmp_path / "checkpoints" / "ckpt-00000004.pt"
    newest.write_bytes(newest.read_bytes()[:100])  # cut by a disk, a copy, a kill in an earlier version
    resumed = run_cli(tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    resume = json.loads((tmp_path / "run.json").read_text())["resumes"][-1]
    assert resume["from_update"] == 2 and resume["checkpoint"] == "ckpt-00000002.pt"
    assert [s.split(":")[0] for s in resume["skipped_checkpoints"]] == ["ckpt-00000004.pt"]
    updates, model = final_model(tmp_path)
    assert updates == uninterrupted[0] and all(torch.equal(model[k], uninterrupted[1][k]) for k in model)


def test_rotation_keeps_the_last_k(make_cfg, tmp_path):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    for _ in range(5):
        trainer.train_step()
        Checkpointer(tmp_path, cfg, keep_last=2).save(trainer)
    assert [u for u, _ in list_checkpoints(tmp_path)] == [5, 4]


def test_resume_under_another_config_is_refused_naming_the_keys(tmp_path):
    assert run_cli(tmp_path, fault="update@5").returncode == -9  # an unfinished run (a finished one is never resumed)
    before = (tmp_path / "run.json").read_text()
    refused = run_cli(tmp_path, "optim.lr=0.05", "seed=3", "checkpoint.force_resume=true")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "optim.lr: checkpoint 0.003 != now 0.05" in refused.stderr
    assert "seed: checkpoint 0 != now 3" in refused.stderr and "cannot change on resume" in refused.stderr
    assert (tmp_path / "run.json").read_text() == before  # the earlier run's record is untouched
    unforced = run_cli(tmp_path, "loop.eval_every=3")  # a key that could take effect: only when forced
    assert unforced.returncode == 2 and "loop.eval_every: checkpoint 50 != now 3" in unforced.stderr
    assert "checkpoint.force_resume=true" in unforced.stderr
    assert (tmp_path / "run.json").read_text() == before
    forced = run_cli(tmp_path, "loop.eval_every=3", "checkpoint.force_resume=true")
    assert forced.returncode == 0, forced.stderr[-2000:]
    record = json.loads((tmp_path / "run.json").read_text())
    assert any("loop.eval_every" in d for d in record["resumes"][-1]["forced_despite"])


def test_closing_reload_passes_and_fails_when_the_export_is_tampered(make_cfg, tmp_path):
    cfg = make_cfg("+experiment=classification")
    trainer = build_trainer(cfg)
    trainer.train_step()
    export_with_controls(trainer.raw_model, trainer.task, cfg, tmp_path)
    assert reload_and_compare(tmp_path)["verdict"] == "pass"
    weights = load_file(str(tmp_path / "model.safetensors"))
    name = list(weights)[-1]  # the output layer's bias: it reaches every control output
    weights[name] = weights[name].clone()
    weights[name].view(-1)[0] += 1e-3  # one weight changed
    save_file(weights, str(tmp_path / "model.safetensors"))
    result = reload_and_compare(tmp_path)
    assert result["verdict"] == "fail" and "differs on the control inputs" in result["reason"]


class Malicious:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


MARKER = Path("/tmp/pilot-malicious-marker")


def test_pickle_that_would_run_code_is_refused_and_never_runs(tmp_path):
    MARKER.unlink(missing_ok=True)
    path = tmp_path / "ckpt-00000001.pt"
    with path.open("wb") as handle:
        pickle.dump({"format": "pilot-checkpoint-v1", "model": Malicious()}, handle)
    torch.save({"format": "pilot-checkpoint-v1", "payload": Malicious()}, tmp_path / "ckpt-00000002.pt")
    for name in ("ckpt-00000001.pt", "ckpt-00000002.pt"):
        with pytest.raises(UnsafeCheckpointError, match="refused"):
            safe_load(tmp_path / name)
    with pytest.raises(UnsafeCheckpointError):
        latest_valid_checkpoint(tmp_path)  # refused outright, not skipped quietly
    assert not MARKER.exists()


def test_train_run_closes_with_export_reload_and_reproduce(tmp_path):
    completed = run_cli(tmp_path, "closing.control_examples=4")
    assert completed.returncode == 0, completed.stderr[-2000:]
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["closing"]["verdict"] == "pass" and "bit-identical" in record["closing"]["reason"]
    assert (tmp_path / "export" / "model.safetensors").exists()
    assert "python -m pilot" in (tmp_path / "REPRODUCE.md").read_text()
    assert "the resolved config is `config.yaml`" in (tmp_path / "REPRODUCE.md").read_text()
    assert (tmp_path / "config.yaml").is_file()
    assert record["code_revision"]["commit"]


def test_a_forced_resume_may_resplit_an_update_only_when_its_examples_stay(make_cfg, tmp_path):
    """micro-batch x accumulation x replicas is the update; another split of it may be forced, another
    update never."""
    from pilot.errors import ResumeRefused
    from pilot.resume import refuse_changed_config
    from pilot.variant import defining_config

    state = {"defining_config": defining_config(make_cfg("batch.micro_batch=2", "batch.accumulation=8"))}
    resplit = make_cfg("batch.micro_batch=4", "batch.accumulation=4", "checkpoint.force_resume=true")
    assert sorted(d.split(":")[0] for d in refuse_changed_config(resplit, tmp_path / "c.pt", state)) == [
        "batch.accumulation",
        "batch.micro_batch",
    ]
    bigger = make_cfg("batch.micro_batch=4", "batch.accumulation=8", "checkpoint.force_resume=true")
    with pytest.raises(ResumeRefused, match="cannot change on resume"):
        refuse_changed_config(bigger, tmp_path / "c.pt", state)


def test_an_adapter_cannot_be_forced_onto_a_resumed_run(make_cfg, tmp_path):
    """Its weights live in the checkpoint (or do not): a forced resume with adapter=lora used to crash
    restoring them, after run.json had recorded a resume 'forced despite adapter.*' that never ran."""
    from pilot.errors import ResumeRefused
    from pilot.resume import refuse_changed_config
    from pilot.variant import defining_config

    state = {"defining_config": defining_config(make_cfg("model=hf_causal_lm"))}
    forced = make_cfg("model=hf_causal_lm", "adapter=lora", "checkpoint.force_resume=true")
    with pytest.raises(ResumeRefused, match="adapter.r"):
        refuse_changed_config(forced, tmp_path / "c.pt", state)


def test_a_task_that_encodes_other_data_in_another_process_is_named_by_the_resume_check(make_cfg):
    """Class ids from list(set(names)) differ with PYTHONHASHSEED, so the resumed process trained on other
    labels and the check said only "loss differs at update(s) [4, 5, 6]". What each process encodes is
    now compared first, naming the example and the key."""
    import dataclasses

    from hydra.utils import instantiate

    from pilot.data.digest import encoded_digests, first_difference

    task = instantiate(make_cfg("+experiment=classification").data, _convert_="all")
    here = encoded_digests(task.encoded("train"))
    assert first_difference(here, encoded_digests(task.encoded("train"))) is None  # the same task: the same encoding
    relabelled = dataclasses.replace(task, encode=lambda e: {**task.encode(e), "label": 9 - task.encode(e)["label"]})
    said = first_difference(here, encoded_digests(relabelled.encoded("train")))
    assert said is not None and said.endswith("differs in label"), said


def test_a_resume_is_judged_against_the_trainings_own_noise_only_when_there_is_some():
    """noise_control: a second uninterrupted run (the control) bit-identical to the first leaves the
    difference to the resume (fail); a noisy one allows 10x its distance (warn), not more (fail)."""

    def run(*losses, weight=0.0):
        rows = [{"update": u, "lr": 1e-3, "loss": loss, "examples": [u]} for u, loss in enumerate(losses, 1)]
        return rows, {"w": torch.tensor([1.0 + weight])}

    reference = run(2.0, 1.5, 1.2, 1.0)
    resumed = run(1.2 + 3e-7, 1.0 + 3e-7, weight=2e-7)
    resumed = (
        [{**row, "update": row["update"] + 2, "examples": [row["update"] + 2]} for row in resumed[0]],
        resumed[1],
    )
    verdict, reason = noise_control(reference, reference, resumed, 2, "diverges")
    assert verdict == "fail" and "bit-identical to the first: the difference is the resume's" in reason
    noisy = run(2.0, 1.5 + 1e-7, 1.2 + 1e-7, 1.0 - 1e-7, weight=1e-7)
    verdict, reason = noise_control(reference, noisy, resumed, 2, "diverges")
    assert verdict == "warn" and "not bit-reproducible" in reason and "3e-07" in reason, reason
    far = ([{**row, "loss": row["loss"] + 1e-5} for row in resumed[0]], resumed[1])
    verdict, reason = noise_control(reference, noisy, far, 2, "diverges")
    assert verdict == "fail" and "beyond the training's own noise" in reason, reason
    other_lr = ([{**row, "lr": 2e-3} for row in resumed[0]], resumed[1])
    verdict, reason = noise_control(reference, noisy, other_lr, 2, "diverges")
    assert verdict == "fail" and "learning rates differ" in reason, reason
    # a control whose losses repeat the reference's exactly while its parameters do not (it happened in
    # CI: every loss the resumed run moved by 3e-8 was "beyond"): the noise is one float32 rounding at least
    same_losses = run(2.0, 1.5, 1.2, 1.0, weight=2.4e-7)
    close = ([{**row, "loss": row["loss"] + 3e-8} for row in resumed[0]], resumed[1])
    verdict, reason = noise_control(reference, same_losses, close, 2, "diverges")
    assert verdict == "warn" and "at least one float32 rounding step" in reason, reason
    verdict, reason = noise_control(reference, same_losses, far, 2, "diverges")  # 1e-5 in a loss of 2: still fails
    assert verdict == "fail", reason


def test_a_task_drawing_from_a_generator_of_its_own_is_named_not_blamed_on_kernels(make_cfg):
    """An MLM whose collate masked with a module-level torch.Generator got a resume_check warn blaming
    "kernels whose sums change order": two uninterrupted runs from the same seed differed because the
    task's generator went on, not the arithmetic. The collated tensors of each update are compared
    first; the warning names the task's own generator and the keys it changed."""
    import dataclasses

    cfg = make_cfg("+experiment=classification", "run.threads=1", "budget.fixed=updates", "budget.value=20")

    def runs(noisy: bool) -> list:
        own = torch.Generator().manual_seed(0)  # one per task, as at module level: it goes on across runs
        found = []
        for _ in range(3):  # reference, control, resumed (its last rows)
            trainer = build_trainer(cfg)
            task = trainer.task
            if noisy:
                draw = task.collate

                def collate(items, draw=draw):
                    batch = draw(items)
                    return {**batch, "inputs": batch["inputs"] + 0.1 * torch.rand(batch["inputs"].shape, generator=own)}

                trainer.task = dataclasses.replace(task, collate=collate)
            found.append((trajectory(trainer, 4), {k: v.clone() for k, v in trainer.raw_model.state_dict().items()}))
        reference, control, resumed = found
        return reference, control, (resumed[0][2:], resumed[1])

    reference, control, resumed = runs(noisy=True)
    verdict, reason = noise_control(reference, control, resumed, 2, "diverges")
    assert verdict == "warn" and "a generator of its own" in reason and "update 1: inputs" in reason, reason
    assert "kernels" not in reason, reason
    reference, control, resumed = runs(noisy=False)  # the seeded task: every run the same, bit for bit
    assert reference[0] == control[0] and reference[0][2:] == resumed[0]


def test_a_resumed_runs_peak_memory_is_the_highest_of_its_attempts(tmp_path):
    """run.json's peak_memory after a resume held the last attempt's alone: a run whose first attempt
    peaked higher was recorded (and recapped, and sized) at the lower peak."""
    failed = run_pilot(tmp_path, *TRAIN, "checkpoint.every=2", fault="exception@3")
    assert failed.returncode != 0, failed.stderr[-2000:]
    record = json.loads((tmp_path / "run.json").read_text())
    first = record["peak_memory"]["rss_peak_bytes"]
    record["peak_memory"]["rss_peak_bytes"] = first * 100  # as if the first attempt had peaked far higher
    (tmp_path / "run.json").write_text(json.dumps(record))
    resumed = run_pilot(tmp_path, *TRAIN, "checkpoint.every=2")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    final = json.loads((tmp_path / "run.json").read_text())
    assert final["status"] == "ok" and final["resumes"] and final["peak_memory"]["rss_peak_bytes"] == first * 100


def test_a_resume_forced_over_another_budget_trains_its_first_update_at_the_new_schedule(tmp_path):
    """Forced from budget 30 to 60 at update 20: update 21 trained at the 30-update schedule's lr while the
    record said the new schedule took effect from update 21; update 22 was the first at the new one."""
    from omegaconf import OmegaConf

    from pilot.engine.optim import lr_factor

    line = ["mode=train", "checkpoint.every=10", "loop.eval_every=0", "closing.control_examples=0", "run.threads=1"]
    assert run_pilot(tmp_path, *line, "budget.value=30", fault="update@25", timeout=300).returncode == -9
    forced = run_pilot(tmp_path, *line, "budget.value=60", "checkpoint.force_resume=true", timeout=300)
    assert forced.returncode == 0, forced.stderr[-2000:]
    record = json.loads((tmp_path / "run.json").read_text())
    resumed = record["resumes"][-1]
    first = resumed["takes_effect_from_update"]
    optim = OmegaConf.load(tmp_path / "config.yaml").optim
    rows = [json.loads(r) for r in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    used = {r["update"]: r["lr"] for r in rows if r.get("kind") == "train"}
    for update in (first, first + 1):
        assert update > optim.warmup_updates  # after the warmup, where the two schedules differ
        factor = lr_factor(update - 1, 60, optim.warmup_updates, str(optim.schedule), optim.min_lr_ratio)
        assert used[update] == pytest.approx(optim.lr * factor, rel=1e-12), (update, used[update])


def test_a_data_file_edited_between_a_kill_and_its_resume_is_refused(tmp_path):
    """The data file's first half kept and its answers reversed, then the same command: it resumed without a
    word, its record claiming the 573-example plan for updates that trained on 287."""
    import shutil

    data = tmp_path / "data.jsonl"
    shutil.copy(Path(__file__).resolve().parents[1] / "pilot" / "data" / "instructions.jsonl", data)
    run = tmp_path / "run"
    line = ["mode=train", "checkpoint.every=2", "loop.eval_every=0", "closing.control_examples=0", "run.threads=1"]
    assert run_pilot(run, *line, "budget.value=10", f"data.path={data}", fault="update@5").returncode == -9
    before = (run / "run.json").read_text()
    lines = data.read_text().splitlines()
    data.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    again = run_pilot(run, *line, "budget.value=10", f"data.path={data}")
    assert again.returncode == 2 and "Traceback" not in again.stderr, again.stderr[-2000:]
    assert f"data.path={data}: the file's content differs from what the updates in " in again.stderr
    assert (run / "run.json").read_text() == before


def test_a_checkpoint_whose_bytes_changed_after_the_save_is_skipped_for_the_one_before(tmp_path, make_cfg):
    """Bits of a tensor flipped inside ckpt-4 (the zip still valid): it loaded and trained on without a
    word. Its CRC-32 now says so and the resume falls back to ckpt-2."""
    cfg = make_cfg("+experiment=classification", "batch.micro_batch=8")
    trainer = build_trainer(cfg)
    checkpointer = Checkpointer(tmp_path, cfg, keep_last=3)
    for _ in range(4):
        trainer.train_step()
        if trainer.updates_done % 2 == 0:
            checkpointer.save(trainer)
    newest = tmp_path / "ckpt-00000004.pt"
    data = bytearray(newest.read_bytes())
    at = data.find(b"data/0") + 200  # inside the first tensor's bytes, past its header
    data[at] ^= 0x40
    newest.write_bytes(bytes(data))
    path, state = latest_valid_checkpoint(tmp_path)
    assert path.name == "ckpt-00000002.pt" and state["position"]["updates_done"] == 2


def test_a_word_setting_that_matches_a_folder_is_not_a_data_file(make_cfg, tmp_path, monkeypatch):
    """data.split.salt=pilot named the repository's pilot/ folder (the working directory's): every edit of
    pilot's code refused the resume as 'another data set'. Words stay words; paths and files are read."""
    from pilot.data.data_files import data_files_fingerprint

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pilot").mkdir()
    (tmp_path / "corpus").mkdir()
    (tmp_path / "notes").write_text("a file named without a suffix")
    cfg = make_cfg("data.split.salt=pilot", "+data.words=corpus", "+data.folder=./corpus", "+data.notes=notes")
    assert set(data_files_fingerprint(cfg)) == {"data.folder", "data.notes"}


def test_rows_the_checkpoint_holds_but_metrics_lacks_are_named_and_a_row_twice_is_set_aside(tmp_path):
    from pilot.resumed_metrics import set_aside_metrics_after

    rows = [{"kind": "train", "update": u, "loss": 1.0} for u in [*range(1, 21), 5, *range(31, 36)]]
    rows.insert(10, {"kind": "val", "update": 10, "loss": 2.0})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert set_aside_metrics_after(tmp_path, 30) == "21-30"  # cut by hand, lost at a power failure
    kept = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in kept if r["kind"] == "train"] == list(range(1, 21))  # each update once
    aside = [json.loads(line)["update"] for line in (tmp_path / "metrics.discarded.jsonl").read_text().splitlines()]
    assert aside == [5, 31, 32, 33, 34, 35]
    (tmp_path / "metrics.jsonl").unlink()
    assert set_aside_metrics_after(tmp_path, 3) == "1-3"


def test_a_resume_records_the_rows_metrics_lost_and_claims_no_gap_where_none_is(tmp_path):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    for run_dir in (whole, cut):
        assert run_cli(run_dir, fault="update@7").returncode == -9  # checkpoint of update 6
    lines = (cut / "metrics.jsonl").read_text().splitlines(keepends=True)
    (cut / "metrics.jsonl").write_text("".join(lines[:3]))  # updates 1-3 kept: 4-6 lost since
    for run_dir, gap in ((whole, None), (cut, "4-6")):
        done = run_cli(run_dir)
        assert done.returncode == 0, done.stderr[-2000:]
        resumed = json.loads((run_dir / "run.json").read_text())["resumes"][-1]
        assert resumed["from_update"] == 6 and resumed.get("metrics_missing_updates") == gap, resumed
        assert ("lacks the training rows of update(s) 4-6" in done.stdout + done.stderr) == (gap is not None)


@pytest.mark.slow  # 23 s; the default suite: a full disk writing the export (test_records.py), closed again
def test_a_file_where_the_export_goes_stops_the_closing_in_one_message_and_the_run_resumes(tmp_path):
    """A file put where the run writes export/ (while it trained): after every update the closing ended in
    Hydra's "Error executing job" and a FileExistsError traceback."""
    line = [o for o in TRAIN if not o.startswith("closing.")] + ["closing.control_examples=4"]
    failed = run_pilot(tmp_path, *line, fault="exception@3")
    assert failed.returncode != 0, failed.stderr[-2000:]
    (tmp_path / "export").write_text("garbage\n")
    blocked = run_pilot(tmp_path, *line)
    assert blocked.returncode == 2 and "Traceback" not in blocked.stderr, blocked.stderr[-3000:]  # as AccessDenied
    assert f"{tmp_path / 'export'} is a file where the run writes a directory" in blocked.stderr
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["status"] == "failed" and record["stop_cause"] == "file_in_the_way"
    (tmp_path / "export").unlink()
    (tmp_path / "export" / "model.safetensors").mkdir(parents=True)  # the other way round: a directory (a traceback)
    blocked = run_pilot(tmp_path, *line)
    assert blocked.returncode == 2 and "Traceback" not in blocked.stderr, blocked.stderr[-3000:]
    assert "model.safetensors is a directory where the run writes a file" in blocked.stderr
    (tmp_path / "export" / "model.safetensors").rmdir()
    resumed = run_pilot(tmp_path, *line)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "ok"


def test_a_resumed_runs_time_per_update_is_every_attempts(tmp_path):
    """Killed after update 9 of 10 and resumed: run.json's seconds_per_update was the last attempt's alone,
    null for its single update, while the first attempt's eight timed updates were in metrics.jsonl."""
    assert run_cli(tmp_path, "checkpoint.every=1", fault="update@9").returncode == -9
    assert run_cli(tmp_path).returncode == 0
    record = json.loads((tmp_path / "run.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    firsts = {1, record["resumes"][-1]["from_update"] + 1}  # each attempt's first update holds its warm-up
    timed = [row["seconds"] for row in rows if row["kind"] == "train" and row["update"] not in firsts]
    assert len(timed) == 8 and record["seconds_per_update"] == pytest.approx(sum(timed) / len(timed))


def test_a_resume_under_another_non_defining_setting_records_its_own_line(tmp_path):
    """Resumed with run.threads=2: run.json kept the first attempt's overrides (run.threads=1) alone, while
    config.yaml, config_hash and the updates after the resume said 2."""
    assert run_cli(tmp_path, fault="update@5").returncode == -9
    line = [o if o != "run.threads=1" else "run.threads=2" for o in TRAIN]
    assert run_pilot(tmp_path, *line, timeout=300).returncode == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert "run.threads=1" in record["overrides"]  # the variant's line, as it started
    assert "run.threads=2" in record["resumes"][-1]["overrides"] and "overrides_before" not in record["resumes"][-1]


def test_a_data_folders_readme_is_no_other_data_and_an_earlier_checkpoints_every_file_fingerprint_is_read(
    make_cfg, tmp_path, monkeypatch
):
    """A README written into a folder the data settings name (data.tokenizer beside model.path, the usual
    layout) refused a resume as another data set; a file programs read still does; a checkpoint that
    fingerprinted every file (an earlier pilot) is compared as it was taken."""
    import shutil

    from pilot.data.data_files import data_files_fingerprint
    from pilot.resume import ResumeRefused
    from pilot.resume_files import refuse_changed_data

    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "vocab.txt").write_text("a\nb\n")
    (tmp_path / "corpus" / "README.md").write_text("notes")
    cfg = make_cfg("+data.folder=./corpus")
    saved, older = data_files_fingerprint(cfg), data_files_fingerprint(cfg, every_file=True)
    assert saved != older  # the README: in the earlier fingerprint, not in this one
    (tmp_path / "corpus" / "README.md").write_text("other notes")
    (tmp_path / "corpus" / ".cache").mkdir()
    (tmp_path / "corpus" / ".cache" / "x").write_text("download metadata")
    refuse_changed_data(cfg, tmp_path, {"data_files": saved}, {"data_files": data_files_fingerprint(cfg)})
    shutil.rmtree(tmp_path / "corpus" / ".cache")
    (tmp_path / "corpus" / "README.md").write_text("notes")  # as the earlier checkpoint took it: every file
    refuse_changed_data(cfg, tmp_path, {"data_files": older}, {"data_files": data_files_fingerprint(cfg)})
    (tmp_path / "corpus" / "vocab.txt").write_text("a\nc\n")
    for state in ({"data_files": saved}, {"data_files": older}):
        with pytest.raises(ResumeRefused, match="data.folder=./corpus: the file's content differs"):
            refuse_changed_data(cfg, tmp_path, state, {"data_files": data_files_fingerprint(cfg)})


def test_a_data_folder_filled_while_the_task_loads_is_kept_as_after_the_build(make_cfg, monkeypatch):
    """A task may fill a cache folder its data settings name while it loads: the build keeps the data files'
    fingerprint taken after it (a resume finds the folder so before its build), and refuses nothing."""
    import pilot.engine.build as build

    taken = iter([{"data.cache": "empty"}, {"data.cache": "filled"}])
    monkeypatch.setattr(build, "data_files_fingerprint", lambda cfg: next(taken))
    cfg = make_cfg("+experiment=classification", "batch.micro_batch=8")
    trainer = build.build_trainer(cfg)
    assert trainer.files_read["data_files"] == {"data.cache": "filled"}


def test_your_code_is_compared_by_content_and_a_forced_resume_records_the_change():
    """The fingerprint of your modules (``resume_files.changed_code``): an edit refuses the resume naming the file;
    the same content under another path (the project moved) is the same code; forced, the change is returned for
    the resume's record."""
    from omegaconf import OmegaConf

    from pilot.errors import ResumeRefused
    from pilot.resume_files import changed_code

    cfg, forced = (OmegaConf.create({"checkpoint": {"force_resume": force}}) for force in (False, True))
    state, here = {"user_code": {"/a/task.py": "x"}}, Path("/run/checkpoints/ckpt-00000006.pt")
    assert changed_code(cfg, here, state, {"user_code": {"/b/task.py": "x"}}) == []
    with pytest.raises(
        ResumeRefused, match=r"your code changed since the updates in .*: task.py \(/a/task.py\): the run"
    ):
        changed_code(cfg, here, state, {"user_code": {"/a/task.py": "y"}})
    with pytest.raises(ResumeRefused, match="not on the import path: PYTHONPATH"):
        changed_code(cfg, here, state, {})
    edited = changed_code(forced, here, state, {"user_code": {"/a/task.py": "y"}})
    assert edited == [{"file": "/a/task.py", "sha256_before": "x", "sha256_now": "y"}]


def test_a_split_change_that_changes_the_examples_per_update_names_the_accumulation_that_keeps_them(make_cfg):
    """A ddp2 checkpoint (2 x 8 x 2 = 32 per update) resumed as one replica was refused naming only a new
    directory or the old values; batch.accumulation=16 with force_resume continues it (an examination)."""
    from pilot.errors import PilotError
    from pilot.resume import defining_config, refuse_changed_config

    state = {"defining_config": defining_config(make_cfg("distributed=ddp2"))}
    with pytest.raises(PilotError, match=r"keep the checkpoint's 32 examples per update: batch.accumulation=16"):
        refuse_changed_config(make_cfg("checkpoint.force_resume=true"), Path("ckpt.pt"), state)
    assert refuse_changed_config(
        make_cfg("checkpoint.force_resume=true", "batch.accumulation=16"), Path("ckpt.pt"), state
    )  # the split changed, the examples per update kept: goes on, its differences recorded


def test_a_forced_resume_in_a_new_directory_says_nothing_was_resumed(tmp_path, make_cfg, caplog):
    """checkpoint.force_resume=true (or continue_diverged) on a directory with no run: a new run started and
    nothing said that the flag was not read (outside examination)."""
    from pilot.resume import find_resume_state

    for flags in (["checkpoint.force_resume=true"], ["checkpoint.continue_diverged=true"], []):
        cfg = make_cfg("mode=train", *flags)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="pilot"):
            state, note = find_resume_state(cfg, Checkpointer(tmp_path / "new", cfg), tmp_path / "new", True)
        assert state is None and note == {}
        said = [r.getMessage() for r in caplog.records if "holds no run to resume" in r.getMessage()]
        assert len(said) == (1 if flags else 0) and all(f.split("=")[0] in said[0] for f in flags), said
