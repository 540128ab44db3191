"""correct: packed causal LM (3 documents per row), position ids restart per document AND a
block-diagonal causal mask from doc_ids; each document's <bos> is not a target."""

from tests.planted_tasks._packing import PackedLM, packed_task

EXPECTED = None


def make_task():
    return packed_task(lambda m, b: m(b["input_ids"], b["attention_mask"], b["position_ids"], b["doc_ids"]))


def build_model(task):
    return PackedLM()
