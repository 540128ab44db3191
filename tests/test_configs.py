"""Every config composes and validates; bad input fails naming the key and the fix."""

from pathlib import Path

import pytest
import torch
from hydra.errors import ConfigCompositionException
from omegaconf.errors import OmegaConfBaseException

from pilot.errors import ConfigRefused
from pilot.train import train
from pilot.validation import ConfigError, validate

CONF = Path(__file__).resolve().parents[1] / "conf"
PAIRED = {
    "model": {
        "tiny_gpt": "instructions",
        "mlp_classifier": "digits",
        "hf_causal_lm": "instructions",
        "hf_gpt2": "instructions",
    }
}
MODEL_FOR_DATA = {"instructions": "tiny_gpt", "digits": "mlp_classifier"}  # the built-in pair of each task
GROUPS = [g.name for g in sorted(CONF.iterdir()) if g.is_dir() and g.name not in ("experiment", "hydra")]
USER_FILES = {"hf_instructions"}  # data options that read the user's own file and tokenizer directory
APPENDED = {"memory_variant"}  # not in the root defaults list: added with +group=option


def options(group):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def test_every_group_named_by_the_design_exists():
    for group in ("model", "data", "precision", "batch", "optim", "budget", "distributed", "memory", "experiment"):
        assert options(group), f"conf/{group}/ has no option"


