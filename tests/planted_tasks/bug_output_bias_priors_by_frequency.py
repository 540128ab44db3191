"""The output bias initialised to log-priors sorted by frequency (value_counts order), not by class id: the
fresh model is sure every transaction is fraud, the 6% class, and starts at 2.8x ln(2). The loss at even logits
is ln(2), so the start was read as a high temperature and passed (an outside examination's miss)."""

from tests.planted_tasks._rare_class_priors import make_task, prior_model

EXPECTED = {"step": "objective", "verdict": "warn", "said": "leans the same way"}
__all__ = ["make_task", "build_model"]


def build_model(task):
    return prior_model(by_frequency=True)
