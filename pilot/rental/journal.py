"""The campaign's journal (``campaign.journal``, Markdown): decisions and observations, timestamped.

Entries are only ever appended — never rewritten — so the journal reads as the
campaign happened: the plan chosen after a pilot or an estimate, each sweep's
conclusion from its recap (including "the control remains the best choice").
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from pilot.errors import file_in_the_way
from pilot.run_marker import enclosing_run

log = logging.getLogger("pilot")
TITLE = "# Campaign journal"  # a journal's first line: a file without it is not appended to


class NotAJournal(OSError):
    """``campaign.journal`` names a file that appending would damage (``not_a_journal`` says why)."""


def append_entry(path: Path, title: str, lines: Iterable[str]) -> Path:
    """Append an entry to the journal at ``path``; a journal that does not exist yet is started there (its
    folders made), and that is said once: a mistyped campaign.journal or PILOT_JOURNAL shows where it went."""
    path = Path(path)
    if why := not_a_journal(path):
        raise NotAJournal(0, why)
    started = not path.exists() or path.stat().st_size == 0
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    text = "" if not started else f"{TITLE}\n\nAppended by pilot; add your own notes anywhere.\n"
    text += f"\n## {stamp} — {title}\n\n" + "\n".join(lines) + "\n"
    with path.open("a") as handle:  # append only: earlier entries are never touched
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    if started:
        log.info("journal: a new campaign journal started at %s (campaign.journal, or PILOT_JOURNAL)", path.resolve())
    return path


def not_a_journal(path: Path) -> str | None:
    """Why appending the campaign's entries to ``path`` would damage a file that is no journal, or None: a
    file inside a run's directory (its run.json, metrics.jsonl, REPRODUCE.md), an existing file that does
    not start with the journal's title (a data file, a user's notes). New or empty: a journal. (A directory
    cannot be appended to, which damages nothing: ``journal_problem`` says it, the run goes on.)"""
    path = Path(path)
    if run := enclosing_run(path.parent):
        return f"it lies in the directory of the run at {run}, whose files are that run's record"
    try:
        with path.open("rb") as handle:
            head = handle.read(len(TITLE.encode()))
    except OSError:  # IsADirectoryError too
        return None  # new (or unreadable: appending says why)
    if head and head != TITLE.encode():
        return f"{path} exists and is not a campaign journal (its first line is not {TITLE!r})"
    return None


def journal_problem(path: object, error: OSError) -> str:
    """What to say when the journal cannot be appended to: the key, the value, why, and the fix. The
    journal is a notebook: its failure never fails the run, whose own files are written."""
    shown = str(path)
    blocking = file_in_the_way(Path(shown).parent) if shown.strip() else None
    why = "it is empty" if not shown.strip() else f"{blocking} is a file, not a directory" if blocking else None
    why = why or error.strerror or str(error)
    return (
        f"campaign.journal={shown!r} cannot be appended to ({why}); this entry is not in it. Fix: name a file you "
        "can write (campaign.journal=<file>, or the PILOT_JOURNAL environment variable it defaults to)."
    )
