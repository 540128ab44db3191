"""Continuing a run in its directory: the one home of the resume.

1. ``pilot.finished_runs``: a run that ended is not trained again in its directory;
2. ``find_resume_state``: leftovers of an interrupted save are removed and the newest valid
   checkpoint is found; its config is compared with this one (``refuse_changed_config``): keys
   of FIXED_ON_RESUME never change, the others only with ``checkpoint.force_resume``;
3. ``open_record``: run.json records the resume (from which update, the config hash before and
   after, what was forced), and the metrics rows written after the checkpoint are set aside.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot import run_index
from pilot.checkpoint import Checkpointer
from pilot.config.values import enum_value
from pilot.engine.batch_plan import plan_from_config
from pilot.engine.build import read_fingerprints
from pilot.errors import ResumeRefused
from pilot.resume_files import changed_code, refuse_changed_base, refuse_changed_data
from pilot.resumed_metrics import logged_position, set_aside_metrics_after
from pilot.run_record import RunRecord, config_hash, index_roots, now_text, read_run_json
from pilot.variant import defining_config, variant_key

log = logging.getLogger("pilot")

# sections whose values live in the restored state (weights, optimizer and schedule, data order,
# precision, replicas): a resume cannot change them, even forced, without recording a setting it
# did not use. The others (budget, loop, memory, ...) can be forced and take effect from the resume.
FIXED_ON_RESUME = ("model", "adapter", "data", "batch", "optim", "precision", "distributed", "seed")


# how one update is split into ranks and micro-batches: the update itself (its examples, their order,
# the loss normalised over all of them) depends only on their product, so a forced resume may change
# the split when the product stays (e.g. 2 FSDP ranks resumed on 4); floats then differ in the last bits
UPDATE_SPLIT = (
    "distributed.replicas",
    "batch.accumulation",
    "batch.micro_batch",
    "distributed.backend",
    "distributed.master_port",
)


def fixed_on_resume(difference: str, same_update: bool = False) -> bool:
    """Whether a line of ``differing_keys`` names a key of FIXED_ON_RESUME (``same_update``: the
    examples per update are unchanged, so the keys of UPDATE_SPLIT are not fixed)."""
    key = difference.split(":", 1)[0]
    if same_update and key in UPDATE_SPLIT:
        return False
    return any(key == section or key.startswith(section + ".") for section in FIXED_ON_RESUME)


def examples_per_update(flat: dict[str, Any]) -> int | None:
    """micro-batch x accumulation x replicas of a flattened defining config."""
    try:
        return int(flat["batch.micro_batch"]) * int(flat["batch.accumulation"]) * int(flat["distributed.replicas"])
    except (KeyError, TypeError, ValueError):
        return None


def differing_keys(saved: dict[str, Any], current: dict[str, Any], label: str = "checkpoint") -> list[str]:
    """One line per defining key whose value differs between the checkpoint (``label``) and now."""
    return [
        f"{k}: {label} {saved.get(k, '<absent>')!r} != now {current.get(k, '<absent>')!r}"
        for k in sorted(set(saved) | set(current))
        if saved.get(k) != current.get(k)
    ]


def saved_config(run_dir: Path) -> dict[str, Any] | None:
    """The defining keys of the run's config.yaml; None when there is none to compare with: missing, or
    empty or unreadable (a process stopped while an earlier version wrote it in place)."""
    try:
        saved = OmegaConf.load(run_dir / "config.yaml")
    except Exception:  # noqa: BLE001 - missing, truncated, not YAML: no record of the config
        return None
    return defining_config(saved) if isinstance(saved, DictConfig) and len(saved) else None


def refuse_changed_config(cfg: DictConfig, path: Path, state: dict) -> list[str]:
    """The keys that differ from the checkpoint's config, when the resume may still go on."""
    saved, now = state["defining_config"], defining_config(cfg)
    differences = differing_keys(saved, now)
    same_update = examples_per_update(saved) is not None and examples_per_update(saved) == examples_per_update(now)
    fixed = [d for d in differences if fixed_on_resume(d, same_update)]
    if fixed:
        raise ResumeRefused(
            f"{path} was written under another config, and these keys cannot change on resume (their "
            "values live in the restored weights, optimizer, schedule, data order or precision; a "
            "record would claim a setting the run did not use):\n  "
            + "\n  ".join(fixed)
            + "\nFix: use a new run directory for the new values (leave out hydra.run.dir), or restore them."
            + _same_update_fix(saved, now, fixed)
        )
    if differences and not cfg.checkpoint.force_resume:
        raise ResumeRefused(
            f"{path} was written under another config; resuming would mix two runs. Differing keys:\n  "
            + "\n  ".join(differences)
            + "\nFix: use a new run directory, restore these values, or "
            "set checkpoint.force_resume=true to continue anyway (recorded in run.json)."
        )
    return differences


