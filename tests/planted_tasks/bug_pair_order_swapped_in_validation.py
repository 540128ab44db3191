"""sentence-pair classification (BERT, token_type_ids): the validation file has its columns the other way round, so
every validation pair reaches the model as (hypothesis, premise) while training's were (premise, hypothesis):
validation measures pairs the model never trained on."""

from pilot.data.task import Example
from tests.planted_tasks import _ner_and_pairs as c

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "pairs come in the other order"}


def make_task():
    ex = c.pair_examples(180)
    train = ex[:140]
    val = [  # the bug: the validation file's columns swapped
        Example(
            index=e.index,
            group=e.group,
            fields={
                "premise": e.fields["hypothesis"],
                "hypothesis": e.fields["premise"],
                "label_name": e.fields["label_name"],
            },
        )
        for e in ex[140:]
    ]
    return c.pair_task(splits={"train": train, "val": val, "test": []})


def build_model(task):
    return c.hf_model("Bert", "SequenceClassification", 2, type_vocab_size=2)
