"""``campaign.journal``: pilot appends the campaign's entries (Markdown) to the file it names. Pointed at a
run's run.json, a data file or a user's notes, appending damaged that file while the run exited 0: such a
file is refused before anything runs (``pilot.rental.journal.not_a_journal`` says why)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from pilot.config.values import select
from pilot.directory_keys import unwritable_reason
from pilot.rental.journal import TITLE, not_a_journal
from pilot.validation.problems import Problem


def check_journal(cfg: DictConfig, problems: list[Problem]) -> None:
    journal = select(cfg, "campaign.journal")
    if not isinstance(journal, str) or not journal.strip():
        return  # none, or empty: said where it is appended to (``journal_problem``)
    if why := not_a_journal(Path(journal)):
        problems.append(
            Problem(
                "campaign.journal",
                journal,
                f"{why}; pilot appends the campaign's entries to this file, which would damage it. Fix: "
                f"campaign.journal=<a new file, e.g. sweeps/journal.md> or an existing journal (its first line "
                f"{TITLE!r}); the key defaults to the PILOT_JOURNAL environment variable when that is set",
            )
        )
        return
    if why := _not_writable(Path(journal)):  # said before the run, not after it as an entry left out
        problems.append(
            Problem(
                "campaign.journal",
                journal,
                f"cannot be appended to ({why}). Fix: name a file you can write (campaign.journal=<file>, or "
                "the PILOT_JOURNAL environment variable it defaults to), or leave campaign.journal out",
            )
        )


def _not_writable(path: Path) -> str | None:
    """Why no journal can be written at ``path``: a directory, or a folder nothing can be made in; None when one can."""
    return f"{path} is a directory" if path.is_dir() else unwritable_reason(path.parent)
