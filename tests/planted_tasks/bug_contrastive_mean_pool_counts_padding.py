"""bi-encoder with in-batch InfoNCE ([B, B] scores): the sentence embedding is the mean over EVERY position,
padding included (hidden.mean(1)), although the encoder itself gets the mask: each embedding depends on how
long its batch's longest example is."""

from tests.planted_tasks._pooled_pairs import BiEncoder, make_task  # noqa: F401 - make_task: the task's own

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the scores over the batch read the padding"}


class MeanOverEveryPosition(BiEncoder):
    def pool(self, hidden, mask):
        return hidden.mean(1)  # the bug: the pads counted


def build_model(task):
    return MeanOverEveryPosition()
