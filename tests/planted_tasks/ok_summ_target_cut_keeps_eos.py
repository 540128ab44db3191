"""correct: summarisation (config-built T5), target cut to max_target_length=16 the way the tokenizer does it:
15 text tokens then </s> (long summaries end mid-phrase, but always on </s>)."""

from tests.planted_tasks import _hf_tiny as h
from tests.planted_tasks import _summaries as _summ

EXPECTED = None


def target(e):
    return _summ.full(e)[: _summ.MAX_TARGET - 1] + [h.cls_tok().eos_token_id]


def make_task():
    return _summ.task(target)


def build_model(task):
    return h.t5()
