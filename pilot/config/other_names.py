"""Settings typed under another trainer's name (transformers' ``TrainingArguments``, Lightning's ``Trainer``):
``optim.learning_rate=1e-3`` got "did you mean optim.min_lr_ratio or optim.name", ``trian.epochs=3`` a list of
every setting. Most of pilot's users fine-tune Hugging Face models: their names are said with pilot's own."""

from __future__ import annotations

import re

# what other trainers (transformers' TrainingArguments, Lightning) call a setting -> pilot's; {v}: the value typed
ALIASES = {
    "learning_rate": "optim.lr={v}",
    "batch_size": "batch.micro_batch={v}",
    "per_device_train_batch_size": "batch.micro_batch={v}",
    "train_batch_size": "batch.micro_batch={v}",
    "per_device_eval_batch_size": "batch.eval_micro_batch={v}",
    "eval_batch_size": "batch.eval_micro_batch={v}",
    "gradient_accumulation_steps": "batch.accumulation={v}",
    "accumulate_grad_batches": "batch.accumulation={v}",
    "epochs": "budget.fixed=epochs budget.value={v}",
    "num_train_epochs": "budget.fixed=epochs budget.value={v}",
    "max_epochs": "budget.fixed=epochs budget.value={v}",
    "max_steps": "budget.fixed=updates budget.value={v}",
    "steps": "budget.fixed=updates budget.value={v}",
    "warmup_steps": "optim.warmup_updates={v}",
    "max_grad_norm": "optim.grad_clip={v}",
    "gradient_clip_val": "optim.grad_clip={v}",
    "lr_scheduler_type": "optim.schedule={v}",
    "save_steps": "checkpoint.every={v}",
    "eval_steps": "loop.eval_every={v}",
    "logging_steps": "run.log_every={v}",
    "gradient_checkpointing": "memory=checkpointing (activation checkpointing; checkpoint.* saves the training state)",
    "fp16": "precision=fp16",
    "bf16": "precision=bf16",
    "mixed_precision": "precision={v} (fp32, bf16, fp16)",
    "devices": "distributed.replicas={v}",
    "num_processes": "distributed.replicas={v}",
    "nproc_per_node": "distributed.replicas={v}",
    "max_seq_length": "data.max_len={v}",
    "max_length": "data.max_len={v}",
    "model_name_or_path": "model.path=<a local save_pretrained directory> (nothing is downloaded)",
    "output_dir": "hydra.run.dir={v}",
    "ckpt_path": "hydra.run.dir=<the run's directory> (a run resumes in its own directory)",
    "resume_from_checkpoint": "hydra.run.dir=<the run's directory> (a run resumes in its own directory)",
    "resume_from": "hydra.run.dir=<the run's directory> (a run resumes in its own directory)",
    **dict.fromkeys(
        ("load_in_4bit", "load_in_8bit", "quantization_config"),
        "adapter=lora model.dtype=bf16, the nearest (a frozen base in bf16: the built-in model loads no quantized "
        "weights; a factory of yours that loads them can: README, 'Your own model and data')",
    ),
}


def environment_variable(key: str, line: str) -> str | None:
    """``CUDA_VISIBLE_DEVICES=0,1`` typed after the command, where Hydra reads it as a setting (or a sweep)."""
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
        return None
    return (
        f"{line}: an environment variable, not a setting: it is set before the command. Fix: {line} python -m pilot ..."
    )


def other_trainers_name(key: str, line: str | None) -> str | None:
    """A key typed under another trainer's name (``optim.learning_rate``, ``trian.epochs``): pilot's own."""
    if line and (variable := environment_variable(key, line)):
        return variable
    name = key.rsplit(".", 1)[-1].lower().replace("-", "_")
    if name not in ALIASES:
        return None
    value = line.split("=", 1)[1] if line and "=" in line else "<value>"
    return f"{key}: not a setting; pilot calls it {ALIASES[name].format(v=value)}"


def device_index(key: str, value: str) -> str | None:
    """``run.device=cuda:1`` (PyTorch's name for the second GPU): which GPUs a run uses is the environment's."""
    index = re.fullmatch(r"\s*cuda\s*:\s*(\d+(?:\s*,\s*\d+)*)\s*", value)
    if key != "run.device" or index is None:
        return None
    shown = re.sub(r"\s", "", index[1])
    return (
        "which GPU a run uses is set by the environment, and the run sees it as cuda (distributed.replicas=N uses "
        f"N of those shown). Fix: CUDA_VISIBLE_DEVICES={shown} python -m pilot run.device=cuda ..."
    )


def other_trainers_flags(arguments: list[str]) -> list[str]:
    """``--fp16``, ``--nproc_per_node=2``, ``--learning_rate 1e-4``: another trainer's flag (transformers'
    TrainingArguments, torchrun's, accelerate's), said as pilot's setting; argparse's "unrecognized arguments"
    alone, before, which named no setting."""
    lines = []
    for at, argument in enumerate(arguments):
        flag, has_value, value = argument.partition("=")
        name = flag.lstrip("-").replace("-", "_").lower()
        if not flag.startswith("--") or name not in ALIASES:
            continue
        after = arguments[at + 1] if at + 1 < len(arguments) else ""
        if not has_value and "{v}" in ALIASES[name] and after and not after.startswith("-") and "=" not in after:
            value, argument = after, f"{argument} {after}"  # --learning_rate 1e-4
        setting = ALIASES[name].format(v=value or "<value>")
        lines.append(f"{argument}: another trainer's flag; pilot's settings are key=value. Fix: {setting}")
    return lines
