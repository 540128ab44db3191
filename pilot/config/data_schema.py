"""Typed schemas of the ``data`` group (``conf/data/*.yaml``): the split every task takes and each
built-in task's settings; stored in Hydra's ConfigStore by ``pilot.config.schema.register_configs``,
whose rules (values in the YAML only, bounds in ``pilot.validation``) they follow."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from omegaconf import MISSING


class PaddingSide(str, Enum):
    right = "right"
    left = "left"


class SplitBy(str, Enum):
    group = "group"  # keep every example of one group (conversation, patient, document) in one split
    time = "time"  # train strictly before validation before test, by the example's time field


# --------------------------------------------------------------------------- data
@dataclass
class SplitConfig:
    by: SplitBy = MISSING  # the unit that prevents leakage between splits
    val_fraction: float = MISSING  # share of groups (or of the time range) for validation
    test_fraction: float = MISSING  # share of groups (or of the time range) for test
    salt: str = MISSING  # changes which groups land where, without touching the seed


@dataclass
class DataConfig:
    """Any task: ``_target_`` returns a ``pilot.data.task.TaskData``."""

    _target_: str = MISSING
    split: SplitConfig = field(default_factory=SplitConfig)


@dataclass
class InstructionsConfig(DataConfig):
    """conf/data/instructions.yaml."""

    _target_: str = "pilot.data.instructions.make_task"
    path: str | None = MISSING  # JSONL file; null = the embedded data set
    max_len: int = MISSING  # tokens kept per example; longer ones are truncated
    padding_side: PaddingSide = MISSING  # where pad tokens go in a micro-batch
    truncation_side: PaddingSide = MISSING  # which end loses tokens when too long
    mask_instruction: bool = MISSING  # instruction tokens get label -100 (not in the loss)
    vocab_size: int = MISSING  # token ids of the byte tokenizer
    pad_token_id: int = MISSING  # the byte tokenizer's pad, bos and eos ids (the model's config reads them)
    bos_token_id: int = MISSING
    eos_token_id: int = MISSING


@dataclass
class HFInstructionsConfig(DataConfig):
    """conf/data/hf_instructions.yaml."""

    _target_: str = "pilot.data.hf_instructions.make_task"
    path: str = MISSING  # local JSONL, CSV or Parquet file
    file_format: str | None = MISSING  # json, csv, tsv or parquet; None = from the extension
    tokenizer: str = MISSING  # local tokenizer directory (AutoTokenizer.from_pretrained)
    vocab_size: int = MISSING  # len(tokenizer), resolved from the directory
    pad_token_id: int | None = MISSING  # the tokenizer's special ids, resolved from the directory
    bos_token_id: int | None = MISSING  # (None where it has none); the model's config reads them
    eos_token_id: int | None = MISSING
    instruction_field: str = MISSING  # column of the prompt's text
    answer_field: str = MISSING  # column of the trained text
    group_field: str | None = MISSING  # column of the split unit; None = each row alone
    time_field: str | None = MISSING  # column of a time for split.by=time
    prompt_format: str = MISSING  # prompt with {instruction}, when no chat template is used
    use_chat_template: bool = MISSING  # the tokenizer's chat template when it has one
    max_len: int = MISSING  # tokens kept per example; longer ones are truncated
    padding_side: PaddingSide = MISSING  # where pad tokens go in a micro-batch
    truncation_side: PaddingSide = MISSING  # which end loses tokens when too long
    mask_instruction: bool = MISSING  # prompt tokens get label -100 (not in the loss)


@dataclass
class DigitsConfig(DataConfig):
    """conf/data/digits.yaml."""

    _target_: str = "pilot.data.digits.make_task"
    in_features: int = MISSING  # pixels per image
    num_classes: int = MISSING  # digit classes
