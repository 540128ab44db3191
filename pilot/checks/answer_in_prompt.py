"""A generation row whose prompt already holds its own question and answer (``answer_in_prompt_findings``):
a one-shot demonstration filled from the row itself (``EXS[i]`` where ``EXS[i - 1]`` was meant), a
template that writes the reference into the instruction. The model learns to copy the answer from a few
tokens back: the loss falls, the tiny subset passes, and at inference time there is nothing to copy.

Seen without a model, on the rows as training collates them: the counted target tokens (the end token
aside) *preceded by the same context tokens as where the answer is asked for* (the last ``CONTEXT`` tokens
before the first counted position: the end of the question and its "=>") found again earlier in the
row's masked prompt — in most rows. An extractive answer that appears in a passage does not count: a
passage does not repeat the question's end right before it.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import input_ids_of, micro_batches, row_items
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

CONTEXT = 4  # tokens before the answer that must come with it
REPEATED = 0.5  # of the tokens from an earlier occurrence to the asking point: shared with the question
MIN_ROWS = 10
ROWS = 512  # first training examples read
BATCH = 8
SHARE = 0.8  # of the judged rows


def _asked_again(tokens: list[int], wanted: list[int], asking: list[int]) -> bool:
    """Whether ``wanted`` (context + answer) occurs in ``tokens`` preceded by the same words that ask for
    it now: the asking tokens' common ending with the tokens before that occurrence's answer covers at least
    ``REPEATED`` of the way from the occurrence to the asking point. A demonstration repeats its whole
    question (the row's question, then its answer, then the question again); a record read by key
    (``color=red ... get color=``) shares the key's few tokens with a question much further on."""
    width = len(wanted)
    for at in range(len(tokens) - width + 1):
        if tokens[at : at + width] != wanted:
            continue
        end, shared = at + CONTEXT, 0  # the occurrence's context ends where its answer starts
        while shared < min(end, len(asking)) and tokens[end - 1 - shared] == asking[-1 - shared]:
            shared += 1
        if shared >= REPEATED * (len(asking) - end):
            return True
    return False


def _row_holds_its_answer(ids: list[int], labels: list[int]) -> bool | None:
    """None: not judged (no counted target, or too short a prompt)."""
    counted = [p for p, t in enumerate(labels) if t >= 0 and t != IGNORE_INDEX]
    if not counted:
        return None
    first = counted[0]
    answer = [labels[p] for p in counted][:-1] or [labels[first]]  # the end token aside
    if first < 2 * CONTEXT + len(answer):
        return None
    prompt = ids[: first - CONTEXT]
    # labels on the input positions (the model shifts): the answer starts at ``first``; pre-shifted labels
    # (position t predicts token t + 1): the prompt's last token is ids[first]
    asked = (ids[:first], ids[: first + 1])
    return any(_asked_again(prompt, list(asking[-CONTEXT:]) + answer, list(asking)) for asking in asked)


def answer_in_prompt_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.kind != "generation" or not encoded:
        return [], {}
    judged, holding = 0, []
    for start, batch in micro_batches(task, encoded[:ROWS], BATCH):  # as training collates them
        ids, labels = input_ids_of(batch), batch.get("labels")
        if ids is None or not torch.is_tensor(labels) or labels.shape != ids.shape:
            continue
        chunk = encoded[start : start + BATCH]
        items = row_items(batch, chunk) if ids.shape[0] == len(chunk) else [0] * ids.shape[0]  # packed rows: any
        for row, item in enumerate(items):
            held = _row_holds_its_answer(ids[row].tolist(), labels[row].tolist())
            if held is None:
                continue
            judged += 1
            if held:
                holding.append(start + item)
    details = {"rows_judged": judged, "rows_whose_prompt_holds_their_answer": len(holding)}
    if judged < MIN_ROWS or len(holding) < SHARE * judged:
        return [], details
    return [
        Finding(
            f"the prompt already holds the row's own answer: in {len(holding)} of {judged} training rows the "
            "masked prompt holds the answer's tokens right after the same words that ask for it (a "
            "demonstration filled from the row itself), so the model learns to copy it from a few tokens back "
            "and has nothing to copy at inference time. Fix: fill a demonstration from another row",
            "train",
            holding[0],
        )
    ], details
