"""correct: chat SFT with a config-built LlamaForCausalLM, LEFT padding (tokenizer.padding_side='left'), position_ids =
cumsum(attention_mask) - 1, labels padded -100 on the same side; the model's own loss x its token count."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = None


def forward(m, b):
    pos = (b["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)
    return m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], position_ids=pos, labels=b["labels"])


def make_task():
    return h.chat_task(padding_side="left", forward=forward, loss_sum=lambda out, b: out.loss * h.shifted_count(b))


def build_model(task):
    return h.causal_lm("Llama")
