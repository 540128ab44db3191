"""What the recap writes: recap.csv (one row per run), recap.md (verdicts and tables), recap.png.

Several sweeps in one recap: one recap.csv (its ``sweep`` column says which run belongs
to which) and one recap.md with a section per sweep (conclusion and per-variant table),
so no sweep is judged against another's runs; ``pool=True`` (``--pool``) judges them as
one. The picture then has one entry per sweep and variant.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection, Iterable
from contextlib import suppress
from pathlib import Path

import pandas as pd

from pilot.phases.rows import cut_short
from pilot.recap.declared import never_started
from pilot.recap.picture import plot_curves_aside
from pilot.recap.reading import PILOTS_AND_ESTIMATES, RecapRefused, collect
from pilot.recap.summary import METRIC, summarise_sweeps
from pilot.run_directory import not_written_by_pilot
from pilot.run_record import NO_PROCESS
from pilot.variant import control_problem

RECAP_FILES = ("recap.csv", "recap.png", "recap.md")  # written under temporary names, then put in place together

RUN_TABLE = (
    "sweep",
    "run_id",
    "parent_id",
    "variant",
    "seed",
    "status",
    "stop_cause",
    "updates_done",
    "examples_seen",
    "final_val_loss",
    "best_val_loss",
    "wall_time_s",
    "seconds_per_update",
    "peak_rss_bytes",
    "estimated_peak_bytes",
    "closing",
)  # recap.md's table of every run
PHASE_TABLE = ("phase", "duration_s", "verdict", "detail")  # from phases.csv, with one peak-memory column


# --------------------------------------------------------------------------- tables
def _cell(value) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def _cells(column: pd.Series) -> list[str]:
    """A column as recap.md shows it (``_cell``); a float column in one pass, as 10,000 runs need."""
    if column.dtype == "float64":
        return ["" if value != value else f"{value:.4g}" for value in column.tolist()]  # NaN != NaN
    return [_cell(value) for value in column.tolist()]


def _md_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    columns = [_cells(frame.iloc[:, index]) for index in range(frame.shape[1])]
    return "\n".join([head, rule, *("| " + " | ".join(cells) + " |" for cells in zip(*columns))])


def _phase_table(path: Path) -> pd.DataFrame:
    """phases.csv as recap.md shows it; ValueError saying what is wrong with the file."""
    if cut_short(path):
        raise ValueError("its last line is cut (pilot writes every line whole: the file was cut after)")
    try:
        phases = pd.read_csv(path)
    except OSError as error:
        raise ValueError(error.strerror or str(error)) from None
    cuda = "mem_peak_allocated_bytes" in phases and phases["mem_peak_allocated_bytes"].notna().any()
    peak = "mem_peak_allocated_bytes" if cuda else "rss_peak_bytes"
    missing = [c for c in (*PHASE_TABLE, peak) if c not in phases]
    if missing:
        raise ValueError(f"no column {', '.join(missing)}")
    resumed = ["attempt"] if "attempt" in phases and phases["attempt"].nunique() > 1 else []  # a resumed run's
    return phases[[*PHASE_TABLE[:1], *resumed, *PHASE_TABLE[1:2], peak, *PHASE_TABLE[2:]]].rename(
        columns={peak: "peak CUDA allocated" if cuda else "peak RSS (process)"}
    )


def phase_tables(frame: pd.DataFrame, max_variants: int = 50) -> list[str]:
    """Each variant's phase table (phases.csv of its first readable run that has a readable one): duration,
    peak memory. A run the recap could not read is no source: its numbers are not the variant's."""
    if frame.empty or "variant" not in frame or frame["variant"].nunique() > max_variants:
        return []
    text = []
    for variant, group in frame[frame["status"] != "unreadable"].groupby("variant", sort=True):
        notes = []
        for run_dir in group["run_dir"]:
            if not os.path.exists(os.path.join(run_dir, "phases.csv")):  # 10,000 runs: no Path each
                continue
            path = Path(run_dir) / "phases.csv"
            try:
                table = _phase_table(path)
            except ValueError as problem:
                notes.append(f"{path}: unreadable ({problem}).")
                continue
            text += [f"### {variant}", "", *notes, f"From {path}.", "", _md_table(table), ""]
            break
        else:
            text += [f"### {variant}", "", *notes, ""] if notes else []
    return (["## Phase tables per variant", ""] + text) if text else []


