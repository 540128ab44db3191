"""correct: BERT masked LM with transformers' DataCollatorForLanguageModeling (15% chosen, 80% <mask> /
10% random / 10% kept; labels -100 outside the chosen positions), a tiny config-built BertForMaskedLM."""

import torch
import transformers

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import sentences, tiny_bert, token_ce_sum, tokenizer, with_specials

EXPECTED = None


def encode(e):
    ids = with_specials(tokenizer()(e.fields["text"], add_special_tokens=False)["input_ids"])
    return {"index": e.index, "input_ids": ids}


def collate(items):
    t = tokenizer()
    collator = transformers.DataCollatorForLanguageModeling(t, mlm=True, mlm_probability=0.15)
    batch = dict(collator([{"input_ids": i["input_ids"]} for i in items]))
    batch["index"] = torch.tensor([i["index"] for i in items])
    if "attention_mask" not in batch:
        batch["attention_mask"] = (batch["input_ids"] != t.pad_token_id).long()
    return batch


def make_task():
    t = tokenizer()
    ex = [Example(index=i, group=f"doc{i}", fields={"text": s}) for i, s in enumerate(sentences(160, seed=1))]
    return TaskData(
        kind="masked_lm",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=token_ce_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits,
        target_position="same_position",
        info={"vocab_size": len(t), "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    return tiny_bert("mlm")
