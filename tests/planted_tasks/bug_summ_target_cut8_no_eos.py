"""variant: as bug_summ_target_cut_without_eos but max_target_length=8: EVERY summary is cut, no label is ever </s>."""

from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks import _summaries as _summ

EXPECTED = {"step": "inspect", "verdict": "warn"}


def target(e):
    return (_summ.full(e) + [h.cls_tok().eos_token_id])[:8]


def make_task():
    return _summ.task(target)


def build_model(task):
    return h.t5()
