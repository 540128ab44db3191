"""vibration clips whose classes differ in amplitude alone (a loose mount at 3x), each clip standardised by its
own mean and standard deviation in encode ('per-sample normalisation, as in the audio tutorial'): both classes
reach the model as one distribution, and the tiny subset passed by memorising 8 clips."""

from tests.planted_tasks._vibration_clips import model, task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "encode erases what tells the classes apart"}


def make_task():
    return task(amplitude=True, per_clip=True)


def build_model(task):
    return model()
