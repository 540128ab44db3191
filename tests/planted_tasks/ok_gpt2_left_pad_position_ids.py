"""correct: GPT-2 sequence classifier with LEFT padding and position_ids = cumsum(mask) - 1 (positions
start at each row's first real token); the HF head reads the rightmost non-pad token."""

from tests.planted_tasks._gpt2_classifier import gpt2_classifier, left_pad_collate
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = None


def forward(model, b):
    mask = b["attention_mask"]
    position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=b["input_ids"], attention_mask=mask, position_ids=position_ids).logits


def make_task():
    return seqcls_task(
        collate=left_pad_collate,
        forward=forward,
        info={"num_classes": 2, "target_unit": "example", "pad_id": 256, "padding_side": "left"},
    )


def build_model(task):
    return gpt2_classifier()
