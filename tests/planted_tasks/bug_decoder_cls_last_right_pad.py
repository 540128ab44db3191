"""sequence classification with a causal decoder: the class is read from the LAST position
(hidden[:, -1], "the last token has seen everything") while batches are right padded: short rows
are classified from a <pad> position."""

import torch
import torch.nn as nn

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


class LastTokenClassifier(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, classes=2, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        x = self.embed(input_ids) + self.position(torch.arange(n))
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        hidden = self.encoder(x, mask=causal, src_key_padding_mask=attention_mask == 0)
        return self.head(hidden[:, -1])  # the bug: the last COLUMN, padding for short rows


def make_task():
    return seqcls_task()


def build_model(task):
    return LastTokenClassifier()
