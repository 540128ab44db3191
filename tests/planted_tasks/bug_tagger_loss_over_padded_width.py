"""token tagging whose loss_sum is divided by the micro-batch's padded width ("normalise by sequence length so
long batches do not dominate") while target_count counts tokens: each example weighs 1/width of whatever
batch it lands in. Summed over single rows cut from the padded batch the pieces still add up (same width), so
only the example collated alone shows it (an outside examination, 2026-12-07: every check passed)."""

from tests.planted_tasks._text_tasks import Tagger, tag_loss_sum, tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "an example's loss depends on its micro-batch"}
SETTINGS = {"micro_batch": 4}


def per_width(logits, batch):
    return tag_loss_sum(logits, batch) / batch["input_ids"].shape[1]


def make_task():
    return tagging_task(loss_sum=per_width, initial_loss_tolerance=None)  # the initial-loss warning silenced


def build_model(task):
    return Tagger()
