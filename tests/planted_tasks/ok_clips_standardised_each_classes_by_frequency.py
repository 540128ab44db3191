"""correct: vibration clips whose classes differ in frequency at one amplitude, each clip standardised by its
own mean and standard deviation: the amplitude it removes tells nothing, the frequency stays."""

from tests.planted_tasks._vibration_clips import model, task

EXPECTED = None


def make_task():
    return task(amplitude=False, per_clip=True)


def build_model(task):
    return model()
