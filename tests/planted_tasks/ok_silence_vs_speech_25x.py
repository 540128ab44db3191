"""correct: the frames of ok_silence_vs_speech with a noise floor at -28 dBFS (peak ~0.02) while speech/music
peak ~0.5: silence is legitimately ~25x quieter, and loudness IS the evidence."""

from tests.planted_tasks import ok_silence_vs_speech as base

EXPECTED = None
build_model = base.build_model


def make_task():
    return base.make_task(floor=0.02)