@pytest.mark.parametrize("group, option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_option_composes_and_validates(make_cfg, group, option):
    overrides = [f"{'+' if group in APPENDED else ''}{group}={option}"]
    if group == "model":
        overrides.append(f"data={PAIRED['model'][option]}")
    if group == "data" and option in USER_FILES:
        pytest.skip(f"data={option} needs a user's file and tokenizer: tests/test_hf_data.py validates it")
    if group == "data":
        model = MODEL_FOR_DATA[option]
        overrides.append(f"model={model}")
    if (group, option) == ("distributed", "fsdp"):  # not in the pilot yet (refused there): in the run modes
        overrides.append("mode=train")
    validate(make_cfg(*overrides))


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes_validates_and_runs(make_cfg, tmp_path, experiment):
    cfg = make_cfg(f"+experiment={experiment}", "budget.fixed=updates", "budget.value=3")
    validate(cfg)
    result = train(cfg, tmp_path / experiment)
    assert result["status"] == "ok" and result["updates_done"] == 3


@pytest.mark.parametrize(
    "override, key",
    [
        ("batch.micro_batch=two", "batch.micro_batch"),  # wrong type
        ("batch.micro_batchh=2", "batch.micro_batchh"),  # misspelt key
        ("precision.dtype=fp64", "precision.dtype"),  # not one of fp32, bf16, fp16
        ("optim.betas=0.9", "optim.betas"),  # a list expected
    ],
)
def test_compose_time_errors_name_the_key(make_cfg, override, key):
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as error:
        make_cfg(override)
    assert key in str(error.value) + str(error.value.__cause__)


@pytest.mark.parametrize(
    "overrides, key, fix",
    [
        (["batch.micro_batch=-2"], "batch.micro_batch", "must lie in (0, 2147483647]"),
        (["batch.accumulation=0"], "batch.accumulation", "must lie in (0, 2147483647]"),
        (["precision=fp16", "precision.grad_scaler=false"], "precision.grad_scaler", "precision.grad_scaler=true"),
        (["precision=bf16", "precision.grad_scaler=true"], "precision.grad_scaler", "grad_scaler=false"),
        (["model._target_=nope.Model"], "model._target_", "importable"),
        (["data._target_=pilot.data.nothing.make_task"], "data._target_", "importable"),
        (["+experiment=classification", "memory=checkpointing"], "memory.activation_checkpointing", "memory=none"),
        (["+experiment=classification", "model.num_classes=9"], "model.num_classes", "model.num_classes=10"),
        (["model.max_len=32"], "model.max_len", "model.max_len=96 (or more)"),
        (["distributed.backend=nccl"], "distributed.backend", "gloo"),
        (["data.split.val_fraction=0.6", "data.split.test_fraction=0.5"], "data.split.val_fraction", "below 1"),
        (["optim.min_lr_ratio=2"], "optim.min_lr_ratio", "[0, 1]"),
    ],
)
def test_validation_names_key_value_and_fix(make_cfg, overrides, key, fix):
    with pytest.raises(ConfigError) as error:
        validate(make_cfg(*overrides))
    message = str(error.value)
    assert key in message and fix in message


def build_classifier(**settings):
    """A factory ``_target_``: a function that says nothing about checkpointing until it has built."""
    from pilot.models.mlp_classifier import MLPClassifier

    return MLPClassifier(**settings)


def build_classifier_claiming(**settings):
    return build_classifier(**settings)


build_classifier_claiming.supports_activation_checkpointing = True  # a claim the model it builds does not keep


def build_tiny_gpt(**settings):
    from pilot.models.tiny_gpt import TinyGPT

    return TinyGPT(**settings)


def test_checkpointing_is_judged_on_the_model_a_factory_builds(make_cfg):
    """memory=checkpointing was refused for every factory _target_ (a function returning a transformers
    model: "does not support activation checkpointing"), since the function itself declares nothing.
    The model it builds on the meta device answers: accepted when it can, refused when it cannot."""
    validate(make_cfg(f"model._target_={__name__}.build_tiny_gpt", "memory=checkpointing"))
    with pytest.raises(ConfigError) as error:
        validate(
            make_cfg(
                "+experiment=classification", f"model._target_={__name__}.build_classifier", "memory=checkpointing"
            )
        )
    assert [p.key for p in error.value.problems] == ["memory.activation_checkpointing"]
    assert "build_classifier builds a model that does not support activation checkpointing" in str(error.value)
    with pytest.raises(ConfigError, match="build_classifier_claiming builds a model that does not support"):
        validate(
            make_cfg(
                "+experiment=classification",
                f"model._target_={__name__}.build_classifier_claiming",
                "memory=checkpointing",
            )
        )


def test_the_gpu_campaigns_own_config_is_estimated_on_a_machine_without_a_gpu(make_cfg):
    """mode=estimate answers "what must I rent?" from a CPU machine: it refused run.device=cuda and
    distributed.backend=nccl ("no CUDA device is visible"), though it starts no process on any device."""
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    campaign = ("run.device=cuda", "distributed=ddp2", "distributed.backend=nccl")
    validate(make_cfg("mode=estimate", *campaign))
    with pytest.raises(ConfigError) as error:  # a run that would start them is still refused
        validate(make_cfg("mode=train", *campaign))
    assert {"run.device", "distributed.backend"} <= {p.key for p in error.value.problems}


def test_a_gpu_count_of_zero_gets_one_fix_that_is_itself_valid(make_cfg):
    with pytest.raises(ConfigError) as error:  # a second line advised rental.counts=[0, 1, 2, 4, 8]
        validate(make_cfg("mode=estimate", "rental.gpu_count=0"))
    assert [p.key for p in error.value.problems] == ["rental.gpu_count"] and "[0," not in str(error.value)


def test_all_problems_are_reported_at_once(make_cfg):
    cfg = make_cfg("batch.micro_batch=-1", "batch.accumulation=0", "model._target_=nope.Model")
    with pytest.raises(ConfigError) as error:
        validate(cfg)
    keys = {p.key for p in error.value.problems}
    assert {"batch.micro_batch", "batch.accumulation", "model._target_"} <= keys


def test_invalid_config_fails_before_any_output(make_cfg, tmp_path):
    with pytest.raises(ConfigError):
        train(make_cfg("batch.micro_batch=0"), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_budget_that_buys_no_update_is_refused(make_cfg, tmp_path):
    cfg = make_cfg("budget=examples", "budget.value=5", "batch.drop_last=true")
    with pytest.raises(ValueError, match="budget.value=5"):
        train(cfg, tmp_path / "run")


def test_a_target_naming_a_class_attribute_imports_as_hydra_resolves_it():
    """``_target_: transformers.AutoModelForSequenceClassification.from_config`` builds under Hydra, but
    pilot split the path at its last dot and refused it as "No module named ...AutoModel..."."""
    from pilot.config.values import import_target
    from pilot.models.tiny_gpt import TinyGPT

    assert import_target("pilot.models.tiny_gpt.TinyGPT.forward") is TinyGPT.forward
    with pytest.raises(ModuleNotFoundError, match="pilot_no_such_package"):
        import_target("pilot_no_such_package.Model")
    with pytest.raises(AttributeError, match="Nope"):
        import_target("pilot.models.tiny_gpt.TinyGPT.Nope")


def test_a_master_port_another_process_listens_on_is_refused_by_name(make_cfg):
    """distributed.master_port taken by another process: the first rank's rendezvous raised torch's EADDRINUSE
    traceback and left no record (a sweep job without a result, exit 0)."""
    import socket

    from pilot.engine.distributed import refuse_busy_port

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"distributed.master_port={port}: .*another process listens on it"):
            validate(make_cfg("distributed=ddp2", f"distributed.master_port={port}"))
        with pytest.raises(ConfigRefused, match="Fix: distributed.master_port=0"):
            refuse_busy_port(port)  # taken between validation and the spawn
    validate(make_cfg("distributed=ddp2", f"distributed.master_port={port}"))  # free again


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("not json", "its config.json does not load (OSError"),
        ("a word for a size", "expected int, got str"),
        ("no weights", "no weights there (none of model.safetensors"),
    ],
)
def test_a_damaged_model_path_is_refused_naming_what_is_wrong(make_cfg, tmp_path, damage, said):
    """A config.json that is not JSON, a size given as a word, a config without weights: a traceback with
    exit 1 (train), a 'crashed' setup step (pilot) or 'could not run the model' (estimate), before."""
    import json

    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2
    )
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    if damage == "not json":
        (tmp_path / "config.json").write_text("{not json")
    elif damage == "a word for a size":
        values = json.loads((tmp_path / "config.json").read_text())
        (tmp_path / "config.json").write_text(json.dumps({**values, "hidden_size": "big"}))
    else:
        (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="model.path=") as refused:
        validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path}"))
    assert said in str(refused.value)


