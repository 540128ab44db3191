"""correct twin of bug_clips_standardised_each_erases_amplitude: every clip divided by one constant, the
amplitude that tells the classes apart kept."""

from tests.planted_tasks._vibration_clips import model, task

EXPECTED = None


def make_task():
    return task(amplitude=True, per_clip=False)


def build_model(task):
    return model()
