"""correct: chat-style SFT with a config-built Qwen2ForCausalLM; tokenizer.pad_token = tokenizer.eos_token, but the
labels are built from each row's LENGTH (padding -100 by position, not by value) so the real <eos> stays a target;
the model's own loss (it shifts) x the number of tokens it counts."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = None
PAD = h.lm_tok().eos_token_id  # pad_token = eos_token


def loss_sum(out, b):
    return out.loss * h.shifted_count(b)


def make_task():
    return h.chat_task(
        pad_id=PAD,
        loss_sum=loss_sum,
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
    )


def build_model(task):
    return h.causal_lm("Qwen2", pad_id=PAD)
