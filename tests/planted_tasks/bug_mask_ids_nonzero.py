"""sequence classification: collate builds attention_mask as (input_ids != 0) ("pad is 0", a BERT habit)
while the tokenizer pads with <pad>=256: every padding position is marked real and attended/pooled."""

from tests.planted_tasks._text_tasks import MeanPoolClassifier, pad_collate_sentences, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "counts 12 pad token(s)"}


def collate(items):
    batch = pad_collate_sentences(items)
    batch["attention_mask"] = (batch["input_ids"] != 0).long()  # the bug
    return batch


def make_task():
    return seqcls_task(collate=collate)


def build_model(task):
    return MeanPoolClassifier()
