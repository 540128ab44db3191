"""The tokens a row's loss counts against the target its task declares (``TaskData.expected_targets``), by
value: the same, cut short (by encode's truncation, named where encode reports it), or other tokens."""

from __future__ import annotations

from typing import Any

NO_TARGET = ("no target token in the loss", "no target in the loss")  # a sequence row's; a row's label


def compare_targets(seen: list[int], expected: list[int], instruction_masked: bool) -> str | None:
    """None when the loss sees what the task means; otherwise what went wrong (values only)."""
    if seen == expected:
        return None
    if not seen:
        return NO_TARGET[0]
    n_seen, n_expected = len(seen), len(expected)
    if n_seen < n_expected and expected[:n_seen] == seen:
        return f"target truncated: {n_expected - n_seen} of {n_expected} target tokens cut"
    if n_seen < n_expected and expected[-n_seen:] == seen:  # its end kept: the mask, not truncation, took the start
        return (
            f"target truncated at its start: its first {n_expected - n_seen} of {n_expected} target tokens are not "
            "counted (a prompt mask one token too long? a prompt length measured on the prompt tokenized alone, "
            "whose last token merges with the answer's first when tokenized together? a row truncated from the left?)"
        )
    if n_seen > n_expected and seen[-n_expected:] == expected:
        if instruction_masked:
            return (
                f"instruction tokens counted in the loss: {n_seen - n_expected} tokens before "
                "the answer are trained although the task masks the instruction"
            )
        return None  # the task trains the instruction on purpose (mask_instruction=false)
    return "the tokens in the loss differ from the task's target"


def cut_by_encode(problem: str, item: dict[str, Any]) -> bool:
    """A target missing or cut short where encode says it cut the row (``truncated_tokens``)."""
    return (problem == NO_TARGET[0] or problem.startswith("target truncated")) and item.get("truncated_tokens", 0) > 0


def named_cut(problem: str, item: dict[str, Any], targets: int, side: object) -> str:
    """``problem`` with encode's own account of its cut in place of the guesses at a cause."""
    cut, of = int(item["truncated_tokens"]), item.get("truncated_target_tokens")
    if isinstance(of, int) and of >= targets > 0:
        what = f"all {targets} of its target tokens"
    elif isinstance(of, int) and of > 0:
        what = f"{cut} tokens, {of} of its {targets} target tokens among them"
    else:
        what = f"{cut} tokens, its target among them"
    where = f" from the {side}" if side in ("left", "right") else ""
    keep = "a longer sequence, or cutting the prompt's side, keeps them"
    return f"{problem.split(' (a prompt mask')[0]}: encode's truncation cut {what}{where} ({keep})"


def last_occurrence(tokens: list[int], target: list[int]) -> int | None:
    n = len(target)
    for start in range(len(tokens) - n, -1, -1):
        if tokens[start : start + n] == target:
            return start
    return None
