"""control for bug_seq2seq_loss_source_mask: the same common-width collate (source and target padded to one width,
labels -100 past the target), loss summed over labels != -100: correct."""

import torch
import torch.nn.functional as F
from torch import nn

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, TaskData
from tests.planted_tasks._common import instruction_examples

EXPECTED = None


def target(example):
    return tok.encode(example.fields["answer"]) + [tok.EOS_ID]


def encode(example):
    answer = target(example)
    return {
        "index": example.index,
        "source": torch.tensor(tok.encode(example.fields["instruction"])),
        "decoder": torch.tensor([tok.BOS_ID] + answer[:-1]),
        "labels": torch.tensor(answer),
    }


def pad(rows, value, width):
    out = torch.full((len(rows), width), value)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def collate(items):
    width = max(max(len(i["source"]), len(i["labels"])) for i in items)
    source = pad([i["source"] for i in items], tok.PAD_ID, width)
    decoder = pad([i["decoder"] for i in items], tok.PAD_ID, width)
    return {
        "input_ids": source,
        "attention_mask": (source != tok.PAD_ID).long(),
        "decoder_input_ids": decoder,
        "decoder_attention_mask": (decoder != tok.PAD_ID).long(),
        "labels": pad([i["labels"] for i in items], IGNORE_INDEX, width),
        "index": torch.tensor([i["index"] for i in items]),
    }


def loss_sum(logits, b):
    ce = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        b["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="none",
    ).view(b["labels"].shape)
    return ce.sum()


def make_task():
    return TaskData(
        kind="seq2seq",
        splits=make_splits(instruction_examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda model, b: model(b["input_ids"], b["attention_mask"], b["decoder_input_ids"]),
        expected_targets=target,
        decode_tokens=tok.token_strings,
        target_position="same_position",
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "padding_side": "right", "target_unit": "token"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width: int = 64):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.encoder, self.decoder = nn.GRU(width, width, batch_first=True), nn.GRU(width, width, batch_first=True)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def forward(self, source, mask, decoder_ids):
        states, _ = self.encoder(self.embed(source))
        last = states[torch.arange(source.size(0)), mask.long().sum(1) - 1]
        out, _ = self.decoder(self.embed(decoder_ids), last[None].contiguous())
        return self.head(out)
