"""Typed schemas for every config group, stored in Hydra's ConfigStore.

Each YAML file in ``conf/<group>/`` starts from one of these schemas (through
its defaults list), so a misspelt key or a wrong type fails when Hydra composes
the config, with the full key in the message. A schema holds the types, the
enums and what each setting means; the values, with the comments a user reads,
are in the YAML only (``MISSING`` here), so each default is stated once
(tests/test_defaults_once.py). The bound of every number and the cross-field
rules live in ``pilot.validation`` (``RANGES``): one pass that reports every
problem at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from pilot.config.data_schema import DigitsConfig, HFInstructionsConfig, InstructionsConfig


class Dtype(str, Enum):
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"


class BudgetKind(str, Enum):
    updates = "updates"  # the number of optimizer updates is held fixed
    epochs = "epochs"  # the number of passes over the training split is held fixed
    examples = "examples"  # the number of training examples seen is held fixed


class Schedule(str, Enum):
    constant = "constant"
    cosine = "cosine"
    linear = "linear"


class OptimName(str, Enum):
    adamw = "adamw"
    sgd = "sgd"


class Backend(str, Enum):
    auto = "auto"  # gloo on CPU, nccl on CUDA
    gloo = "gloo"
    nccl = "nccl"


class Strategy(str, Enum):
    ddp = "ddp"  # every rank holds the whole model; gradients all-reduced (DistributedDataParallel)
    fsdp = "fsdp"  # parameters, gradients and optimizer state sharded over the ranks (FSDP2, fully_shard)


class Device(str, Enum):
    auto = "auto"  # cuda when available, else cpu
    cpu = "cpu"
    cuda = "cuda"


class Mode(str, Enum):
    pilot = "pilot"  # inspect, split audit, tiny subset, phase gates, report (python -m pilot)
    train = "train"  # one training run of the variant to its budget (sweeps)
    estimate = "estimate"  # memory estimate at the configured scale, choice sheet, campaign plan


# --------------------------------------------------------------------------- model
@dataclass
class ModelConfig:
    """Any model: ``_target_`` is a class or factory called with the other keys."""

    _target_: str = MISSING


@dataclass
class TinyGPTConfig(ModelConfig):
    """conf/model/tiny_gpt.yaml."""

    _target_: str = "pilot.models.tiny_gpt.TinyGPT"
    vocab_size: int = MISSING  # tokens the embedding and the head cover (from the data)
    max_len: int = MISSING  # longest sequence the position table holds (from the data)
    d_model: int = MISSING  # width of the residual stream
    n_layer: int = MISSING  # transformer blocks
    n_head: int = MISSING  # attention heads per block (d_model must divide)
    dropout: float = MISSING  # dropout probability; 0 keeps runs bit-reproducible


@dataclass
class MLPClassifierConfig(ModelConfig):
    """conf/model/mlp_classifier.yaml."""

    _target_: str = "pilot.models.mlp_classifier.MLPClassifier"
    in_features: int = MISSING  # input width (from the data)
    num_classes: int = MISSING  # size of the output head; must equal the data's class count
    hidden: int = MISSING  # width of each hidden layer
    n_hidden_layers: int = MISSING  # hidden layers
    dropout: float = MISSING  # dropout probability


@dataclass
class HFCausalLMConfig(ModelConfig):
    """conf/model/hf_causal_lm.yaml and hf_gpt2.yaml: a transformers causal LM, no adapter code."""

    _target_: str = "pilot.models.hf_causal_lm.build"
    model_type: str = MISSING  # any architecture transformers' AutoConfig knows (llama, gpt2, qwen2...)
    config: Dict[str, Any] = MISSING  # keyword arguments of AutoConfig.for_model (sizes, tying...)
    path: Optional[str] = MISSING  # a local save_pretrained directory; null = fresh from config
    dtype: str = MISSING  # parameter dtype: fp32, bf16 or fp16 (autocast is precision=...)
    attn_implementation: str = MISSING  # sdpa, eager, ... (transformers' attn_implementation)


# --------------------------------------------------------------------------- adapter
@dataclass
class AdapterConfig:
    """conf/adapter/none.yaml: no key, no adapter; the whole model trains."""


@dataclass
class LoraAdapterConfig(AdapterConfig):
    """conf/adapter/lora.yaml: a ``peft.LoraConfig``; the keys are peft's own."""

    _target_: str = "peft.LoraConfig"
    r: int = MISSING  # rank of the low-rank update
    lora_alpha: float = MISSING  # the update is scaled by lora_alpha / r
    lora_dropout: float = MISSING  # dropout on the adapter's input
    target_modules: Any = MISSING  # all-linear, or a list of module names (q_proj, v_proj...)
    bias: str = MISSING  # none, all or lora_only: which biases train
    modules_to_save: Optional[List[str]] = MISSING  # modules trained fully beside the adapter (a new head)