def _same_update_fix(saved: dict[str, Any], now: dict[str, Any], fixed: list[str]) -> str:
    """Where only the batch's split changed the examples per update: the accumulation that keeps them, with
    which a forced resume continues (``fixed_on_resume`` lets a split that keeps them change)."""
    before, after = examples_per_update(saved), examples_per_update(now)
    split = ("batch.micro_batch", "batch.accumulation", "distributed.replicas")
    if before is None or after is None or before == after or not all(line.startswith(split) for line in fixed):
        return ""
    per_pass = int(now["batch.micro_batch"]) * int(now["distributed.replicas"])
    if before % per_pass:
        return f" The checkpoint's updates hold {before} examples, these settings {after}."
    return (
        f" Or keep the checkpoint's {before} examples per update: batch.accumulation={before // per_pass} with "
        "checkpoint.force_resume=true continues the run over another split (recorded)."
    )


def find_resume_state(
    cfg: DictConfig, checkpointer: Checkpointer, run_dir: Path, is_main: bool, read: dict | None = None
) -> tuple[dict | None, dict]:
    """The newest valid checkpoint's state (or None) and what to record about the resume; ``read``: the files'
    fingerprints the run will keep (``read_fingerprints``), compared with the checkpoint's (else taken now)."""
    if not cfg.checkpoint.resume:
        return None, {}
    skipped: list[str] = []  # newer checkpoints that did not load: the record names them
    found = checkpointer.latest_valid(skipped)  # a leftover never has a checkpoint's name (``clean_temporary_files``)
    if found is None:
        note = {"from_update": 0, "cleaned_temporary_files": _cleaned(checkpointer, is_main)}
        if skipped:
            note["skipped_checkpoints"] = skipped
        if (run_dir / "run.json").exists():  # said once the restart is not refused (open_record)
            note["note"] = "no valid checkpoint: restarted from the beginning"
            return None, note
        forced = [k for k in ("force_resume", "continue_diverged") if cfg.checkpoint.get(k)]
        if forced and is_main:  # a new run: the flag was meant for a run that is not here
            log.warning(
                "%s: %s holds no run to resume, so it is not read: this is a new run. To continue a run, "
                "hydra.run.dir=<that run's directory>",
                " ".join(f"checkpoint.{k}=true" for k in forced),
                run_dir,
            )
        return None, {}
    path, state = found
    if int(cfg.run.threads) == 0 and state.get("torch_threads"):  # the default continues bit for bit
        torch.set_num_threads(int(state["torch_threads"]))
    # a budget below the checkpoint's updates first: "set checkpoint.force_resume=true" led to this refusal next
    refuse_budget_behind(cfg, run_dir, path, int(state["position"]["updates_done"]))
    note = _resume_note(path, state, refuse_changed_config(cfg, path, state))
    if skipped:
        note["skipped_checkpoints"] = skipped
    read = read if read is not None else read_fingerprints(cfg)
    refuse_changed_base(cfg, path, state, read)
    refuse_changed_data(cfg, path, state, read)
    if code := changed_code(cfg, path, state, read):  # forced: which files, and from which update
        note["code_changed"] = code
        note.setdefault("takes_effect_from_update", note["from_update"] + 1)
    budget_forced = any(d.startswith("budget.") for d in note.get("forced_despite", []))
    refuse_budget_behind(cfg, run_dir, path, note["from_update"], budget_forced)
    note["cleaned_temporary_files"] = _cleaned(checkpointer, is_main)  # not refused: the directory is the run's
    if "threads_changed" in note and is_main:  # said where the user looks, once the resume is not refused
        log.warning(
            "resuming at another CPU thread count (%s); run.threads=%s, or the default run.threads=0 (which "
            "continues at the checkpoint's count), keeps the run bit for bit",
            note["threads_changed"],
            state["torch_threads"],
        )
    log.info("resuming from %s (update %d)", path, note["from_update"])
    return state, note


