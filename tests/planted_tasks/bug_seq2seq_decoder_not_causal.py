"""encoder-decoder built from nn.TransformerEncoder + nn.TransformerDecoder; decoder_input_ids = <bos> + target
(shifted right, correctly) but forward calls the decoder without tgt_mask (tgt_is_causal defaults to False):
the decoder's self-attention sees later positions, so output t reads decoder_input_ids[t+1] = labels[t]."""

import torch
import torch.nn.functional as F
from torch import nn

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, TaskData
from tests.planted_tasks._common import instruction_examples

EXPECTED = {"step": "inspect", "verdict": "fail"}


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


def pad(rows, value):
    out = torch.full((len(rows), max(len(r) for r in rows)), value)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def collate(items):
    source = pad([i["source"] for i in items], tok.PAD_ID)
    decoder = pad([i["decoder"] for i in items], tok.PAD_ID)
    return {
        "input_ids": source,
        "attention_mask": source != tok.PAD_ID,
        "decoder_input_ids": decoder,
        "decoder_attention_mask": decoder != tok.PAD_ID,
        "labels": pad([i["labels"] for i in items], IGNORE_INDEX),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return TaskData(
        kind="seq2seq",
        splits=make_splits(instruction_examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(
            logits.reshape(-1, logits.size(-1)).float(),
            b["labels"].reshape(-1),
            ignore_index=IGNORE_INDEX,
            reduction="sum",
        ),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(
            b["input_ids"], b["attention_mask"], b["decoder_input_ids"], b["decoder_attention_mask"]
        ),
        expected_targets=target,
        decode_tokens=tok.token_strings,
        target_position="same_position",
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "padding_side": "right", "target_unit": "token"},
    )


class Model(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(width, 2, 64, 0.0, batch_first=True), 1, enable_nested_tensor=False
        )
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(width, 2, 64, 0.0, batch_first=True), 1)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def emb(self, ids):
        return self.embed(ids) + self.position(torch.arange(ids.shape[1]))

    def forward(self, source, source_mask, decoder_ids, decoder_mask):
        memory = self.encoder(self.emb(source), src_key_padding_mask=~source_mask)
        out = self.decoder(
            self.emb(decoder_ids), memory, tgt_key_padding_mask=~decoder_mask, memory_key_padding_mask=~source_mask
        )  # BUG: no tgt_mask (causal)
        return self.head(out)