# --------------------------------------------------------------------------- training
@dataclass
class PrecisionConfig:
    dtype: Dtype = MISSING  # compute precision under autocast (weights stay fp32)
    grad_scaler: bool = MISSING  # dynamic loss scaling; required for fp16
    init_scale: float = MISSING  # first loss scale of the gradient scaler


@dataclass
class BatchConfig:
    micro_batch: int = MISSING  # examples per forward/backward on one replica
    accumulation: int = MISSING  # micro-batches summed before one optimizer update
    eval_micro_batch: int = MISSING  # examples per forward during evaluation
    drop_last: bool = MISSING  # drop the incomplete last update of each epoch


@dataclass
class OptimConfig:
    name: OptimName = MISSING
    lr: float = MISSING  # peak learning rate, reached after warm-up (validate: 0 .. 10)
    weight_decay: float = MISSING
    betas: List[float] = MISSING  # AdamW only
    momentum: float = MISSING  # SGD only
    warmup_updates: int = MISSING  # linear warm-up from 0 to lr over this many updates
    schedule: Schedule = MISSING  # shape after warm-up
    min_lr_ratio: float = MISSING  # final lr = lr * min_lr_ratio (cosine, linear)
    grad_clip: float = MISSING  # clip the global gradient norm at this value; 0 disables


@dataclass
class BudgetConfig:
    fixed: BudgetKind = MISSING  # which quantity a comparison holds fixed
    value: int = MISSING  # how many updates / epochs / examples (validate: <= 10M updates)


@dataclass
class FsdpConfig:
    blocks: List[str] = MISSING  # module class names sharded as one unit each; [] = the model's own list
    reshard_after_forward: bool = MISSING  # free gathered parameters after forward (re-gather in backward)
    cpu_offload: bool = MISSING  # keep parameter, gradient and optimizer shards in host memory
    sync_every_micro_batch: bool = MISSING  # reduce-scatter after each micro-batch: gradients stay sharded


@dataclass
class DistributedConfig:
    replicas: int = MISSING  # data-parallel processes (ranks); each sees different examples
    strategy: Strategy = MISSING
    backend: Backend = MISSING
    master_port: int = MISSING  # 0 = pick a free port when pilot spawns the replicas
    fsdp: FsdpConfig = field(default_factory=FsdpConfig)


@dataclass
class MemoryConfig:
    activation_checkpointing: bool = MISSING  # recompute block activations in backward: less memory, more compute


@dataclass
class RunConfig:
    device: Device = MISSING
    log_every: int = MISSING  # plain log line every N updates when not on a terminal
    threads: int = MISSING  # torch CPU threads; 0 = chosen from the usable CPUs and the replicas (engine/threads.py)


@dataclass
class LoopConfig:
    """Declared before a run starts: when to validate and why a run stops early."""

    eval_every: int = MISSING  # validation point every N updates (and after the last); 0 = last only
    eval_examples: int = MISSING  # fixed validation subset (its first N examples), same for every run
    divergence_factor: float = MISSING  # diverged when the loss is non-finite or > factor x the first update's loss;
    # 0 = off (non-finite only), else > 1
    early_stop_patience: int = MISSING  # stop after N validation points without improvement; 0 = off


@dataclass
class CampaignConfig:
    control: str = MISSING  # overrides naming the control variant, e.g. "optim.lr=1e-4" (recap)
    run_root: str = MISSING  # where single runs go (and where relaunch parents are looked up)
    sweep_root: str = MISSING  # where multiruns go
    journal: str = MISSING  # the campaign's notebook: plans and conclusions, timestamped, appended
    quality_tolerance: Optional[float] = MISSING  # recap: a variant's val loss within this share of the control's


@dataclass
class EstimateConfig:
    """The memory estimate on fake tensors (pilot.estimate.fake_tensor)."""

    seq_len: Optional[int] = MISSING  # sequence length to estimate at; null = data.max_len (sequence tasks)
    tolerance: float = MISSING  # pilot step: estimate vs the same tracker on real tensors, relative
    in_runs: bool = MISSING  # mode=train: record this variant's fake-tensor estimate in run.json (~1-3 s)


@dataclass
class RentalConfig:
    """The choice sheet and the campaign plan (DESIGN section 8); conf/rental/default.yaml."""

    # name -> fields of pilot.rental.catalog.Gpu, checked by pilot.validation (a typed Dict would refuse
    # the command-line addition +rental.catalog.NAME={...})
    catalog: Dict[str, Any] = MISSING
    counts: List[int] = MISSING  # GPUs per job considered
    margin: float = MISSING  # need = estimated peak x (1 + margin) + reserve_gib (declared, not measured)
    reserve_gib: float = MISSING  # CUDA context and kernels, outside the estimate (declared)
    utilisation: float = MISSING  # share of peak throughput assumed for FLOP-based time (declared)
    gpu: Optional[str] = MISSING  # catalog key of the campaign plan's hardware; null = smallest that fits
    gpu_count: Optional[int] = MISSING  # GPUs per job for the plan; null = the chosen row's count
    packages_days: List[int] = MISSING  # rental packages the plan fills, in days
    closing_reserve_minutes: float = MISSING  # per job, when export + reload were not measured (declared)


