"""What an estimate runs on: the longest batches a campaign can meet, built as real tensors before any
fake one exists, then handed to the fake mode as fake tensors of the same shapes and dtypes."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

import psutil
import torch
from omegaconf import DictConfig, OmegaConf, open_dict
from torch._subclasses.fake_tensor import FakeTensorMode

from pilot.data.task import Batch, TaskData, longest_items
from pilot.estimate.refusal import EstimateRefused


def config_variant(
    cfg: DictConfig, micro_batch: int | None, checkpointing: bool | None, ranks: int | None = None
) -> DictConfig:
    """``cfg`` at another micro-batch, checkpointing setting or number of ranks (> 1: FSDP over that
    many; 1: one unsharded replica); None keeps the config's."""
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        if micro_batch is not None:
            cfg.batch.micro_batch = int(micro_batch)
        if checkpointing is not None:
            cfg.memory.activation_checkpointing = bool(checkpointing)
        if ranks is not None:
            cfg.distributed.strategy = "fsdp" if ranks > 1 else "ddp"
            cfg.distributed.replicas = int(ranks)
    return cfg


def target_seq_len(cfg: DictConfig, task: TaskData) -> int | None:
    """The sequence length the estimate runs at, or None for tasks without sequences."""
    asked = OmegaConf.select(cfg, "estimate.seq_len")
    if asked is not None:
        if task.synthetic_batch is None:
            raise EstimateRefused(
                f"estimate.seq_len={asked}, but the task ({task.kind}) has no synthetic_batch, so pilot "
                "cannot build inputs of that length without guessing how the task encodes them. Fix: "
                "remove estimate.seq_len (its longest real examples are used), or give the task a "
                'synthetic_batch(micro_batch, seq_len) (README, "Your own model and data").'
            )
        return int(asked)
    length = OmegaConf.select(cfg, "data.max_len")
    if task.synthetic_batch is not None and length is not None:
        return int(length)  # the longest sequence a batch can hold
    return None  # the longest real examples (a task without data.max_len declares no longer one)


def _batch(task: TaskData, split: str, count: int, seq_len: int | None) -> Batch:
    """``count`` of the longest examples, as real tensors; a batch too large for this machine's memory
    (the estimate's inputs are real before they are fake) is refused naming the setting."""
    if seq_len is not None and (short := _beyond_memory(count, seq_len)):  # Linux promises memory, then kills
        key = "batch.micro_batch" if split == "train" else "batch.eval_micro_batch"
        raise EstimateRefused(
            f"estimate.seq_len={seq_len} with {key}={count}: the estimate builds that batch as real tensors before "
            f"it fakes them, about {short[0] / 2**30:.1f} GiB (ids, labels and mask of 8 bytes per position), and this "
            f"machine has {short[1] / 2**30:.1f} GiB available. Fix: a smaller {key} (or a shorter estimate.seq_len)."
        )
    try:
        if seq_len is not None:
            return task.synthetic_batch(count, seq_len)
        longest = longest_items(task, split, count)
        return task.collate([longest[i % len(longest)] for i in range(count)])
    except (MemoryError, RuntimeError) as error:
        if not isinstance(error, MemoryError) and "allocate" not in str(error):
            raise
        key = "batch.micro_batch" if split == "train" else "batch.eval_micro_batch"
        length = f" x {seq_len} positions" if seq_len is not None else ""
        raise EstimateRefused(
            f"{key}={count}: the estimate builds one batch of {count:,} examples{length} as real tensors "
            f"before it fakes them, and this machine's memory does not hold it "
            f"({str(error).splitlines()[0][:120]}...). Fix: a smaller {key}."
        ) from error


