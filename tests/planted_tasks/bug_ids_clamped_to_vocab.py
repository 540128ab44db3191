"""language model sized for 256 byte ids ('a byte tokenizer has 256 tokens'); the index error on <bos>/<eos>
(ids 257/258) was 'fixed' by clamping input_ids and labels to 255 in collate: every <eos> target silently
becomes byte 255."""

from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._common import lm_task, pad_collate

EXPECTED = {"step": "inspect", "verdict": "fail"}
VOCAB = 256


def collate(items):
    batch = pad_collate(items)
    batch["input_ids"] = batch["input_ids"].clamp(max=VOCAB - 1)
    batch["labels"] = batch["labels"].clamp(max=VOCAB - 1)  # -100 stays -100
    return batch


def make_task():
    task = lm_task(collate=collate)
    task.info["vocab_size"] = VOCAB
    return task


def build_model(task):
    return TinyGPT(vocab_size=VOCAB, max_len=64, d_model=32, n_layer=1, n_head=2, dropout=0.0)
