"""correct: the next 10-minute reading of a slowly drifting sensor from its last 6 readings, split by time.
The last reading is by nature almost the answer (|correlation| 0.998 with the label): a false 'gives the
label away' before the label was recognised as the same series read one step later (an outside
examination's false alarm)."""

from tests.planted_tasks._ar_readings import LAGS, forecast_task
from tests.planted_tasks._windows import GRU

EXPECTED = None


def make_task():
    return forecast_task(lambda series, k: series[k - LAGS : k])


def build_model(task):
    return GRU()
