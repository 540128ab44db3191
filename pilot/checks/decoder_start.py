"""Part of ``inspect``: does the decoder start on the token the model starts it with? An encoder-decoder
begins generating from ``model.config.decoder_start_token_id`` (T5: the pad token; BART: ``</s>``). A
collate that builds ``decoder_input_ids`` itself with another start (T5's shifted right behind ``</s>``
or ``<s>``, a BART recipe reused for T5) trains every first step on an input that generation never
gives: the first token is predicted from a context the model never sees again.

Read from the collated training batches (the first positions of ``decoder_input_ids``, where the
collate builds them: a model given only labels builds its own, with its own start) against the
model's config; a start that is not the same in nearly every row (left-padded decoder inputs) is not
judged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from pilot.checks.loss_probe import micro_batches
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 64  # first training examples read
MIN_ROWS = 8
SAME = 0.9  # of the rows starting on one token: the collate's start token


def decoder_start_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    start = getattr(getattr(model, "config", None), "decoder_start_token_id", None)
    if not isinstance(start, int) or not encoded:
        return [], {}
    firsts: list[int] = []
    for _, batch in micro_batches(task, encoded[:ROWS], micro_batch):
        decoder = batch.get("decoder_input_ids")
        if torch.is_tensor(decoder) and decoder.dim() == 2 and decoder.shape[1] and not decoder.is_floating_point():
            firsts += decoder[:, 0].tolist()
    if len(firsts) < MIN_ROWS:
        return [], {}
    token, rows = Counter(firsts).most_common(1)[0]
    details = {"model_start": start, "collated_start": token, "rows": len(firsts), "rows_starting_so": rows}
    if rows < SAME * len(firsts) or token == start:
        return [], details
    shown = task.decode_tokens([token, start]) if task.decode_tokens is not None else None
    named = f"{token} ({shown[0]!r})" if shown else str(token)
    theirs = f"{start} ({shown[1]!r})" if shown else str(start)
    return [
        Finding(
            f"the decoder starts on token {named} in {rows} of {len(firsts)} collated rows, but "
            f"{type(model).__name__} starts generating from {theirs} (model.config.decoder_start_token_id): every "
            "answer's first token is trained from a start generation never gives. Fix: build decoder_input_ids "
            "with the model's own start (model.prepare_decoder_input_ids_from_labels(labels=...), or "
            "shift_tokens_right(labels, pad_token_id, model.config.decoder_start_token_id)), or pass labels only",
            "train",
        )
    ], details
