"""overlapping token blocks split at random: a text stream cut into blocks of 48 tokens every 24 tokens (a
"stride" to give each token more context), each block its own group: every validation block's halves
are the second half of one training block and the first half of another."""

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import ok_gpt_block_packing as blocks_task
from tests.planted_tasks._bert_bpe import sentences
from tests.planted_tasks._packing import PackedLM

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}
BLOCK, STRIDE = blocks_task.BLOCK, 24


def blocks():
    stream = []
    for s in sentences(200, seed=6, low=2, high=5):
        stream += tok.encode(s) + [tok.EOS_ID]
    starts = range(0, len(stream) - BLOCK + 1, STRIDE)
    return [Example(index=i, group=f"b{i}", fields={"ids": stream[s : s + BLOCK]}) for i, s in enumerate(starts)]


def make_task():  # the correct packing task's encode, collate and loss, over blocks cut with a stride
    task = blocks_task.make_task()
    task.splits = make_splits(blocks(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    return task


def build_model(task):
    return PackedLM()
