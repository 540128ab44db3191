"""The directory a key names (``hydra.run.dir``, ``hydra.sweep.dir``, a campaign root) and whether a
process can write into it: refused (``ResumeRefused``) naming the key the user should change."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pilot.config.values import as_written
from pilot.errors import ConfigRefused, ResumeRefused, file_in_the_way
from pilot.run_marker import enclosing_run

_ABSENT = object()


NAME_MAX = 255  # bytes of one file or directory name (Linux, macOS and Windows file systems alike)


def directory_of(config: DictConfig, key: str) -> Path:
    """The directory ``key`` names; refused (``PilotError``) when it cannot be resolved or is empty."""
    try:
        value = str(OmegaConf.select(config, key, default="") or "")
    except OmegaConfBaseException as error:  # an interpolation of nothing: ${oops}
        raise ResumeRefused(
            f"{key}={as_written(config, key)!r} cannot be resolved ({str(error).splitlines()[0]}). Fix: name a directory, or "
            f"leave {key} out (pilot names a new one)."
        ) from None
    _refuse_unusable(key, value, f"the run would write into the current directory ({os.getcwd()})")
    return Path(value)


def _refuse_unusable(key: str, value: str, empty_means: str) -> None:
    """An empty directory (``empty_means`` says where that writes) or one starting with a quoted '~'."""
    if not value.strip():
        raise ResumeRefused(
            f"{key}={value!r} is empty: {empty_means}. Fix: leave {key} out (pilot's default), or name a directory."
        )
    if value == "~" or value.startswith("~/"):  # quoted past the shell: Hydra would make ./~ here
        raise ResumeRefused(
            f"{key}={value!r} would make a directory named '~' in the current directory ({os.getcwd()}): pilot "
            f"takes a path as written and only the shell expands '~'. Fix: {key}={os.path.expanduser(value)}"
        )


def refuse_long_names(key: str, value: str) -> None:
    """A part of the path longer than a file system allows: the OS refuses it (ENAMETOOLONG), which came
    out of the directory check as two chained tracebacks."""
    longest = max(value.split(os.sep), key=lambda part: len(os.fsencode(part)))
    if len(os.fsencode(longest)) > NAME_MAX:
        raise ResumeRefused(
            f"{key}={value[:80]!r}...: its part {longest[:40]!r}... is {len(os.fsencode(longest))} bytes, more than a "
            f"file or directory name may hold ({NAME_MAX}). Fix: a shorter name (or leave {key} out)."
        )


def writable_directory(path: Path, key: str, root: tuple[str, str] | None = None) -> None:
    """``path`` is (made) a directory this process can write into, else ``PilotError`` naming ``key``,
    or the ``root`` (key, value) it was made from when the user did not set ``key`` itself."""
    said, leave = (f"{root[0]}={root[1]} (so {key}={path})", root[0]) if root else (f"{key}={path}", key)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except (FileExistsError, NotADirectoryError):
        blocking = file_in_the_way(path) or path
        raise ResumeRefused(
            f"{said}: {blocking} is a file, not a directory. Fix: name a directory (or leave {leave} out)."
        ) from None
    except OSError as error:
        raise ResumeRefused(
            f"{said} cannot be written ({error.strerror or error}). Fix: name a directory you can "
            f"write into (or leave {leave} out)."
        ) from None


def made_from_root(config: DictConfig, key: str, root_key: str) -> tuple[str, str] | None:
    """(``root_key``, its value) when ``key`` (hydra.run.dir, hydra.sweep.dir) was not set on the command
    line, so a directory it names comes from the campaign root the user chose: that is the key to fix. An
    empty root is refused whether it names the directory or not (``refuse_empty_roots``)."""
    refuse_empty_roots(config)
    overrides = []  # as typed: an override's own ${...} is text here, never resolved
    for group in ("hydra.overrides.hydra", "hydra.overrides.task"):
        node = OmegaConf.select(config, group, default=None)
        overrides += OmegaConf.to_container(node, resolve=False) if node is not None else []
    if any(str(item).lstrip("+~").split("=", 1)[0] == key for item in overrides):
        return None
    if OmegaConf.select(config, root_key, default=_ABSENT) is _ABSENT:
        return None
    root = str(OmegaConf.select(config, root_key) or "")  # empty: ${campaign.run_root}/<date> is /<date>
    _refuse_unusable(root_key, root, f"{key} would be {OmegaConf.select(config, key)}, under the filesystem's root")
    refuse_long_names(root_key, root)
    return root_key, root


ROOTS = {
    "campaign.run_root": "the run index (.pilot_runs.jsonl) of every run",
    "campaign.sweep_root": "the sweeps' run index and the campaign journal (${campaign.sweep_root}/journal.md)",
}


def refuse_empty_roots(config: DictConfig) -> None:
    """An empty campaign root, even beside a ``hydra.run.dir`` or ``hydra.sweep.dir`` of the user's: pilot keeps
    its run index (and the journal) under each root, which would then land in the current directory and at the
    filesystem's root."""
    for key, holds in ROOTS.items():
        try:
            value = OmegaConf.select(config, key, default=_ABSENT)
        except OmegaConfBaseException:
            continue  # an unresolvable root is named where its directory is made
        if value is not _ABSENT and not str(value or "").strip():
            raise ResumeRefused(
                f"{key}={str(value or '')!r} is empty: pilot keeps {holds} under it, which would be written into "
                f"the current directory ({os.getcwd()}) or under the filesystem's root. Fix: leave {key} out "
                "(pilot's default), or name a directory."
            )


