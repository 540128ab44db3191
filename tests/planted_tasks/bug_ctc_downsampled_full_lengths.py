"""CTC with a stride-2 conv front end; the frame lengths no longer fit, so input_lengths = the output's full width
for every row: a short row's CTC alignment runs over padded output frames (the loss depends on the batch width)."""

import torch

from tests.planted_tasks._ctc_letters import LETTERS, Model, ctc_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "an example's loss depends on its micro-batch"}


def make_task():
    return ctc_task(
        {c: i + 1 for i, c in enumerate(LETTERS)},
        0,
        ["<blank>", *LETTERS],
        lambda lg, b: torch.full((lg.shape[0],), lg.shape[1], dtype=torch.long),
    )  # BUG


def build_model(task):
    return Model(downsample=True)
