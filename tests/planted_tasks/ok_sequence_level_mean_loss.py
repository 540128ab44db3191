"""correct: each example's loss is the mean over its answer tokens, target_count counts examples (a sequence-level
objective: every example weighs the same). Failed as 'target_count says 4 targets but loss_sum trains 30
positions' (an outside examination): one target per example, each weighed as counted."""

from tests.planted_tasks._per_example_loss import build_model, per_example_task

EXPECTED = None
__all__ = ["make_task", "build_model"]


def make_task():
    return per_example_task(mean=True)