def refuse_budget_behind(cfg: DictConfig, run_dir: Path, path: Path, from_update: int, forced: bool = False) -> None:
    """A budget (forced on resume) smaller than the updates the checkpoint already holds is refused:
    the run would end past its budget and record a plan it exceeded. A budget forced to exactly that many
    is refused too: no update would train under it, while the record would name it as the run's variant."""
    earlier_plan = read_run_json(run_dir).get("batch_plan") if (run_dir / "run.json").exists() else None
    if not earlier_plan or "train_examples" not in earlier_plan:
        return
    total = plan_from_config(cfg, int(earlier_plan["train_examples"])).total_updates
    if forced and total == from_update:
        raise ResumeRefused(
            f"budget.value={cfg.budget.value} (budget.fixed={enum_value(cfg.budget.fixed)}) gives {total} updates, "
            f"and {path.name} already holds them all: no update would train under this budget (the lr schedule "
            "of the updates done was the checkpoint's), while the record would name it. Fix: a budget of more "
            "updates, or resume without changing the budget."
        )
    if total < from_update:
        raise ResumeRefused(
            f"budget.value={cfg.budget.value} (budget.fixed={enum_value(cfg.budget.fixed)}) gives {total} updates, "
            f"but {path.name} already holds {from_update}: the run would end past its budget. Fix: a budget of at "
            "least that many updates, or a new run directory (leave out hydra.run.dir)."
        )


def _cleaned(checkpointer: Checkpointer, is_main: bool) -> list[str]:
    """The leftovers of an interrupted save, removed by rank 0 once the resume is not refused (a refused line
    leaves the directory as it was), and said."""
    cleaned = checkpointer.clean_temporary_files() if is_main else []
    if cleaned:
        log.warning(
            "removed %d leftover temporary checkpoint file(s) of an interrupted save: %s",
            len(cleaned),
            ", ".join(cleaned),
        )
    return cleaned


def _resume_note(path: Path, state: dict, differences: list[str]) -> dict:
    """What run.json records about a resume from the checkpoint at ``path``."""
    note = {"from_update": int(state["position"]["updates_done"]), "checkpoint": path.name}
    if state.get("torch_threads") not in (None, torch.get_num_threads()):
        note["threads_changed"] = (
            f"{state['torch_threads']} -> {torch.get_num_threads()} CPU threads: "
            "the run continues correctly but not bit-identically"
        )
    if any(d.split(":", 1)[0] in UPDATE_SPLIT for d in differences):
        note["split_changed"] = (
            "the same examples per update, split over other ranks or micro-batches: the run continues "
            "correctly but not bit-identically"
        )
    if differences:
        note["forced_despite"] = differences
        note["takes_effect_from_update"] = note["from_update"] + 1
    return note


def open_record(
    cfg: DictConfig, run_dir: Path, overrides: Iterable[str], note: dict, sweep_dir: Path | None = None
) -> RunRecord:
    """The run's record from now on: the same run continued (a resume ``note`` and a run.json
    in the directory), else a new run."""
    if note and (run_dir / "run.json").exists():
        if not note.get("from_update"):  # no checkpoint: nothing restored, the record is all there is
            refuse_restart_under_another_config(cfg, run_dir, overrides)
            skipped = note.get("skipped_checkpoints")
            log.warning(  # said where the user looks, not only in the record
                "%s has a record of an earlier attempt but no valid checkpoint%s: the run restarts from update 0",
                run_dir,
                f" (skipped: {', '.join(skipped)})" if skipped else "",
            )
        return continue_record(cfg, run_dir, note, overrides)
    return RunRecord.start(run_dir, cfg, overrides, sweep_dir=sweep_dir)


def refuse_restart_under_another_config(cfg: DictConfig, run_dir: Path, overrides: Iterable[str]) -> None:
    """A run restarted from its beginning keeps its record (run_id, variant, seed, overrides): refused
    when this config is another variant or seed, or differs in a defining key from the run's config.yaml."""
    data = read_run_json(run_dir)
    now = {"variant": variant_key(overrides, cfg), "seed": int(cfg.seed)}
    differences = [
        f"{key}: the run's {data.get(key)!r} != now {value!r}" for key, value in now.items() if data.get(key) != value
    ]
    saved = saved_config(run_dir)
    if saved is not None:
        differences += differing_keys(saved, defining_config(cfg), label="the run's config.yaml")
    if differences:
        raise ResumeRefused(
            f"{run_dir} holds run {data.get('run_id')} (status {data.get('status')}, no checkpoint) started "
            "under another config; restarting it keeps its record, which would then claim a config it did not "
            "use:\n  " + "\n  ".join(differences) + "\nFix: leave out hydra.run.dir (a new run; this one stays "
            "as it is), or restore its values to restart it."
        )


ATTEMPT_END = ("updates_done", "epoch", "position_in_epoch", "examples_seen", "targets_seen", "seconds_per_update")


