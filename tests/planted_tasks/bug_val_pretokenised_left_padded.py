"""GPT-2 classifier: training's sentences are encoded on the fly and right-padded by collate; the
validation and test sets come from a cache an older script tokenised once with padding="max_length"
and padding_side="left" (set for generation), no position_ids. GPT-2 numbers positions from the first
column: every validation example is read at other positions than in training, and its metrics are
silently off. Every training batch is fine, so the padding check on training batches sees nothing."""

from tests.planted_tasks._pretokenised_val import build_model, pretokenised_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "arrive padded even alone"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return pretokenised_task("left")