# --------------------------------------------------------------------------- recap.md
def _conclusions(sections: list) -> list[str]:
    """Every verdict line; with several sweeps each begins with its sweep."""
    return [line if sweep is None else f"Sweep {sweep}: {line}" for sweep, _, lines in sections for line in lines]


def _status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Runs per status, a ``running`` record no process holds counted apart: it ended without recording how
    (killed), and the headline said "running" beside a sweep that had exited."""
    status = frame["status"].astype(object).copy()
    causes = frame["stop_cause"].astype(str) if "stop_cause" in frame else pd.Series("", index=frame.index)
    status[(status == "running") & causes.str.startswith(NO_PROCESS)] = "running (no process: ended unrecorded)"
    return status.value_counts().to_dict()


def _recap_text(frame: pd.DataFrame, sections: list, skipped: int, pool: bool, missing: list[str] = ()) -> str:
    apart = frame.attrs.get(PILOTS_AND_ESTIMATES, [])  # collect's: pilots and estimates, no training run
    counts = _status_counts(frame)
    sweeps = frame.loc[frame["status"] != "unreadable", "sweep"].nunique()  # of the runs judged
    besides = f", and {len(apart)} pilot(s) or estimate(s), listed last" if apart else ""
    text = [
        f"# Recap — {len(frame)} run(s){besides}",
        "",
        "Statuses: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"),
        "",
        *(line for entry in missing for line in (entry, "")),
    ]
    if skipped:
        text += [
            f"Left out: {skipped} run directory(ies) already in this directory before this multirun "
            "(earlier launches) or made by another launch into it at the same time; `python -m pilot.recap DIR` "
            "recaps them all, sweep by sweep.",
            "",
        ]
    if len(sections) > 1:
        text += [f"{len(sections)} sweeps, each judged on its own runs only (`--pool` judges them as one).", ""]
    elif pool and sweeps > 1:
        text += [f"Pooled: the runs of {sweeps} sweeps judged as one (`--pool`).", ""]
    for sweep, summary, lines in sections:
        sub = "##" if sweep is None else "###"
        if sweep is not None:
            text += [f"## Sweep {sweep}", ""]
        text += [
            f"{sub} Conclusion",
            "",
            *lines,
            "",
            f"{sub} Per variant ({METRIC}, one value per seed; every seed listed)",
            "",
            _md_table(summary),
            "",
        ]
    columns = [c for c in RUN_TABLE if c in frame and (c != "sweep" or sweeps > 1)]
    table = frame[columns].copy()
    if "run_id" in table and "run_dir" in frame and "status" in frame:  # an unreadable run: where it is
        unreadable = frame["status"] == "unreadable"
        table["run_id"] = table["run_id"].astype(object)
        ids = table.loc[unreadable, "run_id"].fillna("").astype(str)
        table.loc[unreadable, "run_id"] = (ids + " (" + frame.loc[unreadable, "run_dir"].astype(str) + ")").str.strip()
    text += ["## Every run (diverged, failed and unreadable ones included)", "", _md_table(table), ""]
    text += phase_tables(frame)
    text += _pilots_and_estimates(apart)
    return "\n".join(text)


def _pilots_and_estimates(apart: list[dict]) -> list[str]:
    """recap.md's lines on the pilots and estimates among the runs (no training run: not compared), each
    with how it ended: status ``failed`` or ``oom`` is a pilot whose verdict gates, or an estimate refused."""
    if not apart:
        return []
    columns = ["run_dir", "mode", "status", "stop_cause"]
    table = pd.DataFrame([{c: row.get(c) for c in columns} for row in apart], columns=columns)
    return [
        "## Pilots and estimates (no training run: not compared; `failed` or `oom`: a verdict that gates, or an "
        "estimate refused: each report.md or run.json says why)",
        "",
        _md_table(table),
        "",
    ]


def one_row_per_run(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per run: a run directory copied whole (``cp -r run run.bak``: the same run_id) is one
    run, not a repeat of its seed; the first directory is kept and the copies are named."""
    if frame.empty or "run_id" not in frame:
        return frame, []
    named = frame["run_id"].notna() & (frame["status"] != "unreadable")
    copied = named & frame["run_id"].duplicated(keep="first")
    if not copied.any():
        return frame, []
    lines = []
    for run_id, rows in frame[named & frame["run_id"].isin(frame.loc[copied, "run_id"])].groupby("run_id", sort=True):
        dirs = list(rows["run_dir"])
        lines.append(
            f"Counted once: run {run_id} is in {len(dirs)} directories (copies of one run): {dirs[0]} is in the "
            f"tables; left out: {'; '.join(dirs[1:])}."
        )
    return frame[~copied].reset_index(drop=True), lines


