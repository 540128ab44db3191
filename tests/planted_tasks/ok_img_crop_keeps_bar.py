"""correct: the same images cropped to 6x6 ([1:7, 1:7]), which keeps every bar (rows/cols 1..6)."""

from tests.planted_tasks._bar_images import TinyCNN4, image_task

EXPECTED = None


def make_task():
    return image_task(lambda t: t.permute(2, 0, 1)[:, 1:7, 1:7].contiguous())


def build_model(task):
    return TinyCNN4(6)
