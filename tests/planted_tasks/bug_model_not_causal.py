"""bug: a transformer encoder trained as a language model without its causal mask: the output at
position t attends to token t+1, the token it is trained to predict, so the loss reads the answer."""

from tests.planted_tasks._common import TransformerLM, generation_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class EncoderLM(TransformerLM):
    def causal_mask(self, length):
        return None  # the bug: every position attends to every other one


def make_task():
    return generation_task()


def build_model(task):
    return EncoderLM()
