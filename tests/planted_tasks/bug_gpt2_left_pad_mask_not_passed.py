"""GPT-2 sequence classifier, LEFT padding, position ids computed in forward from the mask, but the mask itself
never passed to the model: the real tokens attend to the padding (an outside examination, 2026-12-07, with Llama:
the finding said "the batch holds no position_ids" and its fix, followed, changed nothing)."""

from tests.planted_tasks._gpt2_classifier import gpt2_classifier, left_pad_collate
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "forward calls the model with no attention mask"}


def forward(model, batch):
    positions = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=batch["input_ids"], position_ids=positions).logits  # no attention_mask


def make_task():
    return seqcls_task(
        collate=left_pad_collate,
        forward=forward,
        info={"num_classes": 2, "target_unit": "example", "pad_id": 256, "padding_side": "left"},
    )


def build_model(task):
    return gpt2_classifier()
