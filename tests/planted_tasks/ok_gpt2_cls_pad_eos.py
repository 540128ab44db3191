"""correct: GPT2ForSequenceClassification (config-built) with no pad token of its own: tokenizer.pad_token =
eos_token and model.config.pad_token_id = eos_token_id, right padding; HF reads the last token that is not
</s>: the last word piece (the trailing </s> is skipped, padding too)."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = None
PAD = h.cls_tok().eos_token_id


def make_task():
    task = h.cls_task(collate=lambda items: h.cls_collate(items, pad_id=PAD))
    task.info["pad_id"] = PAD
    return task


def build_model(task):
    return h.gpt2_cls(PAD)
