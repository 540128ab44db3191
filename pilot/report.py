"""Step 5: the pilot's report — console tables, report.md, phases.csv, examples and a picture."""

from __future__ import annotations

import json
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from pilot.checks.result import GATING, CheckResult
from pilot.child_process import Finished
from pilot.errors import INCOMPLETE
from pilot.phases.rows import read_phases_csv, typed_rows, write_phases_csv
from pilot.run_record import write_text_atomic
from pilot.text_table import byte_size, markdown_table


def peak_column(rows: list[dict[str, Any]]) -> str:
    """CUDA peak allocated where measured, else the process's peak RSS (``rows``: ``typed_rows``)."""
    if any(row["mem_peak_allocated_bytes"] is not None for row in rows):
        return "mem_peak_allocated_bytes"
    return "rss_peak_bytes"


def render_examples(shown: list[dict[str, Any]]) -> str:
    """examples.txt: each block drawn from one row of a collated micro-batch (``pilot.checks.collated``)."""
    blocks = []
    for example in shown:
        head = f"{example['split']} example {example['index']}"
        if "tokens" in example:
            blocks.append(
                f"{head}: {example['length']} tokens, {example['padding']}; {example['truncation']}; "
                f"{example['loss_tokens']} token(s) in the loss\n"
                f"  tokens: {example['tokens']}\n  loss:   {example['loss']}\n  mask:   {example['mask']}\n"
                f"  target: {example['target']}"
            )
        elif "class_name" in example:
            raw = example.get("raw_label")
            raw = f" (raw label {raw!r})" if raw is not None else ""
            blocks.append(f"{head}: label {example['label']} -> {example['class_name']}{raw}; input {example['input']}")
        else:
            blocks.append(f"{head}: {example.get('fields')}")
    legend = (
        "legend: « bos, » eos, _ pad, ⏎ newline; '^' marks a token the loss predicts; mask 1 = attended, 0 = padding"
    )
    return "\n".join(blocks) + ("\n" + legend if any("tokens" in e for e in shown) else "")


def data_statistics(results: list[CheckResult]) -> list[str]:
    """Markdown lines: the inspection's per-split statistics and, for classes, the mapping."""
    inspect = next((r for r in results if r.step == "inspect"), None)
    if inspect is None:
        return []
    lines: list[str] = []
    per_split = inspect.details.get("per_split")
    if per_split:
        keys = list(next(iter(per_split.values())))

        def fmt(key, value):
            if value is None:  # share_truncated of a task whose encode does not say what it cut
                return "not reported by encode"
            return f"{value:.1%}" if key.startswith("share") else value

        lines += [
            markdown_table(
                ["split", *keys], [(split, *[fmt(k, stats[k]) for k in keys]) for split, stats in per_split.items()]
            ),
            "",
        ]
    mapping = inspect.details.get("mapping")
    if mapping:
        lines += ["Class mapping: " + ", ".join(f"{i} -> {name}" for i, name in mapping.items()), ""]
        histograms = inspect.details.get("label_histogram", {})
        ids = sorted({int(i) for h in histograms.values() for i in h})
        lines += [
            markdown_table(
                ["split", *[str(i) for i in ids]],
                [(split, *[h.get(i, 0) for i in ids]) for split, h in histograms.items()],
            ),
            "",
        ]
    return lines


