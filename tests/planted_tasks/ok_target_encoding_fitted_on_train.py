"""correct: a merchant's fraud rate (a smoothed target encoding) counted over the training split's rows and
applied to every split (a merchant training never saw gets the prior)."""

from tests.planted_tasks import _merchant_rates
from tests.planted_tasks._merchant_rates import build_model

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return _merchant_rates.make_task(over_every_split=False)
