"""A tokenizer saved in a local directory (``data.tokenizer``), loaded once per process, and its size:
the ``${pilot.tokenizer_size:${data.tokenizer}}`` resolver gives the model its vocabulary at compose
time, ``${pilot.tokenizer_id:${data.tokenizer},pad}`` its pad (bos, eos) id. Only local files are read (``local_files_only``); ``transformers`` is imported on first use,
so runs that name no tokenizer never pay for it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

FIX = (
    "Fix: data.tokenizer=<the directory a tokenizer was saved to with save_pretrained, holding "
    "tokenizer.json or tokenizer_config.json>; `python scripts/make_tokenizer.py DIR` makes a small one."
)


def tokenizer_problem(path: Any) -> str | None:
    """Why ``path`` is not a tokenizer directory (relative paths start from where pilot runs), or None."""
    if not path:
        return f"no tokenizer directory given. {FIX}"
    where = Path(str(path)).expanduser().resolve()
    if not where.is_dir():
        return f"{'is a file' if where.exists() else 'no such directory'} ({where}). {FIX}"
    if not any((where / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        return f"{where} holds no tokenizer.json nor tokenizer_config.json. {FIX}"
    return None


@functools.lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Any:
    """``AutoTokenizer.from_pretrained(path)`` from local files only; ValueError naming data.tokenizer."""
    problem = tokenizer_problem(path)
    if problem:
        raise ValueError(f"data.tokenizer={path}: {problem}")
    from transformers import AutoTokenizer  # optional extra `pilot[hf]`: imported only when a run names one

    return AutoTokenizer.from_pretrained(str(Path(path).expanduser()), local_files_only=True)


SPECIAL = ("pad", "bos", "eos")


def tokenizer_id(path: str, which: str) -> int | None:
    """The tokenizer's ``pad``, ``bos`` or ``eos`` id (``tokenizer.pad_token_id`` ...; None where it
    has none): the model's config takes the special ids of the tokenizer its data is encoded with."""
    if which not in SPECIAL:
        raise ValueError(f"pilot.tokenizer_id: {which!r} is not one of {', '.join(SPECIAL)}")
    return getattr(load_tokenizer(str(path)), f"{which}_token_id")


def tokenizer_size(path: str) -> int:
    """``len(tokenizer)``: every id it can produce, added tokens included (the model's vocab_size)."""
    return len(load_tokenizer(str(path)))