def plot_phases(rows: list[dict[str, Any]], path: Path) -> Path | None:
    """phases.png from ``typed_rows``: time and memory growth of every measured phase; None if none was."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [row for row in rows if row["duration_s"] is not None]
    if not measured:
        return None
    ranks = len({row["rank"] for row in rows if row["rank"] is not None}) > 1
    labels = [f"{r['phase'] or '?'}\n(rank {r['rank']})" if ranks else str(r["phase"] or "?") for r in measured]
    column = peak_column(rows)
    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(12, 4))
    colors = ["tab:red" if r["verdict"] in GATING else "tab:blue" for r in measured]
    ax_time.barh(labels, [r["duration_s"] for r in measured], color=colors)
    ax_time.set_xlabel("duration (s), after synchronisation")
    ax_time.invert_yaxis()
    cuda = column.startswith("mem_")

    def mib(name: str) -> list[float]:
        return [(r[name] or 0) / 2**20 for r in measured]

    baseline = mib("mem_baseline_bytes" if cuda else "rss_baseline_bytes")
    after = mib("mem_allocated_bytes" if cuda else "rss_bytes")
    peak = mib(column)
    mem_labels = [f"{label} (peak {value:.0f} MiB)" for label, value in zip(labels, peak)]
    ax_mem.barh(mem_labels, [p - b for p, b in zip(peak, baseline)], color=colors, label="peak above phase start")
    ax_mem.scatter([a - b for a, b in zip(after, baseline)], mem_labels, color="black", zorder=3, label="after phase")
    ax_mem.set_xlabel(("CUDA allocated" if cuda else "process RSS") + " growth during the phase (MiB)")
    ax_mem.invert_yaxis()
    ax_mem.legend(loc="lower right")
    fig.suptitle("pilot phases (red: fail or oom)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _phase_table(rows: list[dict[str, Any]]) -> str:
    """report.md's phase table: time, peak and after-phase memory, verdict and detail per row."""
    column = peak_column(rows)
    table = [
        (
            r["phase"],
            r["rank"],
            f"{r['duration_s']:.4f}" if r["duration_s"] is not None else "",
            byte_size(r[column]),
            byte_size(r["rss_bytes"]) if column == "rss_peak_bytes" else byte_size(r["mem_allocated_bytes"]),
            "" if r["seq_len"] is None else r["seq_len"],
            r["verdict"],
            r["detail"],
        )
        for r in rows
    ]
    peak_name = "CUDA peak allocated" if column.startswith("mem_") else "peak RSS (process)"
    return markdown_table(["phase", "rank", "seconds", peak_name, "after", "seq_len", "verdict", "detail"], table)


def _environment_lines(results: list[CheckResult], run_dir: Path) -> list[str]:
    environment = next((r for r in results if r.step == "environment"), None)
    if environment is None or not environment.details.get("table"):
        return []
    return [
        "## Environment",
        "",
        *environment.details["table"],
        "",
        "Locked in `environment.json` and `requirements.lock`. On the rented machine, first: "
        f"`python -m pilot.env_check {run_dir}` (add `--smoke` for one update and one evaluation).",
        "",
    ]


def _findings_lines(results: list[CheckResult], limit: int = 50) -> list[str]:
    lines: list[str] = []
    for result in results:
        if result.findings:
            lines += [f"### {result.step}: findings", ""]
            lines += [f"- {f}" for f in result.findings[:limit]]
            if len(result.findings) > limit:
                lines.append(f"- ... {len(result.findings) - limit} more in checks.json")
            lines.append("")
    return lines


