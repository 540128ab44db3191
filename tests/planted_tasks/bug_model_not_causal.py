"""bug: a bidirectional transformer encoder trained as a language model (no causal mask): the output at
position t attends to token t+1, the token it is trained to predict, so the loss reads the answer."""

import torch
from torch import nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import generation_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class EncoderLM(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width: int = 32):
        super().__init__()
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        return self.head(self.encoder(x, src_key_padding_mask=attention_mask == 0))  # the bug: no causal mask


def make_task():
    return generation_task()


def build_model(task):
    torch.manual_seed(0)
    return EncoderLM()
