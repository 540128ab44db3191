"""The recap: one row per run, every status, and a per-variant summary over seeds.

    python -m pilot.recap DIR [DIR ...] [--out DIR] [--control "optim.lr=0.0001"]

DIRs are run or sweep directories (searched recursively for runs). A run
directory whose run.json or metrics.jsonl is missing or corrupt is a row
with status ``unreadable``, never a crash. Built automatically when a
multirun ends (``RecapCallback``, a Hydra callback), as recap.csv, recap.md
and recap.png in the sweep directory.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

import pandas as pd

try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency; keeps the module importable alone
    Callback = object

RUN_MARKERS = ("run.json", "metrics.jsonl", ".hydra")
METRIC = "final_val_loss"
NOT_RUNS = ("pilot", "estimate")  # directories of these modes hold no training run


# --------------------------------------------------------------------------- collecting
def find_run_dirs(paths: Iterable[Path]) -> List[Path]:
    """Every directory under ``paths`` that is (or was meant to be) a run directory."""
    found = set()
    for root in paths:
        root = Path(root)
        for current, dirs, files in os.walk(root):
            names = set(files) | set(dirs)
            if any(marker in names for marker in RUN_MARKERS):
                found.add(Path(current))
                dirs[:] = [d for d in dirs if d not in (".hydra", "checkpoints", "export", "resume_check")]
    return sorted(found)


def parse_overrides(overrides: Iterable[str]) -> Dict[str, str]:
    values = {}
    for override in overrides or []:
        if "=" in override:
            key, value = override.split("=", 1)
            values[key.lstrip("+~")] = value
    return values


ROW = re.compile(r'"kind": "(\w+)", "update": (\d+), "loss": ([^,}]+)')


def read_metrics(path: Path) -> Dict[str, Any]:
    """Summary of metrics.jsonl plus the curves (for the picture).

    Fast path: one regex over the file (pilot writes kind, update, loss first);
    any line it does not account for sends the file through json, line by line,
    where a corrupt line makes the run unreadable: no silent gaps.
    """
    text = path.read_text()
    lines = [line for line in text.splitlines() if line.strip()]
    found = ROW.findall(text)
    if len(found) != len(lines):
        rows = [json.loads(line) for line in lines]
        found = [(r.get("kind"), r.get("update", 0), r.get("loss")) for r in rows]
    # curves stay raw (strings) until the picture needs them: most of 10,000 runs are never drawn point by point
    train = [(u, l) for k, u, l in found if k == "train"]
    val = [(int(u), float(l)) for k, u, l in found if k == "val" and l is not None and l != "null"]
    last_train = next((json.loads(line) for line in reversed(lines) if '"kind": "train"' in line), {})
    last_val = next((json.loads(line) for line in reversed(lines) if '"kind": "val"' in line), {})
    finite = [l for _, l in val if math.isfinite(l)]
    return {"updates_done": last_train.get("update", 0), "examples_seen": last_train.get("examples_seen", 0),
            "targets_seen": last_train.get("targets_seen", 0),
            "final_train_loss": last_train.get("loss"),
            "final_val_loss": val[-1][1] if val else None,
            "best_val_loss": min(finite) if finite else None,
            "final_val_accuracy": last_val.get("accuracy"),
            "val_points": len(val), "_train_curve": train, "_val_curve": val}


def read_run(run_dir: Path) -> Dict[str, Any]:
    row: Dict[str, Any] = {"run_dir": str(run_dir)}
    try:
        record = json.loads((run_dir / "run.json").read_text())
        metrics = read_metrics(run_dir / "metrics.jsonl") if record.get("mode") not in NOT_RUNS else {}
    except (OSError, ValueError) as error:
        row.update(status="unreadable", stop_cause=f"{type(error).__name__}: {str(error)[:200]}")
        return row
    peak = record.get("peak_memory") or {}
    row.update({k: record.get(k) for k in ("run_id", "parent_id", "variant", "seed", "status",
                                           "stop_cause", "mode", "error")})
    row.update(metrics)
    row.update({f"set:{k}": v for k, v in parse_overrides(record.get("overrides")).items()
                if k != "seed" and not k.startswith("hydra")})
    row["peak_rss_bytes"] = peak.get("rss_peak_bytes")
    row["seconds_per_update"] = record.get("seconds_per_update")
    row["estimated_peak_bytes"] = (record.get("memory_estimate") or {}).get("peak_bytes")
    task = record.get("task") or {}
    row["targets_truncated_share"] = task.get("targets_truncated_share")
    row["examples_truncated_share"] = task.get("examples_truncated_share")
    row["tokens_truncated_share"] = task.get("tokens_truncated_share")
    row["_data"] = json.dumps(task["data"], sort_keys=True) if task.get("data") is not None else None
    row["peak_cuda_allocated_bytes"] = peak.get("cuda_peak_allocated_bytes")
    row["closing"] = (record.get("closing") or {}).get("verdict")
    row["resumes"] = len(record.get("resumes") or [])
    started, finished = record.get("started_at"), record.get("finished_at")
    if started and finished:
        row["wall_time_s"] = (pd.Timestamp(finished) - pd.Timestamp(started)).total_seconds()
    return row


def collect(paths: Iterable[Path], curves: Optional[Dict[str, tuple]] = None) -> pd.DataFrame:
    """One row per run directory; ``curves`` (if given) receives run_dir -> (train, val) curves."""
    rows = [read_run(d) for d in find_run_dirs(paths)]
    for row in rows:
        train, val = row.pop("_train_curve", None), row.pop("_val_curve", None)
        if curves is not None and train is not None:
            curves[row["run_dir"]] = (train, val)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    if "mode" in frame:
        frame = frame[~frame["mode"].astype(object).where(frame["mode"].notna(), "train").isin(NOT_RUNS)]
    return frame.sort_values(["variant", "seed", "run_id"], na_position="last").reset_index(drop=True)


# --------------------------------------------------------------------------- summary
def _same_value(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)  # 1e-4 and 0.0001 are one value
    except ValueError:
        return a == b


def matches(variant: str, control: str) -> bool:
    """Does the variant key hold every override of the control (values compared as numbers)?"""
    wanted = parse_overrides(c.strip() for c in control.split(",") if c.strip())
    have = parse_overrides(str(variant).split(","))
    return bool(wanted) and all(k in have and _same_value(have[k], v) for k, v in wanted.items())


def _flat(data: Any, prefix: str = "data") -> Dict[str, Any]:
    if isinstance(data, dict):
        out: Dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}.{key}"))
        return out
    return {prefix: data}


def _share(value: Any) -> Optional[float]:
    return None if value is None or pd.isna(value) else float(value)


def task_change(data_json: Optional[str], control_json: Optional[str], share: Any, control_share: Any) -> str:
    """'' when the task is the control's; otherwise what changed and how much truncation removes.

    ``share``/``control_share``: (examples truncated, target tokens truncated) of the variant / control."""
    if not data_json or not control_json or data_json == control_json:
        return ""
    mine, theirs = _flat(json.loads(data_json)), _flat(json.loads(control_json))
    changed = [f"{k} {theirs.get(k)} -> {mine.get(k)}" for k in sorted(set(mine) | set(theirs))
               if mine.get(k) != theirs.get(k)]
    text = "changes the task: " + "; ".join(changed)
    labels = ("examples truncated", "input tokens cut", "target tokens cut")
    for label, mine_share, their_share in zip(labels, share, control_share):
        if _share(mine_share) is not None:
            text += f"; {_share(mine_share):.1%} of {label}"
            if _share(their_share) is not None:
                text += f" (control {_share(their_share):.1%})"
    return text


def _first_shares(group: pd.DataFrame) -> tuple:
    def first(column: str):
        return next((v for v in group.get(column, pd.Series(dtype=object)) if _share(v) is not None), None)
    return first("examples_truncated_share"), first("tokens_truncated_share"), first("targets_truncated_share")


def _mean(series: pd.Series) -> float:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


def summarise(frame: pd.DataFrame, control: str, quality_tolerance: Optional[float] = None) -> tuple:
    """Per-variant rows over seeds (never only the best) and the plain-language verdicts."""
    if frame.empty or "variant" not in frame:
        return pd.DataFrame(), ["no readable run"]
    readable = frame[frame["status"] != "unreadable"]
    rows, lines = [], []
    control_rows = readable[readable["variant"].map(lambda v: matches(v, control))]
    control_values = control_rows[control_rows["status"] == "ok"][METRIC].dropna().astype(float)
    control_data = next((d for d in control_rows.get("_data", pd.Series(dtype=object)) if isinstance(d, str)), None)
    control_share = _first_shares(control_rows)
    for variant, group in readable.groupby("variant", sort=True):
        ok = group[group["status"] == "ok"]
        values = ok[METRIC].dropna().astype(float)
        row = {"variant": variant, "runs": len(group), "ok": len(ok),
               "diverged": int((group["status"] == "diverged").sum()),
               "other": int((~group["status"].isin(["ok", "diverged"])).sum()),
               "mean": values.mean() if len(values) else math.nan,
               "std": values.std(ddof=1) if len(values) > 1 else math.nan,
               "per_seed": ", ".join(f"seed {s}: {v:.4g}" for s, v in zip(ok["seed"], ok[METRIC])
                                     if v is not None and not pd.isna(v)),
               "is_control": matches(variant, control)}
        if "seconds_per_update" in group:
            row["s_per_update"] = _mean(group["seconds_per_update"])
        if "estimated_peak_bytes" in group:
            row["est_tensor_peak_bytes"] = _mean(group["estimated_peak_bytes"])
        if "peak_rss_bytes" in group:
            row["peak_rss_bytes"] = _mean(group["peak_rss_bytes"])
        data = next((d for d in group.get("_data", pd.Series(dtype=object)) if isinstance(d, str)), None)
        row["task"] = task_change(data, control_data, _first_shares(group), control_share) if control else ""
        if quality_tolerance is not None and not row["is_control"]:
            row["quality"] = _quality(row, control_values, quality_tolerance)
        if not row["is_control"] and len(control_values) and len(values):
            spread = math.sqrt((control_values.std(ddof=1) if len(control_values) > 1 else math.nan) ** 2
                               + (row["std"] if len(values) > 1 else math.nan) ** 2)
            row["diff_vs_control"] = row["mean"] - control_values.mean()
            row["diff_spread"] = spread
        rows.append(row)
    summary = pd.DataFrame(rows)
    lines.append(_conclusion(summary, control, control_values))
    if quality_tolerance is not None and "quality" in summary:
        kept = summary[summary["quality"].astype(str).str.startswith("within")]["variant"].tolist()
        lost = summary[summary["quality"].astype(str).str.startswith("outside")]["variant"].tolist()
        lines.append(f"Quality (validation loss after the same updates, declared tolerance "
                     f"{quality_tolerance:.0%} of the control's): preserved by {', '.join(kept) or 'none'}; "
                     f"lost by {', '.join(lost) or 'none'}.")
    changed = summary[summary["task"].astype(bool)]["variant"].tolist() if "task" in summary else []
    if changed:
        lines.append(f"Changes the task (not a memory saving of the same experiment): {', '.join(changed)}.")
    return summary, lines


def _quality(row: Dict[str, Any], control_values: pd.Series, tolerance: float) -> str:
    if row["task"]:
        return "not comparable: changes the task"
    if not len(control_values) or math.isnan(row["mean"]):
        return "unknown: no finished run to compare"
    reference = float(control_values.mean())
    relative = (row["mean"] - reference) / abs(reference) if reference else math.inf
    verdict = "within" if abs(relative) <= tolerance else "outside"
    return f"{verdict} tolerance ({relative:+.2%} vs control, declared ±{tolerance:.0%})"

def _conclusion(summary: pd.DataFrame, control: str, control_values: pd.Series) -> str:
    if not control:
        return "No control declared (campaign.control): variants are listed, not compared."
    if len(control_values) == 0:
        return f"The control ({control}) has no finished run: nothing can be compared with it."
    if "diff_vs_control" not in summary:
        return f"Only the control ({control}) finished: no variant to compare."
    compared = summary.dropna(subset=["diff_vs_control"])
    if compared["diff_spread"].isna().all():
        return ("Fewer than two finished seeds on the control or the variants: the seed-to-seed spread "
                "is unknown, so no variant can be said to beat the control. Run more seeds.")
    better = compared[compared["diff_vs_control"] < -compared["diff_spread"]]
    if better.empty:
        return (f"No variant beats the control ({control}) beyond the seed-to-seed spread: "
                "the control remains the best choice.")
    names = "; ".join(f"{v} ({d:+.4g} ± {s:.2g})" for v, d, s in
                      zip(better["variant"], better["diff_vs_control"], better["diff_spread"]))
    return f"Beyond the seed-to-seed spread, lower validation loss than the control ({control}): {names}."


# --------------------------------------------------------------------------- outputs
def _md_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(none)"
    def cell(value):
        if isinstance(value, float):
            return "" if math.isnan(value) else f"{value:.4g}"
        return str("" if value is None else value).replace("|", "\\|")
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def plot_curves(frame: pd.DataFrame, curves: Dict[str, tuple], path: Path) -> Optional[Path]:
    """All loss curves (one colour per variant; diverged runs dashed with an x where they stopped)
    and the validation points. One legend entry per variant, so 10,000 runs stay readable."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    readable = frame[frame["status"] != "unreadable"] if "status" in frame else frame
    if readable.empty:
        return None
    fig, (ax_train, ax_val) = plt.subplots(1, 2, figsize=(12, 4.5))
    variants = sorted(readable["variant"].dropna().unique())
    for i, variant in enumerate(variants):
        color = plt.cm.tab10(i % 10)
        runs = readable[readable["variant"] == variant]
        for diverged in (False, True):
            subset = runs[(runs["status"] == "diverged") == diverged]
            segments, points, stops = [], [], []
            for run_dir in subset["run_dir"]:
                train, val = curves.get(run_dir, ([], []))
                stride = max(1, len(train) // 100)  # at most ~100 points per curve: the picture's resolution
                points_kept = train[::stride] + (train[-1:] if (len(train) - 1) % stride else [])
                finite = [(float(u), float(l)) for u, l in points_kept]
                finite = [(u, l) for u, l in finite if math.isfinite(l) and l > 0]
                if finite:
                    segments.append(finite)
                    if diverged:
                        stops.append(finite[-1])
                points += [(u, l) for u, l in val if math.isfinite(l)]
            if segments:
                label = f"{variant} ({len(subset)} run(s){', diverged' if diverged else ''})"
                ax_train.add_collection(LineCollection(segments, colors=[color], linewidths=0.8,
                                                       linestyles="--" if diverged else "-",
                                                       alpha=0.8, label=label))
            if stops:
                ax_train.scatter(*zip(*stops), marker="x", s=60, color="red", zorder=3)
            if points:
                ax_val.scatter(*zip(*points), s=8, color=color, alpha=0.6)
    ax_train.autoscale()
    ax_train.set_yscale("log")
    ax_train.set(xlabel="update", ylabel="training loss (per target)",
                 title="loss curves (dashed + x: diverged, where it stopped)")
    ax_val.set(xlabel="update", ylabel="validation loss (fixed subset)", title="validation points")
    ax_train.legend(fontsize=7, loc="upper right")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.12, top=0.9, wspace=0.25)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def build_recap(paths: Iterable[Path], out_dir: Path, control: str = "", plot: bool = True,
                quality_tolerance: Optional[float] = None) -> pd.DataFrame:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    curves: Dict[str, tuple] = {}
    frame = collect(paths, curves)
    frame.drop(columns=["_data"], errors="ignore").to_csv(out_dir / "recap.csv", index=False)
    summary, conclusions = summarise(frame, control, quality_tolerance)
    frame.attrs["conclusions"] = conclusions
    columns = [c for c in ("run_id", "parent_id", "variant", "seed", "status", "stop_cause", "updates_done",
                           "examples_seen", "final_val_loss", "best_val_loss", "wall_time_s",
                           "seconds_per_update", "peak_rss_bytes", "estimated_peak_bytes", "closing") if c in frame]
    picture = plot_curves(frame, curves, out_dir / "recap.png") if plot and not frame.empty else None
    counts = frame["status"].value_counts().to_dict() if "status" in frame else {}
    text = [f"# Recap — {len(frame)} run(s)", "",
            "Statuses: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"), "",
            "## Conclusion", "", *conclusions, "",
            f"## Per variant ({METRIC}, over seeds; every seed listed)", "", _md_table(summary), "",
            "## Every run (diverged, failed and unreadable ones included)", "",
            _md_table(frame[columns]) if columns else "(none)", ""]
    text += phase_tables(frame)
    if picture:
        text += ["![loss curves](recap.png)", ""]
    (out_dir / "recap.md").write_text("\n".join(text))
    return frame


