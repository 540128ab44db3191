"""Answers that never end on a stop token (a generation task whose rows train an answer after a masked
prompt): a warning from the data alone.

Fine-tuned to answer, a model learns to stop only where a stop token (``<eos>``, a chat template's
end of turn) is a target at the end of each answer. Written without it (the answer tokenised with
``add_special_tokens=False`` and nothing appended), every row ends on the answer's own last token, and
the model keeps generating past every answer. What shows it without knowing the stop token: the last
counted target of the training rows is the same token in most rows when one is appended, and many
different tokens when none is. Answers of a few words each (class names) end on few tokens and are not
judged. The same holds for a seq2seq task's targets (labels of their own, no prompt). And where the
stop token ends most rows but the others all stop at the longest target length, the targets were cut
after the stop token was added (``(ids + [eos])[:16]``): long answers never learn to stop. And where the
token that ends most rows is also a target *inside* most of their answers (``'\\n'`` chosen as the stop
token of multi-line answers), generation stops at its first occurrence: the answers are cut short.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from pilot.checks.loss_probe import SEQ2SEQ
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData

MIN_ROWS = 10
PROMPTED = 0.8  # of rows with a masked prompt (an answer trained after it)
PROMPT_AT_LEAST = 3  # masked positions before a row's first counted target
SHARE = 0.5  # a stop token ends at least this share of the rows
DISTINCT = 5  # fewer distinct last targets: short answers from a closed set, not judged
CUT = 0.15  # of the rows, at least, ending without the stop token, all at the longest target length


def token_list(value: Any) -> list[int] | None:
    """One example's token ids or labels as a list of ints (a 1-D integer tensor or a list); None otherwise."""
    if torch.is_tensor(value):
        return value.tolist() if value.dim() == 1 and not value.is_floating_point() else None
    return value if isinstance(value, list) and all(isinstance(v, int) for v in value) else None


def _shown(task: TaskData, token: int) -> str:
    return task.decode_tokens([token])[0] if task.decode_tokens is not None else f"id {token}"


def _last_targets(encoded: list[dict[str, Any]]) -> tuple[list[int], int, list[int]]:
    """Each row's last counted target, how many rows train after a masked prompt, each row's count of targets."""
    lasts, prompted, lengths = [], 0, []
    for item in encoded:
        labels = token_list(item.get("labels"))
        if labels is None:
            return [], 0, []
        counted = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
        if counted:
            lasts.append(labels[counted[-1]])
            prompted += counted[0] >= PROMPT_AT_LEAST
            lengths.append(len(counted))
    return lasts, prompted, lengths


def _cut_after_the_stop(task: TaskData, lasts: list[int], lengths: list[int], token: int) -> list[Finding]:
    """Every row the stop token does not end stops at the longest target length (and they are many)."""
    others = [length for last, length in zip(lasts, lengths) if last != token]
    longest = max(lengths)
    if len(others) < max(3, CUT * len(lasts)) or set(others) != {longest}:
        return []
    shown = _shown(task, token)
    return [
        Finding(
            f"targets cut after their stop token was added: {len(others)} of {len(lasts)} training rows end without "
            f"{shown!r}, which ends every other row, and each of them has exactly {longest} targets, the longest: "
            f"(ids + [stop])[:{longest}] drops it, so long answers never learn to stop. Fix: cut the ids to "
            f"{longest - 1} and then append the stop token"
        )
    ]


