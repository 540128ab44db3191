"""bug: PyTorch's src_key_padding_mask given attention_mask as it is (1 = real token), where PyTorch reads
True as IGNORE: every real token is hidden, the outputs are NaN, and the padding is what is attended."""

from tests.planted_tasks._common import TransformerLM, generation_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class InvertedMaskLM(TransformerLM):
    def ignored(self, attention_mask):
        return attention_mask.bool()  # the bug: True marks the real tokens, which PyTorch then ignores


def make_task():
    return generation_task()


def build_model(task):
    return InvertedMaskLM()
