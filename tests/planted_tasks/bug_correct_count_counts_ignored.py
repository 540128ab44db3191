"""bug: correct_count compares predict with labels everywhere: ignored positions (-100 == -100) count as
correct, so the share of targets it calls correct passes 100% and every accuracy it gives is inflated."""

from tests.planted_tasks._common import generation_task, shifted_predict, tiny_gpt

EXPECTED = {"step": "tiny_subset", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"]}


def make_task():
    return generation_task(
        correct_count=lambda output, batch: (shifted_predict(output, batch) == batch["labels"]).sum()
    )


def build_model(task):
    return tiny_gpt(task)
