"""Instruction generation task: the instruction is input, only the answer is trained.

Each example becomes ``<bos> instruction "\n=> " answer <eos>`` in byte tokens.
``labels`` is aligned with ``input_ids``; positions that must not count in the
loss (bos, instruction, padding) hold -100. The loss predicts token t from the
tokens before it (the shift happens in ``loss_sum``).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from pilot.config.values import enum_value
from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Batch, Example, TaskData, logits_of
from pilot.errors import PilotError

EMBEDDED_PATH = Path(__file__).with_name("instructions.jsonl")
SEPARATOR = "\n=> "


def load_examples(path: str | None) -> list[Example]:
    """One example per line of a JSON Lines file (``instruction``, ``answer``; ``group``, ``time``
    optional); a line that is not such an object is refused naming the file, the line and the fix."""
    source = Path(path) if path else EMBEDDED_PATH
    examples = []
    with source.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            row = _row(source, number, line)
            examples.append(
                Example(
                    index=len(examples),
                    group=str(row.get("group", len(examples))),
                    fields={"instruction": row["instruction"], "answer": row["answer"]},
                    time=row.get("time"),
                )
            )
    if not examples:
        raise PilotError(
            f"data.path={source}: no example in it (empty, or blank lines only). Fix: one JSON object per line, "
            '{"instruction": ..., "answer": ...}.'
        )
    return examples


def _row(source: Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise PilotError(
            f"data.path={source}: line {number} is not JSON ({error.msg} at column {error.colno}). Fix: one JSON "
            'object per line, {"instruction": ..., "answer": ...}.'
        ) from None
    missing = [key for key in ("instruction", "answer") if not isinstance(row, dict) or key not in row]
    if missing:
        raise PilotError(
            f"data.path={source}: line {number} has no {' and no '.join(repr(k) for k in missing)} field"
            f"{f' (its fields: {sorted(row)})' if isinstance(row, dict) else ''}. Fix: every line holds "
            '"instruction" and "answer" (and optionally "group", "time").'
        )
    for key in ("instruction", "answer"):
        if not isinstance(row[key], str):
            kind = {bool: " (true/false)", int: " (a number)", float: " (a number)", list: " (a list)"}.get(
                type(row[key]), " (an object)" if isinstance(row[key], dict) else ""
            )
            raise PilotError(
                f"data.path={source}: line {number}: {key!r} is {json.dumps(row[key])[:80]}{kind}, not a string. "
                f'Fix: write it as text ("{key}": "..."), or leave the line out.'
            )
    return row


def encode_example(example: Example, max_len: int, truncation_side: str, mask_instruction: bool) -> dict[str, Any]:
    prompt = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + SEPARATOR)
    answer = tok.encode(example.fields["answer"]) + [tok.EOS_ID]
    return pack_example(example.index, prompt, answer, max_len, truncation_side, mask_instruction)


def pack_example(
    index: int, prompt: list[int], answer: list[int], max_len: int, truncation_side: str, mask_instruction: bool
) -> dict[str, Any]:
    """``prompt + answer`` token ids as one encoded example: labels -100 on the first token (nothing
    predicts it) and on the prompt when ``mask_instruction``; cut to ``max_len`` on ``truncation_side``."""
    ids = prompt + answer
    in_loss = [not mask_instruction] * len(prompt) + [True] * len(answer)
    in_loss[0] = False  # nothing predicts the first token
    cut = max(0, len(ids) - max_len)
    if truncation_side == "left":
        kept = slice(cut, len(ids))
    else:
        kept = slice(0, len(ids) - cut)
    dropped = [i for i in range(len(ids)) if not (kept.start <= i < kept.stop)]
    answer_start = len(prompt)
    ids, in_loss = ids[kept], in_loss[kept]
    labels = [t if keep else IGNORE_INDEX for t, keep in zip(ids, in_loss)]
    if truncation_side == "left" and cut:
        labels[0] = IGNORE_INDEX  # the new first token has no context to be predicted from
    return {
        "index": index,
        "input_ids": torch.tensor(ids, dtype=torch.long),
        "labels": torch.tensor(labels, dtype=torch.long),
        "truncated_tokens": cut,
        "truncated_target_tokens": sum(1 for i in dropped if i >= answer_start),
        "answer_tokens": len(answer),
    }


def check_special_ids(given: dict[str, Any], actual: dict[str, Any], whose: str, value: str = "{actual}") -> None:
    """``data.pad_token_id`` (bos, eos) must be the tokenizer's own id, which the model's config reads
    (its padding row, the export's end of text); ValueError naming the key, both ids and the fix
    (leave the key at ``value``, formatted with ``which`` and ``actual``)."""
    for which, given_id in given.items():
        if given_id != actual[which]:
            keep = value.format(which=which, actual=actual[which])
            raise ValueError(
                f"data.{which}_token_id={given_id} but {whose} {which} id is {actual[which]}. "
                f"Fix: leave data.{which}_token_id at {keep}."
            )


def make_collate(padding_side: str, pad_id: int = tok.PAD_ID):
    def collate(items: list[dict[str, Any]]) -> Batch:
        width = max(len(item["input_ids"]) for item in items)
        input_ids = torch.full((len(items), width), pad_id, dtype=torch.long)
        labels = torch.full((len(items), width), IGNORE_INDEX, dtype=torch.long)
        attention_mask = torch.zeros((len(items), width), dtype=torch.bool)
        for row, item in enumerate(items):
            n = len(item["input_ids"])
            cols = slice(width - n, width) if padding_side == "left" else slice(0, n)
            input_ids[row, cols] = item["input_ids"]
            labels[row, cols] = item["labels"]
            attention_mask[row, cols] = True
        return {
            "input_ids": input_ids,
            "labels": labels,
            "attention_mask": attention_mask,
            "index": torch.tensor([item["index"] for item in items]),
        }

    return collate


def synthetic_batch(micro_batch: int, seq_len: int, token_ids: int = 256) -> Batch:
    """``micro_batch`` sequences of ``seq_len`` tokens drawn from ids below ``token_ids`` (the 256
    bytes by default), no padding, every next token in the loss."""
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, token_ids, (micro_batch, seq_len), generator=generator)
    labels = input_ids.clone()
    labels[:, 0] = IGNORE_INDEX
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": torch.ones((micro_batch, seq_len), dtype=torch.bool),
        "index": torch.arange(micro_batch),
    }


def forward(model, batch: Batch):
    return model(batch["input_ids"], attention_mask=batch["attention_mask"])


def left_padded_forward(model, batch: Batch):
    """``forward`` for left padding: a model that takes ``position_ids`` (transformers' models) gets each
    real token's own position, counted from its row's first real token, as generation does; with the
    default positions a model with learned absolute positions (GPT-2, OPT) reads its padding."""
    mask = batch["attention_mask"]
    if _takes_position_ids(model):
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        return model(batch["input_ids"], attention_mask=mask, position_ids=positions)
    return model(batch["input_ids"], attention_mask=mask)


def forward_for(padding_side: str):
    return left_padded_forward if padding_side == "left" else forward


def _takes_position_ids(model) -> bool:
    try:
        return "position_ids" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _shifted(logits: torch.Tensor, labels: torch.Tensor):
    return logits[:, :-1, :], labels[:, 1:]


def loss_sum(output, batch: Batch) -> torch.Tensor:
    logits, targets = _shifted(logits_of(output), batch["labels"])
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def target_count(batch: Batch) -> torch.Tensor:
    return (batch["labels"][:, 1:] != IGNORE_INDEX).sum()


def predict(output, batch: Batch) -> torch.Tensor:
    """Greedy next-token prediction at every position (teacher forcing), aligned with labels."""
    predicted = torch.full_like(batch["labels"], IGNORE_INDEX)
    predicted[:, 1:] = logits_of(output)[:, :-1, :].argmax(dim=-1)
    return predicted


def make_task(
    path: str | None = None,
    max_len: int = 96,
    padding_side: str = "right",
    truncation_side: str = "left",
    mask_instruction: bool = True,
    vocab_size: int = tok.VOCAB_SIZE,
    split=None,
    pad_token_id: int = tok.PAD_ID,
    bos_token_id: int = tok.BOS_ID,
    eos_token_id: int = tok.EOS_ID,
) -> TaskData:
    if vocab_size != tok.VOCAB_SIZE:
        raise ValueError(
            f"data.vocab_size={vocab_size} but the byte tokenizer has {tok.VOCAB_SIZE} tokens. "
            f"Fix: leave data.vocab_size at {tok.VOCAB_SIZE}."
        )
    given = {"pad": pad_token_id, "bos": bos_token_id, "eos": eos_token_id}
    check_special_ids(given, {"pad": tok.PAD_ID, "bos": tok.BOS_ID, "eos": tok.EOS_ID}, "the byte tokenizer's")
    examples = load_examples(path)
    splits = make_splits(examples, split)
    padding_side, truncation_side = enum_value(padding_side), enum_value(truncation_side)
    return TaskData(
        kind="generation",
        splits=splits,
        encode=lambda e: encode_example(e, max_len, truncation_side, mask_instruction),
        collate=make_collate(padding_side),
        loss_sum=loss_sum,
        target_count=target_count,
        predict=predict,
        forward=forward_for(padding_side),
        expected_targets=lambda e: tok.encode(e.fields["answer"]) + [tok.EOS_ID],
        decode_tokens=tok.token_strings,
        synthetic_batch=synthetic_batch,
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "max_len": max_len,
            "padding_side": padding_side,
            "truncation_side": truncation_side,
            "mask_instruction": mask_instruction,
            "target_unit": "token",
        },
    )
