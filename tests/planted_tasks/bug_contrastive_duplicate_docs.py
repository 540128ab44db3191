"""dual encoder with in-batch negatives (labels = arange(B)), trained on a FAQ log: each answer document is asked
by 3 paraphrased queries, and the examples are kept in log order (no dedup, no shuffling-by-document), so a
micro-batch holds the same document in several columns: the 'negatives' include the positive itself, the
cross-entropy is asked to pick one of several identical columns (false negatives)."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words
from tests.planted_tasks.ok_contrastive_in_batch import DualEncoder, collate

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "scores exactly like another candidate"}
PREFIXES = ["", "what is ", "tell me "]


def make_task():
    ex = []
    for k, w in enumerate(words(60, 7)):
        for p in PREFIXES:  # 3 queries per doc, adjacent: same group (the doc), so no split leak
            ex.append(Example(index=len(ex), group=f"doc{k}", fields={"query": p + w, "doc": w[::-1]}))
    return TaskData(
        kind="retrieval",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {"index": e.index, "q": tok.encode(e.fields["query"]), "d": tok.encode(e.fields["doc"])},
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["doc_ids"], b["doc_mask"]),
        info={"target_unit": "example", "pad_id": tok.PAD_ID},
        initial_loss_tolerance=None,
    )


def build_model(task):
    return DualEncoder()