def report_markdown(
    run_dir: Path,
    results: list[CheckResult],
    phase_rows: list[dict[str, Any]],
    shown: list[dict[str, Any]],
    arithmetic: list[str],
    header: dict[str, Any],
    picture: Path | None,
) -> str:
    """report.md: verdicts, environment, findings, data, batch arithmetic, phases, examples."""
    lines = [
        f"# Pilot report — {header.get('variant', '')}",
        "",
        f"run `{header.get('run_id')}`, device {header.get('device')}, verdict **{header.get('verdict')}**",
        "",
        "## Verdicts",
        "",
        markdown_table(["step", "verdict", "reason"], [(r.step, r.verdict, r.reason) for r in results]),
        "",
        *_environment_lines(results, run_dir),
        *_findings_lines(results),
        "## Data",
        "",
        *data_statistics(results),
        "## Batch arithmetic",
        "",
        *[f"- {line}" for line in arithmetic],
        "",
        "## Phases",
        "",
        _phase_table(phase_rows),
        "",
        "All counters in `phases.csv`. " + header.get("memory_note", ""),
        "",
        "![phases](phases.png)" if picture else "",
        "",
        "## Inspected examples",
        "",
        "```",
        render_examples(shown),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_report(
    run_dir: Path,
    results: list[CheckResult],
    rows: list[dict[str, Any]],
    shown: list[dict[str, Any]],
    arithmetic: list[str],
    header: dict[str, Any],
    drawn: Future[Finished] | None = None,
) -> dict[str, Path]:
    """report.md, phases.csv, phases.png, examples.txt, checks.json. ``drawn``: phases.png drawn
    from this phases.csv in another process (``python -m pilot.report``); drawn here if it failed."""
    run_dir = Path(run_dir)
    phases = write_phases_csv(run_dir, rows)
    typed = typed_rows(rows)
    write_text_atomic(run_dir / "examples.txt", render_examples(shown) + "\n")  # a full disk: the file named
    write_text_atomic(run_dir / "checks.json", json.dumps([r.as_dict() for r in results], indent=2, default=str))
    picture = _drawn(drawn, run_dir / "phases.png") or plot_phases(typed, run_dir / "phases.png")
    markdown = report_markdown(run_dir, results, typed, shown, arithmetic, header, picture)
    write_text_atomic(run_dir / "report.md", markdown)
    return {"report": run_dir / "report.md", "phases": phases, "picture": picture}


def _drawn(drawn: Future[Finished] | None, path: Path) -> Path | None:
    if drawn is None:
        return None
    try:
        finished = drawn.result()
    except Exception:  # noqa: BLE001 - any failure there: the picture is drawn here instead
        return None
    return path if finished.returncode == 0 and path.is_file() else None


def draw_phases_file(run_dir: Path) -> int:
    """``python -m pilot.report <run dir>``: phases.png from the run's phases.csv (exit 0 when drawn,
    1 when there is nothing to draw, 2 when phases.csv cannot be read)."""
    try:
        rows = read_phases_csv(Path(run_dir) / "phases.csv")
    except (OSError, ValueError) as error:  # no such file, not text, not CSV
        print(f"pilot.report: {Path(run_dir) / 'phases.csv'} cannot be read: {error}", file=sys.stderr)
        return 2
    if plot_phases(rows, Path(run_dir) / "phases.png") is None:
        print(f"pilot.report: {Path(run_dir) / 'phases.csv'} holds no measured phase: nothing to draw", file=sys.stderr)
        return 1
    return 0


def print_console(
    results: list[CheckResult], rows: list[dict[str, Any]], shown: list[dict[str, Any]], report_path: Path, verdict: str
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=min(100, max(80, Console().width)))
    console.print(render_examples(shown), markup=False, highlight=False)
    inspect = next((r for r in results if r.step == "inspect"), None)
    if inspect is not None and inspect.details.get("mapping"):
        console.print(
            "class mapping: " + ", ".join(f"{i} -> {n}" for i, n in inspect.details["mapping"].items()),
            markup=False,
            highlight=False,
        )
    styles = {
        "pass": "green",
        "warn": "yellow",
        "fail": "bold red",
        "oom": "bold red",
        "skipped": "dim",
        INCOMPLETE: "bold magenta",
    }
    checks = Table(title="pilot verdicts", show_lines=False, expand=True)
    checks.add_column("step", no_wrap=True)
    checks.add_column("verdict", no_wrap=True)
    checks.add_column("reason", ratio=1)
    for result in results:
        checks.add_row(result.step, f"[{styles[result.verdict]}]{result.verdict}[/]", result.reason)
    console.print(checks)
    typed = typed_rows(rows)
    column = peak_column(typed)
    phases = Table(
        title="phases (" + ("CUDA peak allocated" if column.startswith("mem_") else "process peak RSS") + ")",
        expand=True,
    )
    for name in ("phase", "rank", "s", "peak", "verdict"):
        phases.add_column(name, no_wrap=True)
    phases.add_column("detail", ratio=1)
    for r in typed:
        seconds = f"{r['duration_s']:.3f}" if r["duration_s"] is not None else ""
        phases.add_row(
            r["phase"],
            str(r["rank"]),
            seconds,
            byte_size(r[column]),
            f"[{styles.get(r['verdict'], '')}]{r['verdict']}[/]",
            str(r["detail"]),
        )
    console.print(phases)
    console.print(f"pilot verdict: [{styles[verdict]}]{verdict}[/]  report: {report_path}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m pilot.report <run directory>  (draws phases.png from its phases.csv)", file=sys.stderr)
        sys.exit(2)
    sys.exit(draw_phases_file(Path(sys.argv[1])))
