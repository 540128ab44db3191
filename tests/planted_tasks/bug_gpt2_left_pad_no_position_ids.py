"""GPT-2 sequence classifier with LEFT padding (tokenizer.padding_side='left', copied from a generation
recipe) and no position_ids: GPT-2's learned absolute positions start at the first PAD, so a row's
prediction changes with how much padding its batch needs."""

from tests.planted_tasks._gpt2_classifier import gpt2_classifier, left_pad_collate
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "position_ids = (attention_mask.cumsum"}


def make_task():
    return seqcls_task(
        collate=left_pad_collate,
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits,
        info={"num_classes": 2, "target_unit": "example", "pad_id": 256, "padding_side": "left"},
    )


def build_model(task):
    return gpt2_classifier()
