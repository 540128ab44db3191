"""duplicate-question pairs (Quora style): 24 train pairs reappear in validation with the two questions in the other
order (q2, q1) under new pair ids -- the same pair, a different string: exact dedup on (q1, q2) misses it."""

from pilot.data.task import Example
from tests.planted_tasks import _ner_and_pairs as c

EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "in another order of the fields"}


def make_task():
    ex = c.pair_examples(180)
    train, val = ex[:140], ex[140:]
    for k, e in enumerate(train[:24]):  # the bug
        val.append(
            Example(
                index=180 + k,
                group=f"q{180 + k}",
                fields={
                    "premise": e.fields["hypothesis"],
                    "hypothesis": e.fields["premise"],
                    "label_name": e.fields["label_name"],
                },
            )
        )
    return c.pair_task(splits={"train": train, "val": val, "test": []})


def build_model(task):
    return c.hf_model("Bert", "SequenceClassification", 2, type_vocab_size=2)
