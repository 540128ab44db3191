"""shared: seq2seq on a config-built BART (``_hf_tiny.bart``): each source word said twice in the target
("red cat" -> "red red cat cat"), source and labels padded to one common width in one collate; the
model's own loss x counted tokens; ``decoder_mask(batch)`` gives the decoder_attention_mask passed (or
None: the model builds its causal mask itself)."""

import torch

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks import _bert_bpe as bb
from tests.planted_tasks import _hf_tiny as h


def examples(count=100, seed=23):
    out = []
    for i, s in enumerate(bb.sentences(count, seed=seed, low=2, high=4)):
        out.append(Example(index=i, group=f"d{i}", fields={"src": s, "tgt": " ".join(w + " " + w for w in s.split())}))
    return out


def doubled_task(decoder_mask):
    t = h.cls_tok()

    def encode(e):
        return {"index": e.index, "src": [t.bos_token_id] + h.s2s_source(e), "labels": h.s2s_target(e)}

    def collate(items):
        width = max(max(len(i["src"]), len(i["labels"])) for i in items)  # one common width
        src = torch.full((len(items), width), t.pad_token_id)
        labels = torch.full((len(items), width), IGNORE_INDEX)
        for r, i in enumerate(items):
            src[r, : len(i["src"])], labels[r, : len(i["labels"])] = torch.tensor(i["src"]), torch.tensor(i["labels"])
        return {
            "input_ids": src,
            "attention_mask": (src != t.pad_token_id).long(),
            "labels": labels,
            "index": torch.tensor([i["index"] for i in items]),
        }

    def forward(m, b):
        mask = decoder_mask(b)
        extra = {} if mask is None else {"decoder_attention_mask": mask}
        return m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"], **extra)

    return h.s2s_task(
        encode,
        collate,
        forward,
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        loss_sum=lambda out, b: out.loss * (b["labels"] != IGNORE_INDEX).sum(),
    )


def build_model(task):
    return h.bart()
