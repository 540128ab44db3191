"""chat SFT (config-built Llama, own shifted loss = mean over answer tokens): loss_sum = out.loss *
attention_mask.sum() -- the mean is scaled back up by ALL real tokens (prompt included) while target_count counts
only the answer tokens: the summed loss is ~3x too big and its weight varies with prompt length."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "objective", "verdict": "fail"}


def forward(m, b):
    return m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])


def make_task():
    return h.chat_task(forward=forward, loss_sum=lambda out, b: out.loss * b["attention_mask"].sum())


def build_model(task):
    return h.causal_lm("Llama")