def phase_tables(frame: pd.DataFrame, max_variants: int = 50) -> List[str]:
    """Each variant's phase table (phases.csv of its first run that has one): duration, peak memory."""
    if frame.empty or "variant" not in frame or frame["variant"].nunique() > max_variants:
        return []
    text = []
    for variant, group in frame.groupby("variant", sort=True):
        for run_dir in group["run_dir"]:
            path = Path(run_dir) / "phases.csv"
            if not path.exists():
                continue
            try:
                phases = pd.read_csv(path)
            except (OSError, ValueError, pd.errors.ParserError):
                continue
            cuda = "mem_peak_allocated_bytes" in phases and phases["mem_peak_allocated_bytes"].notna().any()
            peak = "mem_peak_allocated_bytes" if cuda else "rss_peak_bytes"
            table = phases[["phase", "duration_s", peak, "verdict", "detail"]].rename(
                columns={peak: "peak CUDA allocated" if cuda else "peak RSS (process)"})
            text += [f"### {variant}", "", f"From {path}.", "", _md_table(table), ""]
            break
    return (["## Phase tables per variant", ""] + text) if text else []


class RecapCallback(Callback):
    """Hydra callback: build the recap in the sweep directory when a multirun ends."""

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        campaign = config.get("campaign", {}) or {}
        control = str(campaign.get("control", "") or "")
        frame = build_recap([sweep_dir], sweep_dir, control, quality_tolerance=campaign.get("quality_tolerance"))
        print(f"recap: {len(frame)} run(s) -> {sweep_dir / 'recap.md'}")
        if campaign.get("journal"):
            from pilot.rental.journal import append_entry
            counts = frame["status"].value_counts().to_dict() if "status" in frame else {}
            append_entry(Path(campaign.journal), f"sweep concluded ({sweep_dir})",
                         [f"- {len(frame)} run(s): " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"),
                          *[f"- {line}" for line in frame.attrs.get("conclusions", [])],
                          f"- recap: {sweep_dir / 'recap.md'}"])


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="Build recap.csv/recap.md/recap.png over run or sweep directories.")
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: the first path)")
    parser.add_argument("--control", default="", help='overrides of the control variant, e.g. "optim.lr=0.0001"')
    parser.add_argument("--quality-tolerance", type=float, default=None,
                        help="mark each variant's validation loss within/outside this share of the control's")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    frame = build_recap(args.paths, args.out or args.paths[0], args.control, plot=not args.no_plot,
                        quality_tolerance=args.quality_tolerance)
    print(f"recap: {len(frame)} run(s) -> {(args.out or args.paths[0]) / 'recap.md'}")


if __name__ == "__main__":
    main()
