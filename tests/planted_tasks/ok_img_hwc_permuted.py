"""correct: HWC images permuted to CHW for Conv2d(3, ...)."""

from tests.planted_tasks._bar_images import SmallCNN, image_task

EXPECTED = None


def make_task():
    return image_task(lambda t: t.permute(2, 0, 1).contiguous())


def build_model(task):
    return SmallCNN()