def refuse_changed_directory(config: DictConfig) -> None:
    """``hydra.job.chdir=true``: pilot reads its paths (campaign.run_root and sweep_root, data.path, the
    journal) from the directory it was started in; changed into the run's directory, the run index was
    neither read nor appended to (no parent found, said nothing) and relative paths named other files."""
    if OmegaConf.select(config, "hydra.job.chdir", default=False):
        raise ConfigRefused(
            "hydra.job.chdir=true: pilot reads its relative paths (campaign.run_root, campaign.sweep_root, "
            "data.path, campaign.journal) from the directory it is started in, and writes every file of a run "
            "under hydra.run.dir itself. Fix: leave hydra.job.chdir out (false)."
        )


def refuse_inside_a_run(key: str, path: Path, root: tuple[str, str] | None) -> None:
    """A new run or sweep directory below a run's directory (``hydra.run.dir=<run>/sub``, a campaign root set
    to a run's directory): it was made among that run's files, which a resume, a recap or a cleanup of
    that run then met. Refused before anything is made."""
    run = enclosing_run(path.parent)
    if run is None:
        return
    said, leave = (f"{root[0]}={root[1]} (so {key}={path})", root[0]) if root else (f"{key}={path}", key)
    within = Path(os.path.abspath(path)).relative_to(run).parts[:1]
    again = (  # <run>/checkpoints(/ckpt-...): the run meant, to continue it from its checkpoint
        f"; to continue that run from its last checkpoint: hydra.run.dir={run}"
        if key == "hydra.run.dir" and within == ("checkpoints",)
        else ""
    )
    raise ResumeRefused(
        f"{said} lies inside the directory of the run at {run} (its run.json): a run's directory holds that run "
        f"alone. Fix: name a directory outside it (or leave {leave} out){again}."
    )


def refuse_unwritable_launcher_folder(config: DictConfig) -> None:
    """``hydra.launcher.submitit_folder`` (submitit's job files, ``${hydra.sweep.dir}/.submitit/%j`` by
    default) where no directory can be made: the launcher's own mkdir raised a traceback after the sweep
    directory was made. Its part before the first ``%`` placeholder is judged, nothing made."""
    try:
        value = str(OmegaConf.select(config, "hydra.launcher.submitit_folder", default="") or "")
    except OmegaConfBaseException:
        return  # an interpolation of nothing: Hydra's own message names it
    fixed = value.split("%", 1)[0]
    if fixed.strip() and (why := unwritable_reason(Path(os.path.abspath(fixed.rstrip(os.sep) or os.sep)))):
        raise ResumeRefused(
            f"hydra.launcher.submitit_folder={value} cannot be written ({why}). Fix: name a directory you can write "
            "into (or leave hydra.launcher.submitit_folder out)."
        )


def unwritable_reason(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (made where missing): its nearest existing part is a file, or a
    temporary file cannot be made there (it goes at once: nothing is left); None when one can."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a directory"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return f"nothing can be written in {existing}: {error.strerror or error}"
    return None
