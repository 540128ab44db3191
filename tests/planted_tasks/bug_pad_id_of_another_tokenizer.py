"""chat SFT (config-built Llama): the model's config was copied from a checkpoint of another tokenizer, whose pad id
was 201; in this task's tokenizer 201 is the newline of the chat template, a real token of every prompt. The model's
embedding keeps row 201 as padding (nn.Embedding padding_idx): it never trains, and every newline reads it."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "the padding row of model.embed_tokens"}
OTHER_TOKENIZERS_PAD = 201  # the bug: not this tokenizer's pad id (2)


def make_task():
    return h.chat_task()


def build_model(task):
    return h.causal_lm("Llama", pad_id=OTHER_TOKENIZERS_PAD)
