"""packed causal LM (3 documents per row): position ids restart per document (as for flash-attention
varlen packing), but the model runs with a plain causal mask (SDPA ignores position-id boundaries):
every document attends to the documents packed before it (a leak across documents)."""

from tests.planted_tasks._packing import PackedLM, packed_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "documents packed in one row read each other"}


def make_task():
    return packed_task(lambda m, b: m(b["input_ids"], b["attention_mask"], b["position_ids"]))  # no doc_ids


def build_model(task):
    return PackedLM()
