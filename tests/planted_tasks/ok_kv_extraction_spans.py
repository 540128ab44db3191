"""CORRECT: key-value extraction from invoice text as extractive QA. The query is the field's name
('total', 'vendor', 'date', 'invoice'), the context the invoice text ("... Vendor : Acme . Total : 84 ...");
the answer is given as character offsets (answer_start, answer_end, as an annotation tool exports them),
mapped to token positions through the fast tokenizer's offset mapping. Spans are right: they cover the
value, which in every document comes two tokens after its key (key, ':', value)."""

import numpy as np
import torch
import transformers

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._exam94_hftok import bert_fast, tiny_bert

EXPECTED = None

VENDORS = "acme globex initech umbrella hooli stark wayne wonka tyrell cyberdyne soylent vandelay".split()
MONTHS = "january february march april may june july august september october november december".split()
FILL = "please pay within thirty days thank you for your business goods delivered as ordered".split()
_T = {}


def invoices(n=240, seed=5):
    rng = np.random.default_rng(seed)
    exs = []
    for i in range(n):
        vals = {
            "vendor": VENDORS[rng.integers(12)].capitalize(),
            "total": str(int(rng.integers(10, 999))),
            "date": f"{rng.integers(1, 29)} {MONTHS[rng.integers(12)].capitalize()}",
            "invoice": str(int(rng.integers(1000, 9999))),
        }
        keys = list(vals)
        rng.shuffle(keys)
        spans = {}
        text = ""
        for k in keys:
            text += " ".join(rng.choice(FILL, rng.integers(0, 4))) + " "
            text += f"{k.capitalize()} : "
            spans[k] = (len(text), len(text) + len(vals[k]))
            text += vals[k] + " . "
        q = keys[int(rng.integers(4))]
        exs.append(
            Example(
                index=i,
                group=f"inv{i}",
                fields={"query": q, "document": text, "answer_start": spans[q][0], "answer_end": spans[q][1]},
            )
        )
    return exs


def make_task(split=None):
    exs = invoices()
    tk = bert_fast([e.fields["query"] + " " + e.fields["document"] for e in exs])
    _T["tk"] = tk

    def encode(e):
        enc = tk(
            e.fields["query"],
            e.fields["document"],
            truncation="only_second",
            max_length=64,
            return_offsets_mapping=True,
            return_token_type_ids=True,
        )
        s_char, e_char = e.fields["answer_start"], e.fields["answer_end"]
        start = end = 0
        for t, ((a, b), sid) in enumerate(zip(enc["offset_mapping"], enc.sequence_ids())):
            if sid == 1 and a <= s_char < b and start == 0:
                start = t
            if sid == 1 and a < e_char <= b:
                end = t
        return {
            "index": e.index,
            "input_ids": enc["input_ids"],
            "token_type_ids": enc["token_type_ids"],
            "start": start,
            "end": end,
        }

    def collate(items):
        w = max(len(i["input_ids"]) for i in items)
        ids = torch.tensor([i["input_ids"] + [0] * (w - len(i["input_ids"])) for i in items])
        tt = torch.tensor([i["token_type_ids"] + [0] * (w - len(i["token_type_ids"])) for i in items])
        return {
            "input_ids": ids,
            "token_type_ids": tt,
            "attention_mask": (ids != 0).long(),
            "start_positions": torch.tensor([i["start"] for i in items]),
            "end_positions": torch.tensor([i["end"] for i in items]),
            "labels": torch.tensor([[i["start"], i["end"]] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    def forward(m, b):
        out = m(input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"])
        return {"logits": torch.stack([out.start_logits, out.end_logits], 1)}  # (rows, 2, length)

    def loss_sum(out, b):
        logits = out["logits"]
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)).float(), b["labels"].reshape(-1), reduction="sum"
        )

    return TaskData(
        kind="extractive_qa",
        splits=make_splits(exs, split),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(2 * b["input_ids"].shape[0]),
        predict=lambda out, b: out["logits"].argmax(-1),
        forward=forward,
        decode_tokens=lambda ids: tk.convert_ids_to_tokens(ids),
        info={"target_unit": "example", "pad_id": 0, "vocab_size": len(tk)},
    )


def build_model(task=None):
    return transformers.BertForQuestionAnswering(tiny_bert(len(_T["tk"]), type_vocab_size=2))
