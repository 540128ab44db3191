"""A directory that holds a run which ended, or another mode's run: what starting a run there does.

A finished training run (``ok``; ``diverged`` without ``checkpoint.continue_diverged``) is not trained
again in its directory (``refuse_finished_run``): started again with its own settings it says so and
exits as it ended, with others it is refused naming each differing key. A pilot or an estimate is never
continued nor overwritten (``refuse_reused_for``); the same one finished there says so, with the exit
code it ended with.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.errors import INCOMPLETE, ResumeRefused, RunFinished
from pilot.models.base_files import now_said, recorded_key, saved_and_now
from pilot.resume import differing_keys, saved_config
from pilot.run_index import roots_of, within_roots
from pilot.run_record import RunDirectoryLock, abandoned, config_hash, index_roots, read_run_json
from pilot.variant import defining_config, flat_config


def refuse_finished_run(cfg: DictConfig, run_dir: Path) -> None:
    """A run that ended (``ok``, or ``diverged``) is not trained again in its directory; nor is a
    directory that holds another mode's run, or any run with ``checkpoint.resume=false``."""
    if not (run_dir / "run.json").exists():
        return
    data = read_run_json(run_dir)
    status, run_id = data.get("status"), data.get("run_id")
    becomes = (  # where a relaunch looks (run_record.RunRecord.start): the roots and indexed folders above
        "this run becomes its parent_id"
        if within_roots(roots_of(index_roots(cfg), run_dir), run_dir)
        else "no parent_id: this run lies outside campaign.run_root and campaign.sweep_root, where relaunches look"
    )
    again = f"To run this variant again, start it without hydra.run.dir (a new directory and run_id; {becomes})."
    if data.get("mode", "train") != "train":
        refuse_reused_for("train", run_dir)
    if not cfg.checkpoint.resume:
        refuse_reused_for("train with checkpoint.resume=false", run_dir)
    saved = saved_config(run_dir)
    if status in ("ok", "diverged") and saved is not None:
        differences = differing_keys(saved, defining_config(cfg), label="the run's")
        if differences:  # this command's variant never ran here: success would claim it did
            raise ResumeRefused(
                f"{run_dir} holds a finished run ({run_id}: status {status}, {data.get('updates_done')} updates) of another "
                "config; this command asks for:\n  " + "\n  ".join(differences) + "\nNothing was done and "
                "nothing was touched. Fix: leave out hydra.run.dir to run this variant (a new directory and "
                "run_id; this run stays as it is)."
                + (
                    " checkpoint.force_resume=true continues an unfinished run under changed settings; a "
                    "finished run is never trained further in its directory."
                    if cfg.checkpoint.force_resume
                    else ""
                )
            )
    if status in ("ok", "diverged"):
        _refuse_another_model_folder(cfg, run_dir, data)
    if status == "ok":
        closing = data.get("closing") or {}
        unchecked = (
            f" Its closing's reload check is {closing.get('verdict')} (its export was not verified): "
            f"python -m pilot.closing {run_dir / 'export'} runs it again and records the verdict."
            if closing.get("verdict") in (INCOMPLETE, "fail")
            else ""
        )
        raise RunFinished(
            f"{run_dir} holds a finished run ({run_id}: status ok, stop cause "
            f"{data.get('stop_cause')}, {data.get('updates_done')} updates). Nothing was "
            f"done and nothing was touched. {again}{unchecked}",
            exit_code=0,
        )
    if status == "diverged" and not cfg.checkpoint.continue_diverged:
        raise RunFinished(
            f"{run_dir} holds a diverged run ({run_id}: {data.get('stop_cause')}); it stays "
            f"diverged and nothing was touched. {again} To continue it from its last finite "
            "checkpoint instead, add checkpoint.continue_diverged=true (recorded in run.json).",
            exit_code=1,
        )


def _refuse_another_model_folder(cfg: DictConfig, run_dir: Path, data: dict[str, Any]) -> None:
    """The finished run's ``model.path`` folder holds another model now (``pilot.models.base_files``): the same
    command names a model that never ran here."""
    recorded = data.get("model_path") or {}
    saved, now = saved_and_now(cfg, {recorded_key(recorded): recorded.get("fingerprint")})
    if saved and now != saved:
        raise ResumeRefused(
            f"{run_dir} holds a finished run ({data.get('run_id')}: status {data.get('status')}, "
            f"{data.get('updates_done')} updates) trained from the model model.path={recorded.get('path')} held "
            f"then; that folder now holds another one (fingerprint of its files: run {saved[:12]}, "
            f"{now_said(now)}). Nothing was done and nothing was touched. Fix: leave out hydra.run.dir to "
            "train the model there now (a new directory and run_id; this run stays as it is)."
        )