def _inside_the_answers(task: TaskData, encoded: list[dict[str, Any]], token: int) -> list[Finding]:
    """The stop token also a target inside most answers that it ends, the answer's next token trained right
    after it (a multi-turn row, whose turns each end on it after a masked one, is not): generation stops there."""
    ended, inside = 0, 0
    for item in encoded:
        labels = token_list(item.get("labels")) or []
        trained = [label >= 0 and label != IGNORE_INDEX for label in labels]
        counted = [label for label, kept in zip(labels, trained) if kept]
        if counted and counted[-1] == token:
            ended += 1  # inside: the answer goes on right after it (a later turn after a masked one does not)
            inside += any(  # and goes on with another token (a doubled stop token is doubled_marker's)
                labels[t] == token and trained[t] and trained[t + 1] and labels[t + 1] != token
                for t in range(len(labels) - 1)
            )
    if ended < MIN_ROWS or inside < SHARE * ended:
        return []
    shown = _shown(task, token)
    if (prompts := _prompts_trained(encoded, token)) >= SHARE * inside:  # what follows the stop token: a prompt
        marker = _marker(encoded[0]) or []
        said = "".join(task.decode_tokens(marker)) if task.decode_tokens is not None and marker else f"ids {marker}"
        return [
            Finding(
                f"a later turn's prompt is trained: in {prompts} training rows the text trained after the stop token "
                f"{shown!r} holds {said!r}, the tokens that end the masked prompt before the first answer, so a "
                "user turn (its instruction and the answer marker) is trained as if the model wrote it. Fix: mask "
                "every prompt of the row (labels -100 over each user turn), not only the first"
            )
        ]
    return [
        Finding(
            f"the stop token is also inside the answers: {shown!r} ends {ended} training rows and is a target "
            f"before the end in {inside} of them, so generation stops at its first occurrence and those answers "
            "come out cut. Fix: a stop token no answer holds (the tokenizer's eos, a chat template's end of turn)"
        )
    ]


MARKER = 3  # masked tokens right before the first answer: the prompt's end (a chat template's answer marker)


def _marker(item: dict[str, Any]) -> list[int] | None:
    """The ``MARKER`` input ids right before the row's first counted target (masked: the prompt's end)."""
    ids, labels = token_list(item.get("input_ids")), token_list(item.get("labels"))
    if ids is None or labels is None or len(ids) != len(labels):
        return None
    first = next((t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX), None)
    if first is None or first < MARKER or any(label >= 0 for label in labels[first - MARKER : first]):
        return None
    return ids[first - MARKER : first]


def _prompts_trained(encoded: list[dict[str, Any]], token: int) -> int:
    """Rows whose ids trained after a trained stop token hold the row's own prompt end (``_marker``): a
    later turn's prompt left in the loss."""
    rows = 0
    for item in encoded:
        ids, labels, marker = token_list(item.get("input_ids")), token_list(item.get("labels")), _marker(item)
        if marker is None:
            continue
        trained = [label >= 0 and label != IGNORE_INDEX for label in labels]
        stops = [t for t in range(len(labels)) if labels[t] == token and trained[t]]
        after = [ids[t] for t in range(stops[0] + 1, len(ids)) if trained[t]] if stops else []
        rows += any(after[t : t + MARKER] == marker for t in range(len(after) - MARKER + 1))
    return rows


def stop_token_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    seq2seq = task.kind == SEQ2SEQ  # decoder targets of their own: no prompt before them
    if (task.convention != NEXT_TOKEN and not seq2seq) or not encoded:
        return [], {}
    lasts, prompted, lengths = _last_targets(encoded[:1000])
    if len(lasts) < MIN_ROWS or (prompted < PROMPTED * len(lasts) and not seq2seq):
        return [], {}
    (token, ending), distinct = Counter(lasts).most_common(1)[0], len(set(lasts))
    details = {"rows": len(lasts), "most_common_last_target": token, "rows_it_ends": ending, "distinct": distinct}
    if ending >= 3 and (cut := _cut_after_the_stop(task, lasts, lengths, token)):  # every shorter row ends on it
        return cut, details
    if ending >= SHARE * len(lasts) and (inside := _inside_the_answers(task, encoded[:1000], token)):
        return inside, details
    if ending >= SHARE * len(lasts) or distinct < DISTINCT:
        return [], details
    shown = _shown(task, token)
    return [
        Finding(
            f"no stop token ends the answers: the most common last target ({shown!r}) ends {ending} of "
            f"{len(lasts)} training rows, which end on {distinct} different tokens, so the model never learns "
            "where an answer ends and keeps generating past it. Fix: append the tokenizer's eos (or the chat "
            "template's end-of-turn token) to every answer, in input_ids and in labels"
        )
    ], details
