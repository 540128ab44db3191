"""correct: the classic seq2seq copy task (encoder-decoder must reproduce its source): decoder gets <bos> +
target, labels target + <eos>; the target equals the source by design."""

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import ok_seq2seq as base
from tests.planted_tasks._common import words

EXPECTED = None
Model = base.Model
REVERSE = False


def examples(reverse: bool = REVERSE):
    ws = words(360, 3)
    return [
        Example(
            index=i,
            group=f"s{i}",
            fields={
                "instruction": " ".join(ws[3 * i : 3 * i + 3]),
                "answer": (" ".join(ws[3 * i : 3 * i + 3]))[::-1] if reverse else " ".join(ws[3 * i : 3 * i + 3]),
            },
        )
        for i in range(120)
    ]


def make_task(reverse: bool = REVERSE):
    t = base.make_task()
    t.splits = make_splits(examples(reverse), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    return t
