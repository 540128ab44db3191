"""The recap's judgement: per variant over seeds, against the control, within one sweep.

Runs are compared only with runs of their own sweep (``sweep`` column: the run.json
``sweep_id``, else the parent directory), unless the caller pools them: two launches
into one directory are two experiments, and a difference between them is not a
seed-to-seed spread.

A seed counts once. Two runs of one variant and seed (a relaunch, a sweep launched twice)
are that seed repeated, never two seeds: the mean and the spread use one value per
seed, that of its newest finished run (by started_at as an instant, then run_id, as
``run_index.find_parent`` orders runs). Every run keeps its row in recap.csv; the
summary says how many runs each repeated seed had, and names the variants with repeats.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from pilot.run_index import started_instant
from pilot.variant import control_problem, matches, parse_overrides, same_value

METRIC = "final_val_loss"


# --------------------------------------------------------------------------- the control and the task
def _flat(data: Any, prefix: str = "data") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}.{key}"))
        return out
    return {prefix: data}


def _share(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def task_change(data_json: str | None, control_json: str | None, share: Any, control_share: Any) -> str:
    """'' when the task is the control's; otherwise what changed and how much truncation removes.

    ``share``/``control_share``: (examples truncated, target tokens truncated) of the variant / control."""
    if not data_json or not control_json or data_json == control_json:
        return ""
    mine, theirs = _flat(json.loads(data_json)), _flat(json.loads(control_json))
    changed = [
        f"{k} {theirs.get(k)} -> {mine.get(k)}" for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)
    ]
    text = "changes the task: " + "; ".join(changed)
    labels = ("examples truncated", "input tokens cut", "target tokens cut")
    for label, mine_share, their_share in zip(labels, share, control_share):
        if _share(mine_share) is not None:
            text += f"; {_share(mine_share):.1%} of {label}"
            if _share(their_share) is not None:
                text += f" (control {_share(their_share):.1%})"
    return text


def _first_shares(group: pd.DataFrame) -> tuple:
    def first(column: str):  # the first value that is not None or NaN (10,000 runs: not one by one)
        return next(iter(group[column].dropna()), None) if column in group else None

    return first("examples_truncated_share"), first("tokens_truncated_share"), first("targets_truncated_share")


def _first_data(group: pd.DataFrame) -> str | None:
    return next((d for d in group.get("_data", pd.Series(dtype=object)) if isinstance(d, str)), None)


def _mean(series: pd.Series) -> float:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return float(values.mean()) if len(values) else math.nan


# --------------------------------------------------------------------------- seeds
def one_value_per_seed(group: pd.DataFrame) -> tuple[pd.Series, dict[Any, int]]:
    """The final validation loss of each seed's newest finished (ok) run, indexed by seed, and
    how many finished runs each seed had (more than one: a repeated seed)."""
    if METRIC not in group:
        return pd.Series(dtype=float), {}
    ok = group[(group["status"] == "ok") & group[METRIC].notna()]
    if "started_at" in ok:  # as instants (run_index.started_instant): runs recorded under other time zones
        ok = ok.assign(_started=ok["started_at"].map(started_instant))
    order = [c for c in ("_started", "run_id") if c in ok]
    if order:
        ok = ok.sort_values(order, na_position="first", kind="stable")
    runs = ok.groupby("seed", sort=True).size().to_dict()
    newest = ok.drop_duplicates("seed", keep="last").sort_values("seed")
    return pd.Series(newest[METRIC].astype(float).to_numpy(), index=newest["seed"].to_numpy()), runs


def _per_seed_text(values: pd.Series, runs: dict[Any, int]) -> str:
    return ", ".join(
        f"seed {seed}: {value:.4g}" + (f" (newest of {runs[seed]} runs)" if runs[seed] > 1 else "")
        for seed, value in values.items()
    )


def _std(values: pd.Series) -> float:
    return float(values.std(ddof=1)) if len(values) > 1 else math.nan


# --------------------------------------------------------------------------- per variant
def _variant_row(
    variant: str, group: pd.DataFrame, control: str, unreadable: int = 0, per_seed: tuple | None = None
) -> dict[str, Any]:
    """``group``: the variant's readable runs; ``unreadable``: how many more its damaged runs are (not judged);
    ``per_seed``: ``one_value_per_seed(group)`` when already known."""
    values, runs = per_seed if per_seed is not None else one_value_per_seed(group)
    row = {
        "variant": variant,
        "runs": len(group),
        "ok": int((group["status"] == "ok").sum()),
        "diverged": int((group["status"] == "diverged").sum()),
        "other": int((~group["status"].isin(["ok", "diverged"])).sum()),
        "unreadable": unreadable,
        "seeds": len(values),
        "repeats": sum(runs.values()) - len(values),
        "mean": float(values.mean()) if len(values) else math.nan,
        "std": _std(values),
        "per_seed": _per_seed_text(values, runs),
        "is_control": matches(variant, control),
    }
    if "seconds_per_update" in group:
        row["s_per_update"] = _mean(group["seconds_per_update"])
    for column, name in (("estimated_peak_bytes", "est_tensor_peak_bytes"), ("peak_rss_bytes", "peak_rss_bytes")):
        if column in group:  # a peak: the highest of the variant's runs, what a rental must hold (not their mean)
            values = pd.to_numeric(group[column], errors="coerce").dropna()
            row[name] = float(values.max()) if len(values) else math.nan
    return row


def summarise(frame: pd.DataFrame, control: str, quality_tolerance: float | None = None) -> tuple:
    """Per-variant rows over seeds (never only the best) and the plain-language verdicts, for
    runs that are compared with each other (one sweep, or a pool the user asked for)."""
    readable = frame[frame["status"] != "unreadable"] if "status" in frame else frame.iloc[0:0]
    if readable.empty or "variant" not in readable:
        return pd.DataFrame(), ["No readable run: nothing to compare."]
    controls = [v for v in readable["variant"].unique() if matches(v, control)]  # once per variant, not per run
    control_rows = readable[readable["variant"].isin(controls)]
    control_values, _ = one_value_per_seed(control_rows)
    rows, uneven = [], []
    damaged = (
        frame[(frame["status"] == "unreadable") & frame["variant"].notna()] if "variant" in frame else frame.iloc[0:0]
    )
    unreadable = damaged["variant"].value_counts().to_dict()  # runs of a variant the recap could not read
    groups = dict(list(readable.groupby("variant", sort=True)))
    per_seed = {variant: one_value_per_seed(group) for variant, group in groups.items()}  # once per variant
    for variant, group in groups.items():
        row = _variant_row(variant, group, control, int(unreadable.get(variant, 0)), per_seed[variant])
        own_name = own_control(variant, controls, control)
        own = groups[own_name] if own_name is not None else control_rows.iloc[0:0]
        own_values = per_seed[own_name][0] if own_name is not None else pd.Series(dtype=float)
        row["task"] = (
            task_change(_first_data(group), _first_data(own), _first_shares(group), _first_shares(own))
            if control
            else ""
        )
        if len(controls) > 1 and not row["is_control"]:
            row["control"] = own_control(variant, controls, control) or "none (no control shares its other settings)"
        if quality_tolerance is not None and not row["is_control"]:
            row["quality"] = _quality(row, own_values, quality_tolerance)
        if not row["is_control"] and len(own_values) and row["seeds"]:
            row["diff_vs_control"] = row["mean"] - own_values.mean()
            row["diff_spread"] = math.sqrt(_std(own_values) ** 2 + row["std"] ** 2)
            if (updates := _other_updates(group, own)) is not None:
                uneven.append(f"{variant} after {updates[0]} update(s), its control after {updates[1]}")
        rows.append(row)
    for variant in sorted(set(unreadable) - set(readable["variant"])):  # every run of it damaged: a row too
        row = _variant_row(variant, readable.iloc[0:0], control, int(unreadable[variant]))
        rows.append({**row, "per_seed": "", "task": ""})  # nothing read: no change of the task claimed
    summary = pd.DataFrame(rows).sort_values("variant", kind="stable").reset_index(drop=True)
    if control and not controls and any(matches(v, control) for v in damaged["variant"]):
        conclusion = f"The control ({control}) has no readable run (each is unreadable, see its row): nothing can be compared with it."
    else:
        conclusion = _conclusion(summary, control, control_values)
    if uneven:  # a forced resume with another budget, say: the loss difference is not the setting's alone
        conclusion += (
            " Compared after different numbers of updates (the loss also falls with updates): "
            + "; ".join(uneven)
            + "."
        )
    return summary, [conclusion, *_notes(summary, quality_tolerance)]


def _other_updates(group: pd.DataFrame, control: pd.DataFrame) -> tuple[int, int] | None:
    """(the variant's, its control's) updates done by their finished runs, when they differ."""
    if "updates_done" not in group or control.empty:
        return None
    mine = group.loc[group["status"] == "ok", "updates_done"].dropna()
    theirs = control.loc[control["status"] == "ok", "updates_done"].dropna()
    if mine.empty or theirs.empty or set(mine) == set(theirs):
        return None
    return int(mine.median()), int(theirs.median())


def own_control(variant: str, controls: list[str], control: str) -> str | None:
    """The control variant ``variant`` is compared with: the only one, or in a grid (the control sets
    one key of several) the one with the same other settings — lr=3e-3,wd=0 against lr=1e-3,wd=0, never
    against lr=1e-3,wd=0.5. None: no control shares them."""
    if len(controls) <= 1:
        return controls[0] if controls else None
    fixed = set(parse_overrides(part.strip() for part in control.split(",") if part.strip()))
    others = {k: v for k, v in parse_overrides(str(variant).split(",")).items() if k not in fixed}
    for candidate in controls:
        theirs = {k: v for k, v in parse_overrides(candidate.split(",")).items() if k not in fixed}
        if theirs.keys() == others.keys() and all(same_value(theirs[k], others[k]) for k in others):
            return candidate
    return None


def _notes(summary: pd.DataFrame, quality_tolerance: float | None) -> list[str]:
    lines = []
    if {"diverged", "runs"} <= set(summary):  # no value to compare, so the verdicts above never name it
        gone = summary[(summary["runs"] > 0) & (summary["diverged"] == summary["runs"])]
        if not gone.empty:
            lines.append(
                "Diverged in every run (no value to compare; too high a learning rate?): "
                + "; ".join(f"{v} ({n} of {n})" for v, n in zip(gone["variant"], gone["runs"]))
                + "."
            )
    repeated = summary[summary["repeats"] > 0]
    if not repeated.empty:
        lines.append(
            "Repeated seeds count once (the newest finished run of each; every run stays in the "
            "table): "
            + "; ".join(f"{v} ({n} repeat(s))" for v, n in zip(repeated["variant"], repeated["repeats"]))
            + "."
        )
    if quality_tolerance is not None and "quality" in summary:
        quality = summary["quality"].astype(str)
        kept = summary[quality.str.startswith("within")]["variant"].tolist()
        lost = summary[quality.str.startswith("outside tolerance (+")]["variant"].tolist()
        lower = summary[quality.str.startswith("outside tolerance (-")]["variant"].tolist()
        lines.append(
            f"Quality (validation loss after the same updates, declared tolerance "
            f"{quality_tolerance:.0%} of the control's): preserved by {', '.join(kept) or 'none'}; "
            f"lost by {', '.join(lost) or 'none'}"
            + (f"; outside it with a lower loss (not lost): {', '.join(lower)}" if lower else "")
            + "."
        )
    changed = summary[summary["task"].astype(bool)]["variant"].tolist() if "task" in summary else []
    if changed:
        lines.append(f"Changes the task (not a memory saving of the same experiment): {', '.join(changed)}.")
    return lines


def _quality(row: dict[str, Any], control_values: pd.Series, tolerance: float) -> str:
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
    if "variant" in summary and (problem := control_problem(control, summary["variant"].dropna())):
        return f"The control ({control}) compares nothing here: {problem}."
    if len(control_values) == 0:
        return f"The control ({control}) has no finished run: nothing can be compared with it."
    if "diff_vs_control" not in summary:
        return f"Only the control ({control}) finished: no variant to compare."
    compared = summary.dropna(subset=["diff_vs_control"])
    if compared["diff_spread"].isna().all():
        return (
            "Fewer than two finished seeds on the control or the variants: the seed-to-seed spread "
            "is unknown, so no variant can be said to beat the control. Run more seeds."
        )
    better = compared[compared["diff_vs_control"] < -compared["diff_spread"]]
    lower = compared[compared["diff_vs_control"] < 0]
    if better.empty and not lower.empty:  # lower, but within the noise: neither better nor worse shown
        names = "; ".join(
            f"{v} ({d:+.4g} ± {s:.2g})"
            for v, d, s in zip(lower["variant"], lower["diff_vs_control"], lower["diff_spread"])
        )
        return (
            f"No variant beats the control ({control}) beyond the seed-to-seed spread. Lower, but within "
            f"it (not shown better or worse; more seeds would tell): {names}."
        )
    if better.empty:
        return (
            f"No variant beats the control ({control}) beyond the seed-to-seed spread: "
            "the control remains the best choice."
        )
    names = "; ".join(
        f"{v} ({d:+.4g} ± {s:.2g})"
        for v, d, s in zip(better["variant"], better["diff_vs_control"], better["diff_spread"])
    )
    return f"Beyond the seed-to-seed spread, lower validation loss than the control ({control}): {names}."


# --------------------------------------------------------------------------- sweeps
def sweep_groups(frame: pd.DataFrame, pool: bool = False) -> list[tuple[str | None, pd.DataFrame]]:
    """The sets of runs compared with each other: (sweep, its runs) per sweep, or one (None, all) when
    pooled or when the readable runs come from one sweep. Unreadable runs join no comparison."""
    if "sweep" not in frame or "status" not in frame:
        return [(None, frame)]
    readable = frame[frame["status"] != "unreadable"]
    if pool or readable["sweep"].nunique() <= 1:
        return [(None, frame)]
    return [(str(sweep), group) for sweep, group in readable.groupby("sweep", sort=True)]


def summarise_sweeps(
    frame: pd.DataFrame, control: str, quality_tolerance: float | None = None, pool: bool = False
) -> list[tuple[str | None, pd.DataFrame, list[str]]]:
    """``summarise`` per sweep (or once, pooled): (sweep or None, per-variant table, verdicts)."""
    return [(sweep, *summarise(group, control, quality_tolerance)) for sweep, group in sweep_groups(frame, pool)]