@dataclass
class CheckpointConfig:
    every: int = MISSING  # save every N updates (and always after the last); 0 = last only
    keep_last: int = MISSING  # checkpoints kept (>= 1); rotation never deletes the newest valid one
    resume: bool = MISSING  # continue from the newest valid checkpoint in the run directory
    force_resume: bool = MISSING  # resume even if the defining config differs (the difference is recorded)
    max_requeues: int = MISSING  # cluster: interruptions (preemption, time limit) before ending as "preempted"
    continue_diverged: bool = MISSING  # true: a diverged run started again continues from its last finite checkpoint


@dataclass
class ClosingConfig:
    control_examples: int = MISSING  # validation examples rerun after reloading the export
    rtol: float = MISSING  # tolerance of the rerun (CPU fp32: exact; GPU or reduced precision: declare)
    atol: float = MISSING


@dataclass
class ResumeCheckConfig:
    updates_before: int = MISSING  # k: updates before the checkpoint and the new process
    updates_total: int = MISSING  # n: updates the resumed and the uninterrupted runs both reach
    rtol: float = MISSING  # 0 = bit-identical (CPU fp32); declare a tolerance for GPUs
    atol: float = MISSING


@dataclass
class TinySubsetConfig:
    examples: int = MISSING  # training examples the loop must learn
    max_updates: int = MISSING  # give up after this many updates (each sees all the examples)
    max_updates_if_falling: int = MISSING  # ... unless the loss still falls: again from scratch over this many
    loss_drop: float = MISSING  # pass needs final loss <= initial loss / loss_drop
    min_recovery: float = MISSING  # pass needs this share of examples predicted exactly
    check_every: int = MISSING  # evaluate the subset every N updates (stop early once passed)


@dataclass
class PilotChecksConfig:
    show_examples: int = MISSING  # transformed examples printed and saved
    steady_steps: int = MISSING  # updates measured in the steady_steps phase
    tiny: TinySubsetConfig = field(default_factory=TinySubsetConfig)
    resume_check: ResumeCheckConfig = field(default_factory=ResumeCheckConfig)
    oom_in_phase: Optional[str] = MISSING  # fault injection: raise out-of-memory in this phase (tests)


@dataclass
class PilotConfig:
    """conf/config.yaml: the groups' schemas, then the settings without a group."""

    mode: Mode = MISSING  # pilot: the checks and phase gates; train: a full run to the budget
    model: Any = MISSING
    adapter: Any = MISSING
    data: Any = MISSING
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    batch: BatchConfig = field(default_factory=BatchConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    run: RunConfig = field(default_factory=RunConfig)
    pilot: PilotChecksConfig = field(default_factory=PilotChecksConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    campaign: CampaignConfig = field(default_factory=CampaignConfig)
    estimate: EstimateConfig = field(default_factory=EstimateConfig)
    rental: RentalConfig = field(default_factory=RentalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    closing: ClosingConfig = field(default_factory=ClosingConfig)
    seed: int = MISSING  # model init and data order (0 .. 2**32-1, numpy's range); the split has its own salt


def register_configs() -> None:
    """Store every schema; YAML files name them in their defaults list."""
    cs = ConfigStore.instance()
    cs.store(name="pilot_schema", node=PilotConfig)
    cs.store(group="model", name="schema_tiny_gpt", node=TinyGPTConfig)
    cs.store(group="model", name="schema_mlp_classifier", node=MLPClassifierConfig)
    cs.store(group="model", name="schema_hf_causal_lm", node=HFCausalLMConfig)
    cs.store(group="adapter", name="schema", node=AdapterConfig)
    cs.store(group="adapter", name="schema_lora", node=LoraAdapterConfig)
    cs.store(group="data", name="schema_instructions", node=InstructionsConfig)
    cs.store(group="data", name="schema_digits", node=DigitsConfig)
    cs.store(group="data", name="schema_hf_instructions", node=HFInstructionsConfig)
    cs.store(group="precision", name="schema", node=PrecisionConfig)
    cs.store(group="batch", name="schema", node=BatchConfig)
    cs.store(group="optim", name="schema", node=OptimConfig)
    cs.store(group="budget", name="schema", node=BudgetConfig)
    cs.store(group="distributed", name="schema", node=DistributedConfig)
    cs.store(group="memory", name="schema", node=MemoryConfig)
    cs.store(group="rental", name="schema", node=RentalConfig)
