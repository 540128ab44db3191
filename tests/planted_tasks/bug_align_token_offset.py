"""loss_sum adds the tokenizer's special-token offset to labels that already include it."""

import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._common import generation_task

EXPECTED = {"step": "alignment", "verdict": "fail"}
SPECIAL_OFFSET = 3


def loss_sum(logits, batch):
    labels = batch["labels"][:, 1:]
    labels = labels.where(labels == IGNORE_INDEX, labels + SPECIAL_OFFSET)  # the bug
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        labels.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):  # the head has room for the 3 reserved ids, so nothing crashes
    return TinyGPT(vocab_size=tok.VOCAB_SIZE + SPECIAL_OFFSET, max_len=64, d_model=32, n_layer=1, n_head=2)
