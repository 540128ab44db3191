"""The campaign's journal (``campaign.journal``, Markdown): decisions and observations, timestamped.

Entries are only ever appended — never rewritten — so the journal reads as the
campaign happened: the plan chosen after a pilot or an estimate, each sweep's
conclusion from its recap (including "the control remains the best choice").
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path


def append_entry(path: Path, title: str, lines: Iterable[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    text = "" if path.exists() else "# Campaign journal\n\nAppended by pilot; add your own notes anywhere.\n"
    text += f"\n## {stamp} — {title}\n\n" + "\n".join(lines) + "\n"
    with path.open("a") as handle:  # append only: earlier entries are never touched
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return path
