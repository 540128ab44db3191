"""bug_loss_mask_one_position_off in a task that keeps <pad> in its labels (the collate of
bug_labels_at_padding_masked_in_the_loss) and declares no expected_targets: the padding the loss leaves out
is right (a warning), the real <eos> it leaves out is not, and must not be folded into that warning, whose
fix (label it -100) would make the bug permanent."""

from tests.planted_tasks import bug_labels_at_padding_masked_in_the_loss as padded_labels
from tests.planted_tasks import bug_loss_mask_one_position_off as off
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {
    "step": "inspect",
    "verdict": "fail",
    "said": "real token(s) labelled as targets that loss_sum does not train",
}


def make_task():
    return lm_task(
        collate=padded_labels.collate, loss_sum=off.loss_sum, target_count=off.target_count, expected_targets=None
    )


def build_model(task):
    return tiny_gpt(task)