def _refuse_what_the_command_line_cannot_mean(paths: list[Path], frame: pd.DataFrame, control: str) -> None:
    """``python -m pilot.recap``: a --control that is none of the runs' variants, or paths holding no run
    (a recap of nothing would replace whatever recap.* are there)."""
    variants = [] if frame.empty else frame["variant"].dropna()  # an unreadable run's too: the conclusion says it
    if problem := control_problem(control, variants):
        raise RecapRefused(
            f"--control {control}: {problem}; nothing was written. Fix: give the overrides of one "
            "variant in the recap's variant column (or leave --control out to compare none)."
        )
    apart = frame.attrs.get(PILOTS_AND_ESTIMATES, [])  # a pilot's or an estimate's directory: listed, not refused
    if frame.empty and not apart and not any((Path(p) / "multirun.yaml").is_file() for p in paths):
        raise RecapRefused(
            f"no pilot run under {', '.join(str(p) for p in paths)} (no run.json, no sweep's multirun.yaml); "
            "nothing was written. Fix: give a run or sweep directory pilot wrote (campaign.run_root, "
            "campaign.sweep_root or one of their directories)."
        )


def _refuse_what_cannot_be_replaced(out_dir: Path) -> None:
    """An output that is a file, or that holds files under the recap's names pilot did not write."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RecapRefused(
            f"{out_dir} is a file, not a directory: the recap writes recap.csv, recap.md and recap.png into a "
            "directory; nothing was written. Fix: --out <a directory> (made if it does not exist)."
        )
    if in_the_way := [name for name in RECAP_FILES if (out_dir / name).is_dir()]:  # found after the first replaced
        raise RecapRefused(
            f"{', '.join(str(out_dir / name) for name in in_the_way)} is a directory where the recap writes a file; "
            "nothing was written, the earlier recap is left as it was. Fix: move it away, or --out <another directory>."
        )
    if theirs := [name for name in not_written_by_pilot(out_dir) if name != "multirun.yaml"]:
        raise RecapRefused(
            f"{out_dir} holds {', '.join(theirs)} that pilot did not write (no recap of its own): the recap would "
            "replace them; nothing was written. Fix: --out <another directory>."
        )


def _remove_left_behind(out_dir: Path) -> None:
    """Temporary recap files of a recap that was killed (SIGKILL: nothing of it could clean up): those
    whose process is gone. Another recap writing here now keeps its own."""
    for name in RECAP_FILES:
        stem, suffix = Path(name).stem, Path(name).suffix
        for left in out_dir.glob(f".{stem}.*.tmp{suffix}"):
            pid = left.name[len(stem) + 2 : -len(".tmp" + suffix)]
            if pid.isdigit() and not _alive(int(pid)):
                with suppress(OSError):
                    left.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _as_one_launch(frame: pd.DataFrame, launch: tuple[str, Collection[Path]] | None) -> None:
    """``launch``: (a launch's sweep id, the earlier runs it held as its jobs, resumed or found finished in a
    fixed ``hydra.sweep.subdir``): they join its sweep, compared with its new runs as one (their sweep_id
    column stays what each run.json says)."""
    if launch is not None and "sweep" in frame:
        held = {os.fspath(Path(p)) for p in launch[1]}
        frame.loc[frame["run_dir"].map(lambda d: os.fspath(Path(d)) in held), "sweep"] = launch[0]


def build_recap(
    paths: Iterable[Path],
    out_dir: Path,
    control: str = "",
    plot: bool = True,
    quality_tolerance: float | None = None,
    pool: bool = False,
    skip: Collection[Path] = (),
    control_must_match: bool = False,
    started_elsewhere: Collection[Path] = (),
    launch: tuple[str, Collection[Path]] | None = None,
) -> pd.DataFrame:
    """recap.csv, recap.md and recap.png in ``out_dir`` over the run directories under ``paths`` (those in
    ``skip`` left out; ``started_elsewhere``: another launch's runs of the declared jobs, never said not
    started; ``launch``: ``_as_one_launch``). Returns every run's row; the verdicts in ``frame.attrs["conclusions"]``. A path that does not
    exist is a RecapRefused before anything is written; so is, with ``control_must_match`` (--control), a
    control that is none of the runs' variants."""
    paths = list(paths)
    curves: dict[str, tuple] | None = {} if plot else None  # read only when drawn
    frame, copies = one_row_per_run(collect(paths, curves, skip))  # attrs: the pilots and estimates, kept
    _as_one_launch(frame, launch)
    if control_must_match:
        _refuse_what_the_command_line_cannot_mean(paths, frame, control)
    sections = summarise_sweeps(frame, control, quality_tolerance, pool)
    missing = copies + never_started(frame, paths, started_elsewhere)  # declared jobs that left no run directory
    frame.attrs["conclusions"] = _conclusions(sections) + missing
    by = "_plot" if len(sections) > 1 else "variant"
    if len(sections) > 1:
        frame = frame.assign(_plot=frame["sweep"].astype(str) + " · " + frame["variant"].astype(str))
    out_dir = Path(out_dir)
    _refuse_what_cannot_be_replaced(out_dir)
    staged = {name: out_dir / f".{Path(name).stem}.{os.getpid()}.tmp{Path(name).suffix}" for name in RECAP_FILES}
    ours_before = (out_dir / "recap.md").is_file()  # pilot's (refused above otherwise): its picture too
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        _remove_left_behind(out_dir)
        drawn = plot_curves_aside(frame, curves, staged["recap.png"], by) if plot and not frame.empty else None
        try:  # the tables while the picture is drawn
            text = _tables(frame, staged["recap.csv"], lambda: _recap_text(frame, sections, len(skip), pool, missing))
        finally:
            picture = drawn() if drawn is not None else None  # waited for, also when the tables failed
        staged["recap.md"].write_text(text + ("\n![loss curves](recap.png)\n" if picture else ""))
        for name, written in staged.items():  # all written: only now do they replace an earlier recap
            if written.exists():
                os.replace(written, out_dir / name)
        if not picture and ours_before:  # the earlier recap's picture would stand beside these tables
            (out_dir / "recap.png").unlink(missing_ok=True)
    except BaseException as error:  # a full disk, or a signal (Ctrl-C): no temporary file stays behind
        _unstage(staged.values())
        if not isinstance(error, OSError):
            raise
        raise RecapRefused(
            f"cannot write the recap into {out_dir}: {error.strerror or error}; "
            + ("the earlier recap there is left as it was" if ours_before else "nothing of it was left there")
            + ". Fix: give a writable --out directory (or free space)."
        ) from None
    return frame.drop(columns=["_plot"], errors="ignore")


def _tables(frame: pd.DataFrame, csv_path: Path, text: Callable[[], str]) -> str:
    """recap.csv written, then recap.md's ``text`` composed; that text. (Writing the CSV in a forked process
    beside the text saved nothing measurable at 10,000 runs and slowed the picture's process: not done.)"""
    frame.drop(columns=["_data", "_plot", "_overrides_before"], errors="ignore").to_csv(csv_path, index=False)
    return text()


def _unstage(staged: Iterable[Path]) -> None:
    for written in staged:
        with suppress(OSError):  # out_dir may be a file, or gone
            written.unlink(missing_ok=True)
