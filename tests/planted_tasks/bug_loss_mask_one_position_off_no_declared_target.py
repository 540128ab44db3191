"""bug_loss_mask_one_position_off in a task that keeps <pad> in its labels and declares no expected_targets:
the padding the loss leaves out is right (a warning), the real <eos> it leaves out is not, and must not be
folded into that warning, whose fix (label it -100) would make the bug permanent."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import bug_loss_mask_one_position_off as off
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {
    "step": "inspect",
    "verdict": "fail",
    "said": "real token(s) labelled as targets that loss_sum does not train",
}


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, : len(item["input_ids"])], mask[row, : len(item["input_ids"])] = item["input_ids"], 1
    labels = ids.clone()  # <pad> kept as a label: the loss's mask leaves padding out
    labels[:, 0] = IGNORE_INDEX
    return {
        "input_ids": ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return lm_task(collate=collate, loss_sum=off.loss_sum, target_count=off.target_count, expected_targets=None)


def build_model(task):
    return tiny_gpt(task)
