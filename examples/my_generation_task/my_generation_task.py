"""Template to copy: your own *generation* task and model, plugged into pilot through Hydra ``_target_``.

Task: spell a number in words ("spell 42" -> "forty-two"). Numbers 0..999, generated locally: no
download. Each example's group is its ten (40-49, 340-349, ...), so the group split keeps
numbers that share their spelling but for the last word in one split. Configs: ``conf/data/my_text.yaml`` (-> ``make_task``) and
``conf/model/my_decoder.yaml`` (-> ``GRUDecoder``). Run from the repo root:
    PYTHONPATH=examples/my_generation_task python -m pilot \
        hydra.searchpath=[file://examples/my_generation_task/conf] model=my_decoder data=my_text

The generation contract, in the order the pilot checks it:
- ``encode(example)`` -> ``input_ids`` (1-D) and ``labels`` aligned with them: ``labels[t]`` is
  token t when the loss should predict it, -100 when not (bos, the prompt);
- ``collate(items)`` -> ``input_ids``, ``labels``, ``attention_mask`` (1 = real token), ``index``,
  padded on one side alike (labels padded with -100);
- ``loss_sum`` shifts (output t-1 predicts label t) and returns a *sum*; ``target_count`` counts the
  labels it sums; ``predict`` gives predictions aligned with ``labels``;
- ``expected_targets(example)`` -> the token ids you *mean* to train (the answer and <eos>), and
  ``decode_tokens`` to show them; ``target_position="next_token"`` (the default for kind
  "generation") and ``labels_shifted=False`` say where a target sits. If your collate shifts the
  labels itself (``labels[t]`` = token t+1), declare ``labels_shifted=True`` and do not shift in
  ``loss_sum``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Batch, Example, TaskData

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split()
)
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spell(number: int) -> str:
    """0..999 in English words: 342 -> 'three hundred forty-two'."""
    hundreds, rest = divmod(number, 100)
    words = [f"{ONES[hundreds]} hundred"] if hundreds else []
    if rest or not hundreds:
        words.append(ONES[rest] if rest < 20 else TENS[rest // 10] + (f"-{ONES[rest % 10]}" if rest % 10 else ""))
    return " ".join(words)


def make_task(
    max_number: int = 999,  # numbers 0..max_number, one example each
    prompt: str = "spell ",  # the instruction before the number
    padding_side: str = "right",  # where collate pads (left works the same)
    split=None,
) -> TaskData:  # data.split from the config (by, val_fraction, ...)
    examples = [
        Example(index=n, group=f"tens-{n // 10}", fields={"instruction": f"{prompt}{n}", "answer": spell(n)})
        for n in range(max_number + 1)
    ]

    def answer_ids(example: Example) -> list[int]:  # what the loss must train: the answer and <eos>
        return tok.encode(example.fields["answer"]) + [tok.EOS_ID]

    def encode(example: Example) -> dict[str, Any]:
        prompt_ids = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + "\n")
        ids = prompt_ids + answer_ids(example)
        labels = [IGNORE_INDEX] * len(prompt_ids) + answer_ids(example)  # only the answer is trained
        return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}

    def collate(items: list[dict[str, Any]]) -> Batch:  # the engine needs "index" and "labels"
        width = max(len(item["input_ids"]) for item in items)
        input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
        labels = torch.full((len(items), width), IGNORE_INDEX, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.bool)
        for row, item in enumerate(items):
            n = len(item["input_ids"])
            cols = slice(width - n, width) if padding_side == "left" else slice(0, n)
            input_ids[row, cols], labels[row, cols], mask[row, cols] = item["input_ids"], item["labels"], True
        return {
            "input_ids": input_ids,
            "labels": labels,
            "attention_mask": mask,
            "index": torch.tensor([item["index"] for item in items]),
        }

    def loss_sum(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        # output t-1 predicts label t; a SUM, never a mean: the engine divides by the update's targets
        return F.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)).float(),
            batch["labels"][:, 1:].reshape(-1),
            ignore_index=IGNORE_INDEX,
            reduction="sum",
        )

    def predict(logits: torch.Tensor, batch: Batch) -> torch.Tensor:  # aligned with batch["labels"]
        predicted = torch.full_like(batch["labels"], IGNORE_INDEX)
        predicted[:, 1:] = logits[:, :-1].argmax(dim=-1)
        return predicted

    return TaskData(
        kind="generation",
        splits=make_splits(examples, split),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda batch: (batch["labels"][:, 1:] != IGNORE_INDEX).sum(),  # what loss_sum sums
        predict=predict,
        forward=lambda model, batch: model(batch["input_ids"], batch["attention_mask"]),
        expected_targets=answer_ids,  # the pilot compares what the loss counts with this
        decode_tokens=tok.token_strings,  # to show the tokens in examples.txt
        target_position="next_token",  # output t is trained towards input token t+1
        labels_shifted=False,  # labels[t] is token t; loss_sum does the shift
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "padding_side": padding_side,
            "truncation_side": "none",
            "mask_instruction": True,
            "target_unit": "token",
        },
    )


class GRUDecoder(nn.Module):
    """A causal GRU language model: embeddings -> GRU -> logits over the vocabulary."""

    supports_activation_checkpointing = False  # memory=checkpointing is refused for this model

    def __init__(self, vocab_size: int, width: int = 256, layers: int = 1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, width)
        self.gru = nn.GRU(width, width, num_layers=layers, batch_first=True)
        self.head = nn.Linear(width, vocab_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # causal by construction; with right padding, padding comes after every real token and
        # changes no real position's output (use pack_padded_sequence for left padding)
        hidden, _ = self.gru(self.embed(input_ids))
        return self.head(hidden)