def _with_padding(task: TaskData, batch: Batch) -> Batch:
    """The batch with one padded position (the first row's last, or first when padding is on the left)
    when its attention mask has none: a model may skip its mask on a batch without padding, which only
    real values can tell (transformers builds no 4-D mask then), while a fake tensor cannot, so the
    estimate would count a mask the measurement did not make. Training batches of examples of
    different lengths are padded: the estimate and its measurement both run the padded path."""
    mask = batch.get("attention_mask")
    if not torch.is_tensor(mask) or mask.dim() != 2 or mask.shape[1] < 2 or not bool(mask.bool().all()):
        return batch
    padded = mask.clone()
    padded[0, 0 if task.info.get("padding_side") == "left" else -1] = 0
    return {**batch, "attention_mask": padded}


def _beyond_memory(count: int, seq_len: int) -> tuple[int, int] | None:
    """(bytes, available) when a synthetic batch's tensors (about three of int64 per position) would take
    more than half of this machine's available memory (the kernel's out-of-memory killer ends the process
    with no word otherwise), else None."""
    needed = 3 * 8 * int(count) * int(seq_len)
    available = psutil.virtual_memory().available
    return (needed, available) if needed > available // 2 else None


@dataclass
class EstimateInputs:
    """What an estimate runs on: real tensors, built before any fake one exists."""

    seq_len: int | None  # None: the task has no sequences (its longest real examples are used)
    micro_batch: int
    eval_micro_batch: int
    accumulation: int
    runs: int  # micro-batches of an estimated update: min(accumulation, 2)
    train_batch: Batch
    eval_batch: Batch
    update_targets: int  # targets of the estimated update (all its micro-batches)
    train_items: list[dict[str, Any]]


def estimate_inputs(cfg: DictConfig, task: TaskData) -> EstimateInputs:
    seq_len = target_seq_len(cfg, task)
    micro, eval_micro = int(cfg.batch.micro_batch), int(cfg.batch.eval_micro_batch)
    accumulation = int(cfg.batch.accumulation)
    runs = min(accumulation, 2)
    train_batch = _with_padding(task, _batch(task, "train", micro, seq_len))
    eval_batch = _with_padding(task, _batch(task, "val", eval_micro, seq_len))
    update_targets = max(1, int(task.target_count(train_batch)) * runs)
    return EstimateInputs(
        seq_len, micro, eval_micro, accumulation, runs, train_batch, eval_batch, update_targets, task.encoded("train")
    )


def fake_inputs(mode: FakeTensorMode, inputs: EstimateInputs) -> EstimateInputs:
    """The batches as fake tensors of the same shapes and dtypes, made by the mode itself: code that
    looks at its inputs (transformers' attention-mask helpers) sees fake tensors, not real values,
    so only a ``forward`` that reads values itself is refused. The tracker now counts the batch, as
    it does on real tensors (before, real inputs converted inside an operation were not counted)."""

    def fake(batch: Batch) -> Batch:
        return {key: mode.from_tensor(value) if torch.is_tensor(value) else value for key, value in batch.items()}

    return replace(inputs, train_batch=fake(inputs.train_batch), eval_batch=fake(inputs.eval_batch))


LONGER_THAN_THE_DATA = "estimated at sequences of "  # how length_notes' note starts


def length_notes(inputs: EstimateInputs, far: int = 4) -> list[str]:
    """A sequence length (data.max_len, or estimate.seq_len) ``far`` times the data's longest training
    example, said: the estimate is for sequences of that length, which this data never fills
    (data.max_len=1000000 on 121-token examples: 73.7 TiB, while the pilot's own run took 1.9 GB)."""
    lengths = [len(item["input_ids"]) for item in inputs.train_items if item.get("input_ids") is not None]
    if inputs.seq_len is None or not lengths or inputs.seq_len < far * max(lengths):
        return []
    return [
        f"{LONGER_THAN_THE_DATA}{inputs.seq_len:,} positions (data.max_len, or estimate.seq_len: the longest a "
        f"batch can hold), while this data's longest training example has {max(lengths):,}: right for a campaign "
        f"whose examples are that long; for this data, data.max_len={max(lengths)}"
    ]
