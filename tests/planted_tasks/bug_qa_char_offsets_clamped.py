"""extractive QA with transformers' QA loss (positions clamped to the row's length and ignored there): start/end
labels are the answer's CHARACTER offsets used as token positions, so nothing crashes: the labels past the row
drop out of the loss silently and the rest train the wrong tokens."""

import dataclasses

from tests.planted_tasks import _qa_spans as _qa
from tests.planted_tasks.bug_qa_char_offsets_as_positions import encode

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "position labels past the sequence"}


def make_task():
    return dataclasses.replace(_qa.qa_task(None), encode=encode)  # qa_task's loss: transformers' clamp


def build_model(task):
    return _qa.build()
