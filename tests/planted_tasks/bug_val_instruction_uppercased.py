"""train/eval skew: encode upper-cases the *instruction* of validation examples only (answers untouched):
validation measures another input distribution."""

from pilot.data.split import make_splits
from tests.planted_tasks._common import SPLIT, encode_instruction, generation_task, instruction_examples, tiny_gpt

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "val inputs are drawn from another token distribution"}


def make_task():
    ex = instruction_examples()
    val_ids = {e.index for e in make_splits(ex, SPLIT)["val"]}

    def encode(e):
        if e.index in val_ids:  # the bug
            e = type(e)(
                index=e.index, group=e.group, fields={**e.fields, "instruction": e.fields["instruction"].upper()}
            )
        return encode_instruction(e)

    return generation_task(ex, encode=encode)


def build_model(task):
    return tiny_gpt(task)
