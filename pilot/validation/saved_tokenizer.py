"""The tokenizer saved with a model is the data's (``check_saved_tokenizer``).

A model folder (``model.path``) that holds the tokenizer it was saved with, beside a ``data.tokenizer`` read
from elsewhere: a tokenizer from another model with the same size and special ids passed every check, and the
run trained the model's embeddings on other ids ("hello" was [74, 71, 78, 78, 81] for the model, [74, 314, 78,
81] for the data). Compared by vocabulary: every id both tokenizers hold must be the same token in both. One
that adds tokens to the other (new special tokens, embeddings resized) agrees.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pilot.config.tokenizer import load_tokenizer
from pilot.config.values import select
from pilot.validation.problems import Problem

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _saved_with(path: Any) -> Path | None:
    """The model folder, where it holds a tokenizer of its own."""
    folder = Path(str(path)).expanduser()
    return folder if any((folder / name).is_file() for name in TOKENIZER_FILES) else None


def _vocabulary(path: Path | str) -> dict[str, int] | None:
    try:
        return dict(load_tokenizer(str(path)).get_vocab())
    except Exception:  # noqa: BLE001 - a tokenizer that does not load is its own check's to say
        return None


def check_saved_tokenizer(cfg, problems: list[Problem]) -> None:
    if not str(select(cfg, "model._target_") or "").endswith("hf_causal_lm.build"):
        return
    path, tokenizer = select(cfg, "model.path"), select(cfg, "data.tokenizer")
    saved = _saved_with(path) if path else None
    if saved is None or not isinstance(tokenizer, str) or not tokenizer:
        return
    if os.path.realpath(saved) == os.path.realpath(Path(tokenizer).expanduser()):
        return
    model_vocab, data_vocab = _vocabulary(saved), _vocabulary(tokenizer)
    if not model_vocab or data_vocab is None:
        return
    model_ids = {index: token for token, index in model_vocab.items()}
    data_ids = {index: token for token, index in data_vocab.items()}
    other = sorted(index for index in model_ids.keys() & data_ids.keys() if model_ids[index] != data_ids[index])
    if not other:
        return
    index = other[0]
    problems.append(
        Problem(
            "data.tokenizer",
            tokenizer,
            f"it is not the tokenizer saved with the model in model.path={path}: {len(other)} of the "
            f"{len(model_ids.keys() & data_ids.keys())} ids both hold are other tokens (id {index} is "
            f"{model_ids[index]!r} for the model, {data_ids[index]!r} here), so the model's embeddings would be "
            f"trained on other tokens' ids. Fix: data.tokenizer={path} (the tokenizer saved with the model)",
        )
    )
