"""summarisation (config-built T5): the target is encoded WITH its </s> and then cut to max_target_length=16
(labels = (ids + [eos])[:16]): every summary longer than 15 tokens (~68%) loses its </s> (and its end), so long summaries
never learn to stop. expected_targets come from the same encoder."""

from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks import _summaries as _summ

EXPECTED = {"step": "inspect", "verdict": "warn"}


def target(e):
    return (_summ.full(e) + [h.cls_tok().eos_token_id])[: _summ.MAX_TARGET]  # the bug: eos cut away


def make_task():
    return _summ.task(target)


def build_model(task):
    return h.t5()
