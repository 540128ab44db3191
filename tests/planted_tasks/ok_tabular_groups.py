"""correct: tabular rows of patients (several rows per patient), split by patient."""

from tests.planted_tasks._common import classification_task, mlp, vector_examples

EXPECTED = None


def make_task():
    examples = vector_examples(count=180, seed=3, groups=45)  # 4 visits per patient, one split each
    return classification_task(examples)


def build_model(task):
    return mlp(task)