def test_a_data_file_of_one_group_names_the_group_not_the_fraction(make_cfg, tmp_path):
    """Every row in one group: the fix said was to raise val_fraction 'e.g. 0.1' while it was 0.1."""
    import json

    data = tmp_path / "one_group.jsonl"
    data.write_text(
        "".join(json.dumps({"instruction": f"say {i}", "answer": str(i), "group": "g"}) + "\n" for i in range(50))
    )
    with pytest.raises(ConfigError) as refused:
        validate(make_cfg("mode=train", f"data.path={data}"))
    said = str(refused.value)
    assert "in 1 group(s): data.split.by=group keeps a group in one split" in said and "e.g. 0.1" not in said


def test_settings_the_run_does_not_read_are_said(make_cfg):
    """optim.momentum with AdamW, betas with SGD, optim.name without its group, loop settings in
    mode=estimate, FSDP on one rank: accepted with exit 0 and nothing said, before."""
    from pilot.validation.unread import unread_settings

    def said(*overrides: str) -> str:
        return "\n".join(unread_settings(make_cfg(*overrides), list(overrides)))

    assert "optim.momentum=0.9: only SGD reads it" in said("optim.momentum=0.9")
    assert "only AdamW reads them" in said("optim=sgd", "optim.betas=[0.5,0.6]")
    assert "the optim group is still adamw (optim.lr=0.001" in said("optim.name=sgd")
    assert said("optim.name=adamw", "optim.lr=3e-4") == ""  # the group's own optimizer: nothing changes
    assert "mode=estimate trains nothing" in said("mode=estimate", "checkpoint.every=5")
    assert said("mode=estimate", "loop.eval_every=5") == ""  # the plan times its validations
    assert "one rank shards nothing" in said("distributed=fsdp", "distributed.replicas=1")
    assert said("distributed=fsdp", "distributed.replicas=0") == ""  # not 1: its own refusal says it
    assert said("optim=sgd", "optim.momentum=0.9", "optim.lr=0.1") == ""  # every one read
    for key in ("checkpoint.force_resume", "checkpoint.continue_diverged"):  # nothing is resumed to force
        assert "checkpoint.resume=false starts afresh" in said("checkpoint.resume=false", f"{key}=true")
        assert said(f"{key}=true") == ""
    # outside examination: the pilot's settings outside a pilot, FSDP's in a run that does not shard
    assert "mode=train runs none of the pilot's checks" in said("mode=train", "pilot.tiny.examples=4")
    assert "mode=estimate runs none of the pilot's checks" in said("mode=estimate", "pilot.tiny.examples=4")
    assert said("mode=estimate", "pilot.steady_steps=3") == ""  # the estimate times a pilot's steady steps
    assert said("pilot.tiny.examples=4") == ""  # a pilot reads it
    assert "only FSDP reads it (distributed.strategy=ddp)" in said("mode=train", "distributed.fsdp.cpu_offload=true")
    assert said("distributed=fsdp", "distributed.fsdp.cpu_offload=true") == ""
    assert said("mode=estimate", "distributed.fsdp.reshard_after_forward=false") == ""  # its sheet's sharded rows


def test_hydra_s_directory_of_the_other_kind_of_launch_is_said():
    from pilot.validation.unread import unread_hydra_settings

    assert "only a sweep (-m) reads it" in unread_hydra_settings(["hydra.sweep.dir=/x"], multirun=False)[0]
    assert "a sweep (-m) does not read it" in unread_hydra_settings(["hydra.run.dir=/x"], multirun=True)[0]
    assert unread_hydra_settings(["hydra.sweep.dir=/x", "hydra.run.dir=/y"], multirun=False)[0].startswith(
        "hydra.sweep"
    )
    assert unread_hydra_settings(["hydra.run.dir=/x"], multirun=False) == []
    assert unread_hydra_settings(["hydra.sweep.dir=/x"], multirun=True) == []


