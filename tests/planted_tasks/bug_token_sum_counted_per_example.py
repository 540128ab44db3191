"""loss_sum sums each example's answer tokens while target_count counts examples: a longer answer weighs more and
each update's normaliser is the examples, not the tokens summed (the mean per example was meant)."""

from tests.planted_tasks._per_example_loss import build_model, per_example_task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "target_count says"}
__all__ = ["make_task", "build_model"]


def make_task():
    return per_example_task(mean=False)
