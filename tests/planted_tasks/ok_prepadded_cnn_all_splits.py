"""CORRECT (Keras-style): a text CNN (Embedding, Conv1d k=3, masked max-pool over real positions) on
sequences every split pads to max_length=32 alike, train included; the mask is used in the pooling. The
pad id has an ordinary (learned) embedding row, as in a Keras Embedding without mask_zero, so the conv
windows at the edge of a text see one learned pad vector in every split alike."""

import torch
import torch.nn as nn

from tests.planted_tasks._exam94_prepadded import _T, prepadded_task

EXPECTED = None


class TextCNN(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(vocab, 32)
        self.conv = nn.Conv1d(32, 64, 3, padding=1)
        self.head = nn.Linear(64, 3)

    def forward(self, ids, mask):
        h = torch.relu(self.conv(self.emb(ids).transpose(1, 2))).transpose(1, 2)
        h = h.masked_fill(mask[..., None] == 0, float("-inf")).max(1).values
        return self.head(h)


def make_task(split=None):
    return prepadded_task(split, "right", forward=lambda m, b: m(b["input_ids"], b["attention_mask"]))


def build_model(task=None):
    return TextCNN(len(_T["tk"]))
