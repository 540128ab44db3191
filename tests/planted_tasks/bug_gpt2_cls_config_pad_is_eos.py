"""GPT2ForSequenceClassification: the tokenizer got its own '<pad>' (collate pads with it) but the model was set up
with the usual `model.config.pad_token_id = tokenizer.eos_token_id`; HF pools the LAST token whose id is not the
config's pad id: every input ends with </s>, so on right-padded short rows that is a trailing <pad> position."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    return h.cls_task()


def build_model(task):
    return h.gpt2_cls(h.cls_tok().eos_token_id)
