"""The campaign plan in words (choice_sheet.md, the console, the journal): the hardware, the package,
the cost at the catalog's price, and why nothing is planned when nothing is."""

from __future__ import annotations

from pilot.rental.campaign_plan import NOT_ITS_OWN, Plan
from pilot.rental.choice_sheet import ChoiceRow
from pilot.text_table import markdown_table


def duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    for limit, unit, scale in (
        (1e-3, "µs", 1e6),
        (1, "ms", 1e3),
        (120, "s", 1),
        (7200, "min", 1 / 60),
        (172800, "h", 1 / 3600),
    ):
        if seconds < limit:
            return f"{seconds * scale:.3g} {unit}"
    return f"{seconds / 86400:.3g} days"


SHOWN_REASONS = 3  # the most frequent reasons rows do not fit, named when nothing is planned


def _nothing_planned(pinned: str | None, reasons: list[str]) -> str:
    """Why nothing is planned: the rows' own reasons, most frequent first (a batch that splits over none of
    the counts is not a memory problem)."""
    counted = sorted({r: reasons.count(r) for r in reasons if r}.items(), key=lambda item: -item[1])
    why = " Why: " + "; ".join(r for r, _ in counted[:SHOWN_REASONS]) + "." if counted else ""
    if pinned:
        return (
            f"The chosen hardware ({pinned}) does not fit this configuration: nothing planned.{why} Pick another "
            "rental.gpu / rental.gpu_count, or null to let pilot pick the smallest that fits."
        )
    return f"No catalog GPU and count fits this configuration: nothing can be planned.{why} Every row's reason is in the choice sheet."


def _cost(plan: Plan, price: float) -> str:
    gpu_hours = plan.planned_h * plan.count
    return (
        f"Cost: ~{gpu_hours * price:.4g} for the planned jobs ({gpu_hours:.3g} GPU-hours x {price:g} per GPU-hour, "
        f"the hours as planned above); the package itself is {plan.capacity_h * plan.count * price:.4g} at that price."
    )


def _not_estimated_alone(plan: Plan) -> list[str]:
    """The jobs whose swept settings change what an update computes, sized and timed as the base config."""
    unsized = [j for j in plan.planned + plan.left_out if NOT_ITS_OWN in j.job.note]
    if not unsized:
        return []
    return [
        f"{len(unsized)} job(s) change what an update computes (the note column) and are {NOT_ITS_OWN}: "
        "whether they fit this hardware, and their times, are not known. Estimate each alone: this command "
        f"without -m, with that job's overrides ({' '.join(unsized[0].job.overrides)}, ...)."
    ]


def plan_lines(
    plan: Plan | None,
    chosen: ChoiceRow | None,
    brief: bool = False,
    pinned: str | None = None,
    reasons: list[str] | None = None,
) -> list[str]:
    """The plan in words (``brief``: the lines alone, else with its table); when nothing is planned, why:
    ``reasons``, those of the rows that could have been chosen."""
    if plan is None or chosen is None:
        return [_nothing_planned(pinned, reasons or [])]
    head = (
        f"Hardware: {plan.count} x {plan.gpu} ({chosen.strategy}; micro-batch {chosen.micro_batch} x "
        f"accumulation {chosen.accumulation}, {chosen.precision}, activation checkpointing "
        f"{'on' if chosen.activation_checkpointing else 'off'})."
    )
    if plan.fits_all:
        verdict = (
            f"Package: {plan.package_days} days ({plan.capacity_h:.0f} h); the {len(plan.planned)} job(s) "
            f"need {duration(plan.planned_h * 3600)} including evaluation and closing, one after another."
        )
    else:
        verdict = (
            f"Does not fit a {plan.package_days}-day package: {len(plan.planned)} job(s) planned "
            f"({duration(plan.planned_h * 3600)} of {plan.capacity_h:.0f} h); {len(plan.left_out)} job(s) do not fit: "
            + ", ".join(" ".join(j.job.overrides) or "(the configured variant)" for j in plan.left_out)
            + ". Cut the list, shorten the budget, or rent more GPUs."
        )
    lines = [head, verdict] + ([_cost(plan, chosen.price_per_hour)] if chosen.price_per_hour is not None else [])
    lines += _not_estimated_alone(plan)
    if brief:
        return [f"- {line}" for line in lines]
    table = [
        [
            status,
            " ".join(j.job.overrides) or "(the configured variant)",
            j.job.updates,
            j.job.validations,
            duration(j.train_h * 3600),
            duration(j.eval_h * 3600),
            duration(j.closing_h * 3600),
            duration(j.hours * 3600),
            j.job.note,
        ]
        for status, group in (("planned", plan.planned), ("does not fit", plan.left_out))
        for j in group
    ]
    sources = sorted({j.sources for j in plan.planned + plan.left_out})
    return lines + [
        "",
        markdown_table(
            ["status", "job", "updates", "validations", "training", "evaluation", "closing", "total", "note"], table
        ),
        "",
        *[f"Times: {s}." for s in sources],
    ]
