"""bug: PyTorch's src_key_padding_mask given attention_mask as it is (1 = real token), where PyTorch reads
True as IGNORE: every real token is hidden, the outputs are NaN, and the padding is what is attended."""

import torch
from torch import nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import generation_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class CausalEncoder(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width: int = 32):
        super().__init__()
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def forward(self, input_ids, attention_mask):
        length = input_ids.shape[1]
        x = self.embed(input_ids) + self.position(torch.arange(length))
        causal = torch.ones(length, length, dtype=torch.bool).triu(1)  # True: not attended
        hidden = self.encoder(x, mask=causal, src_key_padding_mask=attention_mask.bool())  # the bug: not == 0
        return self.head(hidden)


def make_task():
    return generation_task()


def build_model(task):
    torch.manual_seed(0)
    return CausalEncoder()