@contextmanager
def taken_unless_reused(mode: str, run_dir: Path, cfg: DictConfig) -> Iterator[RunDirectoryLock]:
    """The run directory's lock, held for a pilot or an estimate (one process per directory). A run there
    (looked at under the lock: another line may have just written it) refuses the line before this process
    writes itself as the lock's holder: a refused line leaves the lock file as it was."""
    lock = RunDirectoryLock(run_dir).acquire(announce=False)
    try:
        if (run_dir / "run.json").exists():
            refuse_reused_for(mode, run_dir, cfg)
        lock.announce()
        yield lock
    finally:
        lock.release()


def refuse_reused_for(mode: str, run_dir: Path, cfg: DictConfig | None = None) -> None:
    """A run never starts in a directory holding another run (run.json) it would not continue: a
    pilot's or an estimate's, a training run over another mode's run or with checkpoint.resume=false.
    The same pilot or estimate finished there (``cfg`` the same as Hydra's files there say it ran) is
    said to be finished, with the exit code it ended with: a script gated on it reads the same answer."""
    earlier = read_run_json(run_dir)
    if cfg is not None and earlier.get("mode") == mode:
        _refuse_finished_check(mode, run_dir, earlier, cfg)
    status = earlier.get("status")
    if status == "running" and (gone := abandoned(run_dir)):  # its record's last word, not what is true now
        status = f"running, but {gone}: killed before it could record how it ended"
    raise ResumeRefused(
        f"{run_dir} already holds run {earlier.get('run_id')} (mode={earlier.get('mode')}, status "
        f"{status}); mode={mode} never overwrites a run's record. Fix: leave out "
        "hydra.run.dir (each run gets a new directory), or name a new one."
    )


UNCHANGING = (  # change no pilot's or estimate's result (a key added under run.* or campaign.* does)
    "run.threads",
    "run.log_every",
    "campaign.journal",
    "campaign.run_root",
    "campaign.sweep_root",
    "distributed.master_port",
)


def _refuse_finished_check(mode: str, run_dir: Path, earlier: dict[str, Any], cfg: DictConfig) -> None:
    """``RunFinished`` when ``run_dir`` holds this pilot or estimate, finished: its status says how it
    ended (a pilot's verdict, an estimate refused), and every setting but ``UNCHANGING`` ones is the same."""
    status, cause = earlier.get("status"), str(earlier.get("stop_cause") or "")
    if status == "ok":
        code = 0
    elif mode == "pilot" and status in ("failed", "oom") and earlier.get("verdicts") and cause != "disk_full":
        code = 1  # a check failed: the pilot's exit 1
    elif mode == "estimate" and status == "failed" and cause.startswith("estimate refused"):
        code = 1
    else:
        return  # interrupted, an error, a full disk: it did not finish
    try:
        saved = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
        if config_hash(saved) != earlier.get("config_hash"):  # edited since: not what the record says it ran
            return
        ran = flat_config(saved)
    except Exception:  # noqa: BLE001 - none, or unreadable: what it ran is not known
        return
    asked = flat_config(cfg)
    keys = (set(ran) | set(asked)) - set(UNCHANGING)
    if any(ran.get(k) != asked.get(k) for k in keys):
        return
    ended = f"verdict {worst_verdict(earlier)}" if mode == "pilot" else f"stop cause {cause}"
    raise RunFinished(
        f"{run_dir} holds this {mode}, finished ({earlier.get('run_id')}: status {status}, {ended}). Nothing was "
        "done and nothing was touched; the exit code is the one it ended with. To run it again, leave out "
        "hydra.run.dir (a new directory and run_id).",
        exit_code=code,
    )


def worst_verdict(record: dict[str, Any]) -> str:
    order = ("pass", "warn", "fail", "oom")
    verdicts = [v for v in (record.get("verdicts") or {}).values() if v in order]
    return max(verdicts, key=order.index) if verdicts else "unknown"
