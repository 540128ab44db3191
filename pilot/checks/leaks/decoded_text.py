"""Token ids that decode to other words than their example's text in a later split (``decoded_text_warnings``):
a vocabulary or tokenizer fitted on each split's own rows (``fit_on_texts`` per data frame, ids by frequency),
so validation's ids index training's vocabulary at other words. The token frequencies barely move (ids by rank
look alike in every split): the token skew check does not see it; the text does.

Per split, at most ``PER_SPLIT`` examples: the task's ``decode_tokens`` of each row's real tokens, each piece
stripped of word markers (``Ġ``, ``▁``, ``##``) and normalised, looked up in the example's own text fields
(normalised, spaces removed); an example reads as its text when ``FOUND`` of its pieces are there. Warned when
training reads as its text (``TRAIN_MATCHES`` of its examples) and a later split does far less (``GAP`` lower)."""

from __future__ import annotations

from typing import Any

from pilot.checks.leaks.model_views import ModelViews
from pilot.checks.leaks.texts import normalise_text, text_fields
from pilot.checks.leaks.token_leak import real_tokens, token_key
from pilot.checks.result import Finding
from pilot.data.task import TaskData

PER_SPLIT = 200
FOUND = 0.9
TRAIN_MATCHES, GAP = 0.8, 0.4
MARKERS = ("Ġ", "▁", "##", "Ċ")


def _piece(text: str) -> str:
    for marker in MARKERS:
        text = text.replace(marker, "")
    special = len(text) > 2 and text[0] in "<[" and text[-1] in ">]"
    return "" if special else normalise_text(text).replace(" ", "")


def _reads_as_text(task: TaskData, views: ModelViews, key: str, fields: list[str], split: str) -> tuple[float, int]:
    """(share of the split's examples whose decoded pieces are found in their own text, examples read)."""
    matched = read = 0
    for example, row in list(zip(views.splits[split], views.inputs[split]))[:PER_SPLIT]:
        pieces = [p for p in (_piece(str(t)) for t in task.decode_tokens(real_tokens(row, key))) if p]
        if len(pieces) < 3:
            continue
        text = normalise_text(" ".join(str(example.fields.get(f, "")) for f in fields)).replace(" ", "")
        read += 1
        matched += sum(piece in text for piece in pieces) >= FOUND * len(pieces)
    return (matched / read if read else 0.0), read


def decoded_text_warnings(task: TaskData, views: ModelViews) -> tuple[list[Finding], dict[str, Any]]:
    key, fields = (token_key(views), text_fields(task)) if task.decode_tokens is not None else (None, [])
    order = views.order()
    if key is None or not fields or "train" not in order:
        return [], {}
    train, read = _reads_as_text(task, views, key, fields, "train")
    report = {"text_fields": fields, "train_reads_as_text": round(train, 3)}
    if read < 20 or train < TRAIN_MATCHES:
        return [], report
    warnings = []
    for split in order[1:]:
        share, count = _reads_as_text(task, views, key, fields, split)
        report[f"{split}_reads_as_text"] = round(share, 3)
        if count >= 20 and share <= train - GAP:
            warnings.append(
                Finding(
                    f"{split}'s token ids decode to other words than its text: {share:.0%} of its examples read as "
                    f"their own text ({', '.join(fields)}) through decode_tokens, against {train:.0%} of training's",
                    split,
                    detail=f"{split} was encoded with another vocabulary than training (a tokenizer or word index "
                    "fitted on each split's own rows): its ids index training's embeddings at other words. Fix: fit "
                    "the vocabulary on the training split once and encode every split with it",
                )
            )
    return warnings, report