def test_a_plug_in_tasks_path_and_tokenizer_are_its_own(tmp_path):
    """A plug-in task's ``path`` (a folder of shards) and ``tokenizer`` (a name it chooses by) were refused by the
    checks of pilot's own data options ("is a directory ... the JSONL, CSV or Parquet file"; "no such directory"),
    before the task's own function, which reads them, was called; pilot's own options are still checked."""
    from omegaconf import OmegaConf

    from pilot.validation.model_data import _check_data_path, _check_tokenizer

    def problems(target: str) -> list[str]:
        cfg = OmegaConf.create({"data": {"_target_": target, "path": str(tmp_path), "tokenizer": "bpe"}})
        found: list = []
        _check_data_path(cfg, found)
        _check_tokenizer(cfg, found)
        return [problem.key for problem in found]

    assert problems("my_tasks.shards.make_task") == []
    assert problems("pilot.data.hf_instructions.make_task") == ["data.path", "data.tokenizer"]


def test_a_launcher_starting_more_processes_per_job_than_replicas_is_refused_before_the_sweep():
    """hydra.launcher.tasks_per_node=2 with distributed.replicas=1: every job failed at its start ('the launcher
    started 2 process(es)') after the sweep launched; the same numbers, or one task per job, pass."""
    from omegaconf import OmegaConf

    from pilot.validation import _launcher_processes_problem

    def job(tasks, nodes, replicas):
        return OmegaConf.create(
            {"hydra": {"launcher": {"tasks_per_node": tasks, "nodes": nodes}}, "distributed": {"replicas": replicas}}
        )

    said = _launcher_processes_problem(job(2, 1, 1))
    assert said and "distributed.replicas=1" in said and "Fix: distributed.replicas=2" in said
    assert "replicas=4" in _launcher_processes_problem(job(2, 2, 2))
    assert "tasks_per_node=1" in _launcher_processes_problem(job(2, 2, 2))  # 2 replicas over 2 nodes: one task each
    assert "tasks_per_node" not in _launcher_processes_problem(job(2, 2, 3)).split("Fix:")[1]  # none divides 3
    assert _launcher_processes_problem(job(2, 1, 2)) is None and _launcher_processes_problem(job(1, 1, 2)) is None
    assert _launcher_processes_problem(OmegaConf.create({"hydra": {}, "distributed": {"replicas": 1}})) is None


def test_a_pilot_setting_outside_a_pilot_is_warned_unread_not_refused(make_cfg):
    """pilot.tiny.examples=0 mode=estimate was warned "does not read it" and then refused by its range."""
    validate(make_cfg("mode=estimate", "pilot.tiny.examples=0"))
    validate(make_cfg("mode=train", "pilot.oom_in_phase=nowhere"))
    with pytest.raises(ConfigError) as error:  # a pilot reads it; the estimate reads pilot.steady_steps
        validate(make_cfg("pilot.tiny.examples=0"))
    assert [p.key for p in error.value.problems] == ["pilot.tiny.examples"]
    with pytest.raises(ConfigError):
        validate(make_cfg("mode=estimate", "pilot.steady_steps=0"))


def test_the_estimates_and_the_rentals_settings_in_mode_train_are_warned_unread_not_refused(make_cfg):
    """estimate.seq_len=512 mode=train was refused as longer than the model's positions and estimate.tolerance=5
    by its range, while estimate.seq_len=50, rental.gpu or rental.utilisation=0 passed without a word."""
    from pilot.validation.unread import unread_settings

    for line in (["estimate.seq_len=512"], ["estimate.tolerance=5"], ["rental.utilisation=0"]):
        cfg = make_cfg("mode=train", *line)
        validate(cfg)
        assert [said.split(":")[0] for said in unread_settings(cfg, line)] == line
    cfg = make_cfg("mode=train", "rental.gpu=H100-80GB")
    assert "mode=train makes no choice sheet" in unread_settings(cfg, ["rental.gpu=H100-80GB"])[0]
    with pytest.raises(ConfigError) as error:  # a train run whose record holds an estimate reads it
        validate(make_cfg("mode=train", "estimate.in_runs=true", "estimate.seq_len=512"))
    assert [p.key for p in error.value.problems] == ["estimate.seq_len"]
    with pytest.raises(ConfigError):
        validate(make_cfg("mode=estimate", "rental.utilisation=0"))
