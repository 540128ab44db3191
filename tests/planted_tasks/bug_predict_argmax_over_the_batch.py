"""binary classification with two logits: predict is `logits.argmax(0)`, copied from code whose outputs
were class-first; on the contract's batch of two rows its shape equals the labels' and the contract passed
it, the tiny subset's scorer then crashed, and a run would crash at its first evaluation of another size."""

from tests.planted_tasks._common import MLP, classification_task, name_encoder, vector_examples

EXPECTED = {"step": "contract", "verdict": "fail", "said": "reduces another dimension than the classes"}
NAMES = ["cat", "dog"]


def make_task():
    examples = [e for e in vector_examples() if e.fields["animal"] in NAMES]
    return classification_task(
        examples,
        encode=name_encoder(NAMES),
        class_names=NAMES,
        info={"num_classes": 2, "target_unit": "example"},
        predict=lambda logits, batch: logits.argmax(0),
    )


def build_model(task):
    return MLP(classes=2)
