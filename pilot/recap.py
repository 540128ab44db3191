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
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

import pandas as pd

try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency; keeps the module importable alone
    Callback = object

RUN_MARKERS = ("run.json", "metrics.jsonl", ".hydra")
METRIC = "final_val_loss"


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


def read_metrics(path: Path) -> Dict[str, Any]:
    train_rows, val_rows = [], []
    with path.open() as handle:
        for line in handle:
            row = json.loads(line)  # a corrupt line makes the run unreadable: no silent gaps
            (train_rows if row.get("kind") == "train" else val_rows).append(row)
    last = train_rows[-1] if train_rows else {}
    val_losses = [r["loss"] for r in val_rows if r.get("loss") is not None]
    finite = [v for v in val_losses if isinstance(v, (int, float)) and math.isfinite(v)]
    return {"updates_done": last.get("update", 0), "examples_seen": last.get("examples_seen", 0),
            "targets_seen": last.get("targets_seen", 0),
            "final_train_loss": last.get("loss"),
            "final_val_loss": val_losses[-1] if val_losses else None,
            "best_val_loss": min(finite) if finite else None,
            "final_val_accuracy": val_rows[-1].get("accuracy") if val_rows else None,
            "val_points": len(val_rows),
            "train_seconds": sum(r.get("seconds", 0.0) for r in train_rows)}


def read_run(run_dir: Path) -> Dict[str, Any]:
    row: Dict[str, Any] = {"run_dir": str(run_dir)}
    try:
        record = json.loads((run_dir / "run.json").read_text())
        metrics = read_metrics(run_dir / "metrics.jsonl") if record.get("mode") != "pilot" else {}
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
    row["peak_cuda_allocated_bytes"] = peak.get("cuda_peak_allocated_bytes")
    row["closing"] = (record.get("closing") or {}).get("verdict")
    row["resumes"] = len(record.get("resumes") or [])
    started, finished = record.get("started_at"), record.get("finished_at")
    if started and finished:
        row["wall_time_s"] = (pd.Timestamp(finished) - pd.Timestamp(started)).total_seconds()
    return row


def collect(paths: Iterable[Path]) -> pd.DataFrame:
    rows = [read_run(d) for d in find_run_dirs(paths)]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame = frame[frame.get("mode", pd.Series(dtype=object)).fillna("train") != "pilot"]
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


def summarise(frame: pd.DataFrame, control: str) -> tuple:
    """Per-variant rows over seeds (never only the best) and the plain-language verdicts."""
    if frame.empty or "variant" not in frame:
        return pd.DataFrame(), ["no readable run"]
    readable = frame[frame["status"] != "unreadable"]
    rows, lines = [], []
    control_rows = readable[readable["variant"].map(lambda v: matches(v, control))]
    control_values = control_rows[control_rows["status"] == "ok"][METRIC].dropna().astype(float)
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
        if not row["is_control"] and len(control_values) and len(values):
            spread = math.sqrt((control_values.std(ddof=1) if len(control_values) > 1 else math.nan) ** 2
                               + (row["std"] if len(values) > 1 else math.nan) ** 2)
            row["diff_vs_control"] = row["mean"] - control_values.mean()
            row["diff_spread"] = spread
        rows.append(row)
    summary = pd.DataFrame(rows)
    lines.append(_conclusion(summary, control, control_values))
    return summary, lines


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


def plot_curves(frame: pd.DataFrame, path: Path) -> Optional[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    readable = frame[frame["status"] != "unreadable"] if "status" in frame else frame
    if readable.empty:
        return None
    fig, (ax_train, ax_val) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = {v: plt.cm.tab10(i % 10) for i, v in enumerate(sorted(readable["variant"].dropna().unique()))}
    for run in readable.itertuples(index=False):
        try:
            rows = [json.loads(line) for line in (Path(run.run_dir) / "metrics.jsonl").read_text().splitlines()]
        except (OSError, ValueError):
            continue
        train = [(r["update"], r["loss"]) for r in rows if r.get("kind") == "train"]
        val = [(r["update"], r["loss"]) for r in rows if r.get("kind") == "val"]
        color = colors.get(run.variant, "gray")
        diverged = run.status == "diverged"
        label = f"{run.variant} s{run.seed}" + (" (diverged)" if diverged else "")
        if train:
            xs, ys = zip(*train)
            ys = [y if math.isfinite(y) else float("nan") for y in ys]
            ax_train.plot(xs, ys, color=color, lw=1, ls="--" if diverged else "-", label=label)
            if diverged:
                finite = [(x, y) for x, y in zip(xs, ys) if math.isfinite(y)]
                if finite:
                    ax_train.scatter(*finite[-1], marker="x", s=80, color="red", zorder=3)
        if val:
            xs, ys = zip(*val)
            ax_val.plot(xs, ys, color=color, marker="o", ms=3, lw=1, ls="--" if diverged else "-")
    ax_train.set_yscale("log")
    ax_train.set(xlabel="update", ylabel="training loss (per target)", title="loss curves (x: diverged, stopped)")
    ax_val.set(xlabel="update", ylabel="validation loss (fixed subset)", title="validation points")
    ax_train.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def build_recap(paths: Iterable[Path], out_dir: Path, control: str = "", plot: bool = True) -> pd.DataFrame:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = collect(paths)
    frame.to_csv(out_dir / "recap.csv", index=False)
    summary, conclusions = summarise(frame, control)
    columns = [c for c in ("run_id", "parent_id", "variant", "seed", "status", "stop_cause", "updates_done",
                           "examples_seen", "final_val_loss", "best_val_loss", "wall_time_s",
                           "peak_rss_bytes", "closing") if c in frame]
    picture = plot_curves(frame, out_dir / "recap.png") if plot and not frame.empty else None
    counts = frame["status"].value_counts().to_dict() if "status" in frame else {}
    text = [f"# Recap — {len(frame)} run(s)", "",
            "Statuses: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"), "",
            "## Conclusion", "", *conclusions, "",
            f"## Per variant ({METRIC}, over seeds; every seed listed)", "", _md_table(summary), "",
            "## Every run (diverged, failed and unreadable ones included)", "",
            _md_table(frame[columns]) if columns else "(none)", ""]
    if picture:
        text += ["![loss curves](recap.png)", ""]
    (out_dir / "recap.md").write_text("\n".join(text))
    return frame


class RecapCallback(Callback):
    """Hydra callback: build the recap in the sweep directory when a multirun ends."""

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        control = str(config.get("campaign", {}).get("control", "") or "")
        frame = build_recap([sweep_dir], sweep_dir, control)
        print(f"recap: {len(frame)} run(s) -> {sweep_dir / 'recap.md'}")


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="Build recap.csv/recap.md/recap.png over run or sweep directories.")
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="where to write (default: the first path)")
    parser.add_argument("--control", default="", help='overrides of the control variant, e.g. "optim.lr=0.0001"')
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    frame = build_recap(args.paths, args.out or args.paths[0], args.control, plot=not args.no_plot)
    print(f"recap: {len(frame)} run(s) -> {(args.out or args.paths[0]) / 'recap.md'}")


if __name__ == "__main__":
    main()