def _previous_end(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """When the attempt before stopped: its record's ``finished_at``; an attempt that ended without
    recording it (killed: run.json still says running, and a ``finished_at`` there is an earlier
    attempt's) stopped after the last file it wrote (metrics.jsonl, a checkpoint), said so."""
    if data.get("status") != "running":
        return {"previous_finished_at": data.get("finished_at")}
    written = [run_dir / "metrics.jsonl", *(run_dir / "checkpoints").glob("**/*")]
    times = [path.stat().st_mtime for path in written if path.is_file()]
    if not times:
        return {"previous_finished_at": None}
    return {
        "previous_finished_at": now_text(max(times)),
        "previous_finished_at_from": (
            "the last file it wrote (it ended without recording when: killed, or its record could not be "
            "written, a full disk)"
        ),
    }


def attempt_stopped_before_it_began(run_dir: Path, overrides: Iterable[str] = ()) -> RunRecord:
    """The run's record when a resume was stopped (a signal) before it reopened it: one more ``resumes`` entry
    for that attempt (when it stopped, how the one before ended), the run's position and measurements kept as
    they stand (it did no update: its updates, time per update and peaks are still the earlier attempts')."""
    data = read_run_json(run_dir)
    overrides = list(overrides)
    entry = {
        "stopped_before_it_began": True,
        **({"overrides": overrides} if overrides != list(data.get("overrides") or []) else {}),
        "previous_status": data.get("status"),
        "previous_stop_cause": data.get("stop_cause"),
        "previous_error": data.get("error"),
        **_previous_end(data, run_dir),
        "previous_position": {key: data[key] for key in ATTEMPT_END if data.get(key) is not None}
        or logged_position(run_dir),
        "at": now_text(),
    }
    data.setdefault("resumes", []).append(entry)
    return RunRecord(run_dir, data)


def continue_record(cfg: DictConfig, run_dir: Path, note: dict, overrides: Iterable[str] = ()) -> RunRecord:
    """The existing run.json, status ``running`` again, with one more entry under ``resumes``. A forced
    resume changed the config: the record's overrides and variant become those in force (config.yaml's),
    the earlier ones kept in the entry."""
    data = read_run_json(run_dir)
    overrides = list(overrides)
    if note.get("forced_despite"):
        note = {**note, "overrides_before": data.get("overrides"), "variant_before": data.get("variant")}
        data.update(overrides=overrides, variant=variant_key(overrides, cfg))
    elif overrides != list(data.get("overrides") or []):  # run.threads=2 on resume: the run's record keeps its
        note = {**note, "overrides": overrides}  # variant's line; this attempt's own line is its entry's
    data.setdefault("resumes", []).append(
        {
            **note,
            "previous_status": data.get("status"),
            "previous_stop_cause": data.get("stop_cause"),
            "previous_error": data.get("error"),  # what ended it, kept: the run.json fields are reset below
            **({"previous_error_file": data["error_file"]} if data.get("error_file") else {}),
            **_previous_end(data, run_dir),  # when it stopped: the recap's time running
            "at": now_text(),
        }
    )
    # this attempt has not ended: what the one before ended with is its resume entry's, not a claim of this one
    position = {key: data.pop(key) for key in ATTEMPT_END if key in data}
    position = {key: value for key, value in position.items() if value is not None}
    # none recorded: killed, its last training line says where it stood (none: before its first update)
    data["resumes"][-1]["previous_position"] = position or logged_position(run_dir)
    data.update(status="running", stop_cause=None, error=None, finished_at=None)
    data.pop("error_file", None)  # the earlier attempt's traceback (error.txt) is named in its resume entry
    # the config from this resume on (non-defining keys such as run.threads may differ, and
    # forced keys do): config_hash is always the hash of the config.yaml now in the directory
    data["resumes"][-1].update(config_hash=config_hash(cfg), config_hash_before=data.get("config_hash"))
    data["config_hash"] = config_hash(cfg)
    missing = set_aside_metrics_after(run_dir, int(note.get("from_update", 0)))
    if missing:  # the checkpoint holds those updates; their rows are gone for good: said, never made up
        data["resumes"][-1]["metrics_missing_updates"] = missing
        log.warning(
            "metrics.jsonl lacks the training rows of update(s) %s of the %d the checkpoint holds (cut or removed "
            "since they were written): the run continues from the checkpoint, and its curve has that gap "
            "(run.json: resumes[-1].metrics_missing_updates)",
            missing,
            int(note.get("from_update", 0)),
        )
    if "variant_before" not in note or note["variant_before"] == data.get("variant"):
        return RunRecord(run_dir, data)
    with run_index.adding(index_roots(cfg), run_dir, data):  # a relaunch of the new variant finds this run; its
        return RunRecord(run_dir, data)  # line and run.json under the index's lock (``run_index.adding``)
