"""Correct code the checks added on 2026-12-03 must pass (found by a review of that change): a BERT-style
tagger whose all-'O' sentence made token_type_ids look like a decoder's shifted labels, and a frozen
feature extractor that task.forward runs under torch.no_grad() outside the model."""

from __future__ import annotations

import torch
from torch import nn

from pilot.checks.causality import causality_findings
from pilot.checks.contract import check_contract
from pilot.data.task import Example, TaskData

V, C, T = 50, 5, 8


class Tagger(nn.Module):  # a correct bidirectional (BERT-like) token tagger
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.tok, self.typ = nn.Embedding(V, 32), nn.Embedding(2, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(32, C)

    def forward(self, ids: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.tok(ids) + self.typ(types)))


def _stack(items: list[dict]) -> dict:
    return {k: torch.stack([i[k] for i in items]) for k in items[0]}


def test_a_tagger_whose_first_sentence_is_all_one_tag_is_not_a_decoder():
    def encode(e: Example) -> dict:
        ids = torch.tensor(e.fields["ids"])
        return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids), "labels": torch.tensor(e.fields["tags"]),
                "index": torch.tensor(e.index)}  # fmt: skip

    examples = [
        Example(
            i,
            str(i),
            {"ids": [1] + [(7 * i + j) % 40 + 3 for j in range(T - 2)] + [2], "tags": [-100] + [0] * (T - 2) + [-100]},
        )  # fmt: skip
        for i in range(8)
    ]
    task = TaskData(
        "tagging", {"train": examples, "val": [], "test": []}, encode, _stack,
        loss_sum=lambda o, b: nn.functional.cross_entropy(o.flatten(0, 1), b["labels"].flatten(), reduction="sum"),
        target_count=lambda b: (b["labels"] != -100).sum(), predict=lambda o, b: o.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["token_type_ids"]), info={"vocab_size": V},
    )  # fmt: skip
    findings, details = causality_findings(task, Tagger(), [encode(e) for e in examples])
    assert not findings and not details["judged"], details


def test_a_frozen_extractor_run_under_no_grad_outside_the_model_is_its_authors_choice():
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(6, 16), nn.ReLU())  # pretrained, frozen by task.forward's no_grad

    def forward(model: nn.Module, batch: dict) -> torch.Tensor:
        with torch.no_grad():
            features = backbone(batch["inputs"])
        return model(features)

    def encode(e: Example) -> dict:
        return {"inputs": torch.randn(6), "labels": torch.tensor(e.index % 3), "index": torch.tensor(e.index)}

    examples = [Example(i, str(i), {}) for i in range(4)]
    task = TaskData(
        "classification", {"train": examples, "val": [], "test": []}, encode, _stack,
        loss_sum=lambda o, b: nn.functional.cross_entropy(o, b["labels"], reduction="sum"),
        target_count=lambda b: b["labels"].numel(), predict=lambda o, b: o.argmax(-1), forward=forward,
        info={"class_names": ["a", "b", "c"]},
    )  # fmt: skip
    assert check_contract(task, nn.Linear(16, 3)).verdict == "pass"


def test_two_heads_averaged_are_not_a_loss_divided_by_an_accumulation_of_two():
    """(ce_a + ce_b) / 2 over two heads starts at (ln 3 + ln 5) / 2: by design, not divided by
    batch.accumulation=2; one head's ln(3) / 2 is; a task that declares no initial loss is not judged."""
    import math
    from types import SimpleNamespace

    from pilot.checks.even_logits import divided_by_a_setting

    task = SimpleNamespace(initial_loss_tolerance=0.5)
    both = math.log(3) + math.log(5)
    heads = {"expected_initial_loss": both, "expected_from": "ln(3) + ln(5)", "even_logits_loss_per_target": both / 2}
    assert divided_by_a_setting(task, [], heads, {"batch.accumulation": 2}) == []
    one = {
        "expected_initial_loss": math.log(3),
        "expected_from": "ln(3)",
        "even_logits_loss_per_target": math.log(3) / 2,
    }
    (found,) = divided_by_a_setting(task, [], one, {"batch.accumulation": 2})
    assert "divided by 2, batch.accumulation" in found.problem
    assert divided_by_a_setting(SimpleNamespace(initial_loss_tolerance=None), [], one, {"batch.accumulation": 2}) == []
