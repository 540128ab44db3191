"""The model's special ids are the data's tokenizer's (``check_special_ids``).

``model=hf_causal_lm`` takes ``pad_token_id``, ``bos_token_id`` and ``eos_token_id`` from the data
(``${data.pad_token_id}`` ...: the tokenizer's own). A beginning or end of text set otherwise on the
model (``model.config.eos_token_id=7``), or in a saved model's ``config.json`` (``model.path``), makes the
model start or stop on a token the data never uses so (the export's end of text a word): refused
before anything runs, naming both values. A pad id set otherwise is the padding row of the model's
embedding, which the inspect step judges on the data (``padding_row``: real tokens reading a row that
never trains); RoBERTa-like models need theirs for their position tables. A saved model's pad id that is
the data's bos is refused here (every example reads that row, and mode=train has no inspect step).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pilot.config.values import select
from pilot.validation.problems import Problem

SPECIAL = ("bos", "eos")


def _data_ids(cfg) -> dict[str, Any]:
    """The data's special ids, where the data names them (resolved; unresolvable ones left out)."""
    found = {}
    for which in SPECIAL:
        try:
            if select(cfg, "data") is not None and f"{which}_token_id" in cfg.data:
                found[which] = cfg.data[f"{which}_token_id"]
        except Exception:  # noqa: BLE001 - an unresolvable tokenizer is reported by its own check
            continue
    return found


def _saved_ids(path: Any) -> dict[str, Any] | None:
    config = Path(str(path)).expanduser() / "config.json"
    try:
        saved = json.loads(config.read_text())
    except (OSError, ValueError):
        return None  # a missing or unreadable directory is check_model_path's to say
    return {which: saved.get(f"{which}_token_id") for which in (*SPECIAL, "pad")}


def _agrees(model_id: Any, data_id: Any) -> bool:
    """A tokenizer without that token (Qwen2/3's: no bos, where config.json names one) never writes it: no
    sign of another tokenizer. A saved model may list several ends of text."""
    if data_id is None:
        return True
    return data_id in model_id if isinstance(model_id, list) else model_id == data_id


def check_special_ids(cfg, problems: list[Problem]) -> None:
    data = _data_ids(cfg)
    if not data or not str(select(cfg, "model._target_") or "").endswith("hf_causal_lm.build"):
        return
    path = select(cfg, "model.path")
    if path:
        saved = _saved_ids(path) or {}
        _check_saved_padding(cfg, path, saved.pop("pad", None), data, problems)
        disagree = [
            w for w, model_id in saved.items() if w in data and model_id is not None and not _agrees(model_id, data[w])
        ]
        if not disagree:
            return
        said = ", ".join(f"{w}_token_id={saved[w]} where the data's tokenizer says {data[w]}" for w in disagree)
        if "tokenizer" in cfg.data:  # the data reads a tokenizer of the user's: that is the setting to change
            key, value, fix = (
                "data.tokenizer",
                select(cfg, "data.tokenizer"),
                "data.tokenizer=<the tokenizer saved with this model>",
            )
        else:  # the data's own built-in tokenizer (data=instructions: bytes)
            key, value = "data", select(cfg, "data._target_")
            fix = "data=hf_instructions data.tokenizer=<the tokenizer saved with this model>, or a model made for this data"
        problems.append(
            Problem(
                key,
                value,
                f"the saved model in model.path={path} says {said}: it was made with another tokenizer. Fix: {fix}",
            )
        )
        return
    for which, data_id in data.items():
        key = f"model.config.{which}_token_id"
        model_id = select(cfg, key)
        if select(cfg, "model.config") is not None and model_id != data_id:
            problems.append(
                Problem(
                    key,
                    model_id,
                    f"the data's tokenizer says {which}_token_id={data_id}: the model would take another token "
                    f"for <{which}> (the export's too). Fix: leave it at ${{data.{which}_token_id}} (here {data_id})",
                )
            )


def _check_saved_padding(cfg, path: Any, saved: Any, data: dict[str, Any], problems: list[Problem]) -> None:
    """A saved model whose ``pad_token_id`` (``saved``) is the data's bos (a config.json made with another
    tokenizer): its embedding keeps that row as padding (no gradient, zeros when made from scratch) while every
    example starts with it. The pilot's inspect step says it on the data; a mode=train run trained on without a
    word (an outside examination)."""
    try:
        pad = cfg.data.get("pad_token_id") if select(cfg, "data") is not None else None
    except Exception:  # noqa: BLE001 - an unresolvable tokenizer is reported by its own check
        return
    if isinstance(saved, int) and saved == data.get("bos") and saved != pad:  # an eos: read by no counted position
        problems.append(
            Problem(
                "model.path",
                str(path),
                f"its config.json says pad_token_id={saved}, which the data's tokenizer writes as <bos> in every "
                f"example (its pad is {pad}): the embedding keeps row {saved} as padding, which never trains. Fix: "
                f"pad_token_id={pad if pad is not None else 'null'} in {path}/config.json (the tokenizer the data "
                "reads), or data.tokenizer=<the tokenizer saved with this model>",
            )
        )
