"""chat SFT with Qwen2ForCausalLM's own loss (a mean over the counted TOKENS), turned into a 'sum' by multiplying
with the number of ROWS (loss * len(batch['input_ids'])): every update is scaled by rows/tokens, and long and short
answers are weighed per batch, not per token."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "objective", "verdict": "fail"}


def make_task():
    return h.chat_task(
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        loss_sum=lambda out, b: out.loss * len(b["input_ids"]),
    )


def build_model(task):
    return h.causal_lm("Qwen2")
