"""Hugging Face causal LMs with no user code (model=hf_causal_lm, model=hf_gpt2), and the checks that
keep them honest: outputs as they come (``logits_of``), the contract named in every refusal, tied
weights in exports and resumes, fake-tensor estimates that read the attention mask, and activation
checkpointing that must change something (README_HF_MODELS.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from safetensors.torch import save_file
from transformers import ResNetConfig, ResNetForImageClassification

from pilot.checks.contract import check_contract
from pilot.closing.export import export_with_controls
from pilot.closing.reload import check_in_new_process
from pilot.data.task import ContractError, logits_of
from pilot.engine.build import refuse_short_tables
from pilot.engine.checkpointing import enable_checkpointing
from pilot.errors import ConfigRefused, PilotError, failure_summary
from pilot.estimate.checkpointing_effect import CheckpointingIneffective, checkpointing_effect
from pilot.estimate.fake_tensor import EstimateRefused, estimate_memory
from pilot.estimate_run import compare, estimate_step, run_estimate
from pilot.models.embedding_tables import output_layer, token_embedding
from pilot.models.hf_causal_lm import build
from pilot.models.tiny_gpt import TinyGPT
from pilot.pilot_run import run_pilot
from pilot.validation import validate
from pilot.weights_file import read_weights, write_weights

transformers = pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _pilot(*overrides: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m pilot <overrides>`` as a user types it (offline, one CPU thread)."""
    env = {**os.environ, **OFFLINE}
    return subprocess.run(
        [sys.executable, "-m", "pilot", *overrides, "run.threads=1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _record(run_dir: Path) -> dict:
    return json.loads((run_dir / "run.json").read_text())


# ----------------------------------------------------------------------------- outputs as they come
class DictWithoutLogits(torch.nn.Module):
    """Returns {"scores": ...}: a dict, but no logits."""

    def __init__(self, vocab_size: int, max_len: int = 0, **_):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab_size, 8)

    def forward(self, input_ids, attention_mask=None):
        return {"scores": self.emb(input_ids)}


class LossFirstTuple(DictWithoutLogits):
    """Returns (loss, logits), as transformers does given labels with return_dict=False."""

    def forward(self, input_ids, attention_mask=None):
        logits = self.emb(input_ids)
        return logits.float().pow(2).mean(), logits


def test_logits_are_read_from_a_tensor_a_tuple_and_a_model_output():
    logits = torch.randn(2, 3, 5)
    output = transformers.modeling_outputs.CausalLMOutputWithPast(logits=logits)
    for form in (logits, (logits, None), [logits], {"logits": logits}, output):
        assert logits_of(form) is logits
    with pytest.raises(ContractError, match=r"no logits.*forward must return.*Your own model and data"):
        logits_of({"scores": logits})


def test_the_contract_names_the_missing_key_and_the_readme_section(make_cfg):
    cfg = make_cfg("model=hf_causal_lm")
    task, model = instantiate(cfg.data, _convert_="all"), instantiate(cfg.model, _convert_="all")
    assert check_contract(task, model).verdict == "pass"
    without_labels = replace(
        task, collate=lambda items: {k: v for k, v in task.collate(items).items() if k != "labels"}
    )
    with pytest.raises(ContractError, match=r"no 'labels'.*Your own model and data"):
        check_contract(without_labels, model)
    reads_other_key = replace(task, forward=lambda m, batch: m(batch["tokens"]))
    with pytest.raises(ContractError, match=r"batch\['tokens'\].*Your own model and data"):
        check_contract(reads_other_key, model)


@pytest.mark.parametrize(
    "model, overrides, said",
    [
        (
            "hf_causal_lm",
            ["model.config.vocab_size=258"],
            "token embedding has 258 rows but the data has 259 token ids",
        ),
        ("hf_gpt2", ["model.config.n_positions=16"], "learns 16 positions but the data holds sequences of up to"),
        ("hf_gpt2", ["estimate.seq_len=512"], r"tokens \(estimate.seq_len\): a longer one indexes past"),
        (  # RoBERTa counts positions from pad_token_id + 1: a table of data.max_len rows holds 2 fewer
            "hf_causal_lm",
            ["model.model_type=roberta", "model.config.pad_token_id=1", "+model.config.is_decoder=true"],
            "RobertaForCausalLM learns",
        ),
    ],
)
def test_a_model_whose_tables_are_shorter_than_the_data_is_refused_not_estimated_as_a_fit(
    make_cfg, model, overrides, said
):
    """A token id or a position past the model's table crashes the first forward (a device-side assert
    on a GPU); on fake tensors no index is read, so the estimate called such a model a fit."""
    from pilot.engine.build import build_model

    cfg = make_cfg(f"model={model}", *overrides)
    with pytest.raises(ContractError, match=said):
        build_model(cfg)
    with pytest.raises(EstimateRefused, match=said):
        estimate_memory(cfg)


def test_a_short_table_is_refused_before_the_run_directory_exists(tmp_path):
    """mode=train model=hf_gpt2 model.config.n_positions=16: refused by building the model, after the run's
    directory and a failed record existed; the corrected command was then refused there as another config.
    Found now on the model built on the meta device before anything runs (exit 2, no directory)."""
    for overrides in (["model.config.n_positions=16"], ["model.config.vocab_size=100"]):
        run_dir = tmp_path / overrides[0].rsplit(".", 1)[-1].split("=")[0]
        done = _pilot("mode=train", "model=hf_gpt2", *overrides, f"hydra.run.dir={run_dir}")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert "GPT2LMHeadModel" in done.stderr and not run_dir.exists(), done.stderr[-2000:]


def test_a_model_type_without_the_attention_kernel_asked_is_refused_with_the_setting_to_change(tmp_path):
    """gemma2 has no sdpa in transformers 5: the refusal names model.attn_implementation=eager, in the
    estimate and in the pilot, before anything runs (validation builds the model one block deep on the
    meta device). Hydra's 'Error in call to target' and a traceback before; then a setup failure."""
    for mode in ("pilot", "estimate"):
        run_dir = tmp_path / mode
        done = _pilot("model=hf_causal_lm", "model.model_type=gemma2", f"mode={mode}", f"hydra.run.dir={run_dir}")
        assert done.returncode == 2, done.stderr[-3000:]
        assert "model.attn_implementation=sdpa: Gemma2ForCausalLM" in done.stderr and "Traceback" not in done.stderr
        assert "Fix: model.attn_implementation=eager" in done.stderr
        assert not run_dir.exists()


def test_a_saved_model_without_the_attention_kernel_asked_names_the_setting_not_the_directory(tmp_path):
    """A saved Bloom under the default sdpa: 'transformers cannot load it ... Fix: a local directory written by
    save_pretrained', about a directory that loads with model.attn_implementation=eager."""
    import transformers

    settings = dict(vocab_size=300, hidden_size=16, n_layer=1, n_head=2)
    transformers.BloomForCausalLM(transformers.BloomConfig(**settings)).save_pretrained(tmp_path / "bloom")
    with pytest.raises(PilotError, match="model.attn_implementation=sdpa: .*Fix: model.attn_implementation=eager"):
        build("bloom", path=str(tmp_path / "bloom"))
    assert build("bloom", path=str(tmp_path / "bloom"), attn_implementation="eager") is not None


@pytest.mark.parametrize(
    "model, said",
    [
        ("DictWithoutLogits", "with no logits"),
        # a loss first, read as the logits: the contract passed, inspect crashed in an IndexError, objective
        # blamed class weights and the reload check a sound export
        ("LossFirstTuple", "a tuple whose first element, read as the logits, is one number"),
    ],
)
def test_the_pilot_refuses_a_model_without_logits_at_its_first_step(make_cfg, tmp_path, model, said, monkeypatch):
    cfg = make_cfg(f"model._target_={__name__}.{model}")  # TinyGPT's other keys are ignored
    assert run_pilot(cfg, tmp_path / "run") == 1
    record = _record(tmp_path / "run")
    assert record["verdicts"] == {"contract": "fail"}, record["verdicts"]
    assert said in json.dumps(record) and "Fix: forward" in json.dumps(record)
    # the config as it ran, resolved: env_check elsewhere resolved .hydra/config.yaml's ${oc.env:PILOT_JOURNAL}
    # with that machine's variables and refused the run directory as not written so
    from pilot.env_check.run_dir import _load_config

    monkeypatch.setenv("PILOT_JOURNAL", str(tmp_path / "another" / "journal.md"))
    assert _load_config(tmp_path / "run", record)[1].startswith("config.yaml (matches run.json's config_hash")


class HeadsThatDoNotDivide(torch.nn.Module):
    """A user's model whose width is not a multiple of its heads: the first forward crashes in a view."""

    def __init__(self, vocab_size: int, max_len: int = 0, d_model: int = 48, n_head: int = 5, **_):
        super().__init__()
        self.n_head, self.emb = n_head, torch.nn.Embedding(vocab_size, d_model)
        self.out = torch.nn.Linear(d_model, vocab_size)

    def forward(self, input_ids, attention_mask=None):
        x = self.emb(input_ids)
        b, t, d = x.shape
        x = x.view(b, t, self.n_head, d // self.n_head).reshape(b, t, d)
        return self.out(x)


def test_a_forward_that_crashes_on_settings_that_disagree_names_them_defaults_first(make_cfg, tmp_path):
    """GPT-J keeps rotary_dim=64 (its default for the full model) beside a 16-wide head: the crash named
    only tensor sizes and no setting. Now the contract names the settings holding those sizes, the
    default the user did not set first, for transformers' configs and for a user's own model alike."""
    cfg = make_cfg("model=hf_causal_lm", "model.model_type=gptj")
    assert run_pilot(cfg, tmp_path / "run") == 1
    said = json.dumps(_record(tmp_path / "run"))
    assert _record(tmp_path / "run")["verdicts"] == {"contract": "fail"}
    assert "model.config.rotary_dim=64 (not set: gptj's default), model.config.hidden_size=64" in said, said
    assert "modeling_gptj.py" in said and "crashed:" not in said

    own = make_cfg(f"model._target_={__name__}.HeadsThatDoNotDivide", "model.d_model=48", "model.n_head=5")
    task, model = instantiate(own.data, _convert_="all"), instantiate(own.model, _convert_="all")
    from pilot.checks.contract import model_settings

    with pytest.raises(ContractError, match=r"forward crashed .* RuntimeError: .*settings: model\.n_head=5\. Fix"):
        check_contract(task, model, model_settings(own))


@pytest.mark.parametrize("model_type, causal", [("llama", True), ("gpt2", True), ("bert", False)])
def test_a_bert_built_as_a_causal_lm_is_found_not_causal(make_cfg, model_type, causal):
    """model.model_type=bert builds a BertLMHeadModel without is_decoder: it attends both ways, its output
    at t reads token t+1, and every verdict passed. The causality comparison tells it from real decoders (a
    plug-in's model too); pilot's own build now refuses such a BERT, so it is built here as a user's would be."""
    from pilot.checks.causality import causality_findings

    cfg = make_cfg("model=hf_causal_lm", f"model.model_type={model_type}")
    task = instantiate(cfg.data, _convert_="all")
    if causal:
        model = instantiate(cfg.model, _convert_="all")
    else:
        settings = {k: v for k, v in cfg.model.config.items() if k != "num_key_value_heads"}
        model = transformers.BertLMHeadModel(transformers.BertConfig(**settings))
    findings, details = causality_findings(task, model, task.encoded("train"))
    assert details["judged"] and (not findings) == causal, (findings, details)
    if not causal:
        assert "is_decoder=True" in str(findings[0])


@pytest.mark.parametrize(
    "overrides, said",
    [
        (["model.model_type=t5"], "model.model_type=t5: transformers has no causal language model for it"),
        (
            ["model.model_type=gpt_neox", "model.attn_implementation=flash_attention_2"],
            "model.attn_implementation=flash_attention_2: FlashAttention2",
        ),
        (["model.config.pad_token_id=3", "model.config.vocab_size=2"], "model.config.pad_token_id=3 is not below"),
    ],
)
def test_what_transformers_refuses_when_building_is_one_line_naming_the_setting(overrides, said):
    """mode=train printed Hydra's 'Error in call to target', a traceback or transformers' ~200 class names,
    then pilot's own suggestions computed for the default model ('model.model_type: not a setting')."""
    done = _pilot("model=hf_causal_lm", *overrides, "mode=train", "budget.value=2")
    assert done.returncode == 2 and f"  - {said.split(':')[0]}" in done.stderr, done.stderr[-3000:]  # validation
    assert said in done.stderr and "not a setting" not in done.stderr and "Traceback" not in done.stderr


def test_a_flash_kernel_not_installed_is_told_pytorchs_fused_attention_first():
    """flash_attention_2 without its package was told eager, the farthest from it in memory; sdpa is the nearest."""
    from pilot.models.hf_refusals import attention_refusal

    missing = ImportError("FlashAttention2 has been toggled on, but it cannot be used. The package is not installed.")
    assert "Fix: model.attn_implementation=sdpa" in str(attention_refusal(missing, "flash_attention_2"))
    refused = ValueError("BloomForCausalLM does not support an attention implementation through sdpa yet.")
    assert str(attention_refusal(refused, "sdpa")).endswith("Fix: model.attn_implementation=eager")


# ----------------------------------------------------------------------------- tied weights
def _gpt2(make_cfg) -> tuple:
    cfg = make_cfg("model=hf_gpt2")
    return cfg, instantiate(cfg.data, _convert_="all"), instantiate(cfg.model, _convert_="all")


def test_tied_weights_are_written_once_and_read_back_equal(make_cfg, tmp_path):
    _, _, model = _gpt2(make_cfg)
    state = model.state_dict()
    assert state["lm_head.weight"].data_ptr() == state["transformer.wte.weight"].data_ptr()
    with pytest.raises(RuntimeError, match="share memory"):  # what a plain save_file does with them
        save_file(state, str(tmp_path / "plain.safetensors"))
    write_weights(state, tmp_path / "model.safetensors")
    fresh = type(model)(model.config)
    fresh.load_state_dict(read_weights(tmp_path / "model.safetensors"), strict=True)
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(fresh.state_dict()[name], tensor, rtol=0, atol=0)
    assert fresh.lm_head.weight.data_ptr() == fresh.transformer.wte.weight.data_ptr()  # still tied


def test_the_same_weights_give_the_same_file_bytes_in_every_process(tmp_path):
    """safetensors writes its metadata in a hash map's order, which changes between processes: the same
    export had other bytes (another checksum) each time. write_weights sorts it."""
    script = (
        "import sys, torch; from pathlib import Path; from pilot.weights_file import write_weights; "
        "w = torch.arange(6.0).reshape(2, 3); "
        "write_weights({'a': w, 'b': w, 'c': torch.ones(2)}, Path(sys.argv[1]), metadata={'format': 'pt', 'z': '1'})"
    )
    files = [tmp_path / f"{i}.safetensors" for i in range(4)]
    for path in files:
        subprocess.run([sys.executable, "-c", script, str(path)], check=True, timeout=120)
    assert len({path.read_bytes() for path in files}) == 1
    assert read_weights(files[0])["b"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_a_tied_export_reloads_equal_in_a_new_process(make_cfg, tmp_path):
    cfg, task, model = _gpt2(make_cfg)
    export_with_controls(model, task, cfg, tmp_path / "export")
    result = check_in_new_process(tmp_path / "export", cfg)
    assert result["verdict"] == "pass", result
    assert "bit-identical" in result["reason"]


def test_a_failed_child_process_shows_its_message_never_an_empty_runtime_error():
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "    save_file(state)\n"
        "RuntimeError: \n"
        "            Some tensors share memory, this will lead to duplicate memory on disk\n"
        "            A potential way to correctly save your model is to use `save_model`.\n"
    )
    assert (
        failure_summary(stderr) == "RuntimeError: Some tensors share memory, this will lead to duplicate memory on disk"
    )
    assert failure_summary("") == "no output"


# ----------------------------------------------------------------------------- fake-tensor estimate
def test_a_model_that_reads_its_attention_mask_is_estimated_on_fake_tensors(make_cfg):
    cfg = make_cfg("model=hf_causal_lm")
    task = instantiate(cfg.data, _convert_="all")
    estimate = estimate_memory(cfg, task)
    measured = estimate_memory(cfg, task, fake=False)
    ok, worst, lines = compare(estimate, measured, float(cfg.estimate.tolerance))
    assert ok, lines
    assert estimate.parameters == sum(p.numel() for p in instantiate(cfg.model, _convert_="all").parameters())


def test_mode_estimate_examines_the_attention_calls_of_a_transformers_model(make_cfg):
    """transformers reads its padding mask's values (``.item()``) to decide whether to drop it, which
    the meta device cannot: mode=estimate said "attention requirements not examined" for every
    transformers model. On fake tensors (shapes of the meta model) the calls are recorded."""
    from pilot.environment.attention import record_attention_calls

    cfg = make_cfg("model=hf_causal_lm", "precision=bf16")
    calls, _ = record_attention_calls(cfg, instantiate(cfg.data, _convert_="all"), meta=True)
    assert [(c["heads"], c["head_dim"], c["dtype"], c["count"]) for c in calls] == [(4, 16, "bfloat16", 2)]
    assert calls[0]["query"][-2] == cfg.data.max_len  # at the campaign's length, not the pilot's data


def test_mode_estimate_examines_the_attention_calls_of_a_saved_model(make_cfg, tmp_path):
    """from_pretrained refuses the meta device (transformers 5: "an anti-pattern"), so a model.path model's
    attention was never examined; on meta its saved config builds it (shapes only, no weights read)."""
    from pilot.environment.attention import record_attention_calls

    config = transformers.LlamaConfig(
        vocab_size=259, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=96, pad_token_id=256, bos_token_id=257, eos_token_id=258,
    )  # fmt: skip
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / "saved")
    cfg = make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'saved'}", "precision=bf16")
    calls, _ = record_attention_calls(cfg, instantiate(cfg.data, _convert_="all"), meta=True)
    assert [(c["heads"], c["head_dim"], c["dtype"], c["count"]) for c in calls] == [(2, 16, "bfloat16", 1)]


def test_an_estimate_at_one_billion_parameters_runs_on_fake_tensors(make_cfg):
    width = [
        "model.config.hidden_size=4096",
        "model.config.intermediate_size=11008",
        "model.config.num_hidden_layers=5",
        "model.config.num_attention_heads=32",
        "model.config.num_key_value_heads=32",
    ]
    cfg = make_cfg("model=hf_causal_lm", *width, "estimate.seq_len=256", "batch.micro_batch=1", "precision=bf16")
    started = time.perf_counter()
    estimate = estimate_memory(cfg)
    assert time.perf_counter() - started < 120
    assert 0.95e9 < estimate.parameters < 1.1e9
    # fp32 parameters, gradients and two AdamW moments: 16 bytes per parameter at the least
    assert estimate.peak_bytes > 16 * estimate.parameters
    assert estimate.host_rss_peak_bytes < 4 * 2**30  # nothing of the 16 GB was allocated


# ----------------------------------------------------------------------------- activation checkpointing
class ClaimsCheckpointing(TinyGPT):
    """Says it supports activation checkpointing, and ignores the flag."""

    supports_activation_checkpointing = True

    def forward(self, input_ids, attention_mask=None):
        self.activation_checkpointing = False  # the no-op: every activation kept
        return super().forward(input_ids, attention_mask)


class DetachesInsteadOfRecomputing(TinyGPT):
    """'Checkpointing' that keeps no activation and recomputes nothing: the blocks run without
    gradients, so they never train (a planted mistake the activations alone cannot tell apart)."""

    supports_activation_checkpointing = True

    def forward(self, input_ids, attention_mask=None):
        if not (self.activation_checkpointing and self.training):
            return super().forward(input_ids, attention_mask)
        positions = torch.arange(input_ids.shape[1])[None]
        x = self.token_emb(input_ids) + self.pos_emb(positions)
        mask = torch.ones(input_ids.shape[1], input_ids.shape[1], dtype=torch.bool).tril()[None, None]
        with torch.no_grad():
            for block in self.blocks:
                x = block(x, mask)
        return self.head(self.ln_f(x))


@pytest.mark.parametrize("model", ["hf_causal_lm", "hf_gpt2"])
def test_checkpointing_uses_the_models_own_method_and_lowers_the_activations(make_cfg, model):
    cfg = make_cfg(f"model={model}", "memory=checkpointing")
    built = instantiate(cfg.model, _convert_="all")
    assert "use_reentrant=False" in enable_checkpointing(built)
    assert getattr(built, "is_activation_checkpointing", None) or built.is_gradient_checkpointing
    task = instantiate(cfg.data, _convert_="all")
    saved = checkpointing_effect(cfg, task, estimate_memory(cfg, task))
    assert saved is not None and "instead of" in saved and "FLOPs per micro-batch (+" in saved


def test_a_model_that_cannot_checkpoint_is_refused():
    with pytest.raises(ConfigRefused, match="cannot checkpoint activations"):
        enable_checkpointing(torch.nn.Linear(2, 2))


def test_a_model_that_claims_checkpointing_but_does_nothing_fails_the_pilot(make_cfg, tmp_path):
    cfg = make_cfg(f"model._target_={__name__}.ClaimsCheckpointing", "memory=checkpointing")
    task = instantiate(cfg.data, _convert_="all")
    with pytest.raises(CheckpointingIneffective, match="changes nothing"):
        checkpointing_effect(cfg, task, estimate_memory(cfg, task))
    result = estimate_step(cfg, task, tmp_path, [])  # the pilot's estimate step
    assert result.verdict == "fail" and "claims support but recomputes nothing" in result.reason
    assert run_estimate(cfg, tmp_path / "estimate") == 1  # mode=estimate


def test_checkpointing_that_lowers_activations_without_recomputing_fails(make_cfg):
    cfg = make_cfg(f"model._target_={__name__}.DetachesInsteadOfRecomputing", "memory=checkpointing")
    task = instantiate(cfg.data, _convert_="all")
    with pytest.raises(CheckpointingIneffective, match="recomputes nothing: .* FLOPs per micro-batch with it"):
        checkpointing_effect(cfg, task, estimate_memory(cfg, task))


def test_a_forward_that_reads_values_is_still_refused_naming_the_op(make_cfg):
    cfg = make_cfg("model._target_=tests.test_estimate.ReadsValues")
    with pytest.raises(EstimateRefused, match="_local_scalar_dense"):
        estimate_memory(cfg)


# ----------------------------------------------------------------------------- the commands a user types
def test_the_pilot_on_a_llama_passes_every_verdict(tmp_path):
    _ok(_pilot("model=hf_causal_lm", f"hydra.run.dir={tmp_path / 'run'}"))
    verdicts = _record(tmp_path / "run")["verdicts"]
    assert set(verdicts.values()) == {"pass"}, verdicts


def test_a_tied_gpt2_trains_with_checkpointing_in_bf16_and_closes(tmp_path):
    run_dir = tmp_path / "run"
    _ok(_pilot("model=hf_gpt2", "mode=train", "budget.value=6", "memory=checkpointing", "precision=bf16",
               f"hydra.run.dir={run_dir}"))  # fmt: skip
    record = _record(run_dir)
    assert record["status"] == "ok", record
    assert json.loads((run_dir / "export" / "reload_check.json").read_text())["verdict"] == "pass"
    assert not list(run_dir.rglob("*.error.txt"))


@pytest.mark.slow  # the default suite loads a saved model in tests/test_adapters.py (model.path + LoRA)
def test_a_model_saved_with_save_pretrained_is_loaded_from_its_directory(tmp_path):
    config = transformers.LlamaConfig(
        vocab_size=259, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=96, pad_token_id=256, bos_token_id=257, eos_token_id=258,
    )  # fmt: skip
    torch.manual_seed(0)
    saved = transformers.LlamaForCausalLM(config)
    saved.save_pretrained(tmp_path / "tiny-llama")
    run_dir = tmp_path / "run"
    _ok(_pilot("model=hf_causal_lm", f"model.path={tmp_path / 'tiny-llama'}", "mode=train", "budget.value=4",
               f"hydra.run.dir={run_dir}"))  # fmt: skip
    assert _record(run_dir)["status"] == "ok"
    exported = read_weights(run_dir / "export" / "model.safetensors")
    assert exported["model.embed_tokens.weight"].shape == (259, 32)  # the saved model's sizes, not the YAML's


def test_a_missing_model_directory_is_refused_with_the_fix(make_cfg, tmp_path):
    cfg = make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'nowhere'}")
    with pytest.raises(PilotError, match=r"model.path=.*no config.json there.*never downloads"):
        validate(cfg)  # before anything runs, as python -m pilot does
    with pytest.raises(PilotError, match="no config.json there"):  # and the builder, called without pilot
        build("llama", path=str(tmp_path / "nowhere"))


@pytest.mark.slow
def test_the_pilot_on_a_tied_gpt2_passes_every_verdict(tmp_path):
    _ok(_pilot("model=hf_gpt2", f"hydra.run.dir={tmp_path / 'run'}"))
    verdicts = _record(tmp_path / "run")["verdicts"]
    assert set(verdicts.values()) == {"pass"}, verdicts


@pytest.mark.slow
def test_the_lr_sweep_runs_on_a_transformers_model(tmp_path):
    _ok(_pilot("-m", "model=hf_causal_lm", "+experiment=lr_sweep", "budget.value=4",
               f"hydra.sweep.dir={tmp_path / 'sweep'}", timeout=900))  # fmt: skip
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("run.json")]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records), [r.get("status") for r in records]


def test_the_template_builds_another_architecture_from_yaml_only(make_cfg):
    searchpath = f"hydra.searchpath=[file://{ROOT / 'examples' / 'hf_causal_lm' / 'conf'}]"
    model = instantiate(make_cfg(searchpath, "model=qwen2_tiny").model, _convert_="all")
    assert type(model).__name__ == "Qwen2ForCausalLM" and model.config.num_key_value_heads == 2
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied


def test_an_unknown_model_type_names_the_nearest_ones_not_all_of_them():
    with pytest.raises(PilotError) as refused:
        build(model_type="llamma", config={})
    message = str(refused.value)
    assert "model.model_type=llamma" in message and "model.model_type=llama" in message and len(message) < 400


def test_an_unknown_model_type_near_none_is_offered_common_model_types_not_a_class_name():
    """transformers' CONFIG_MAPPING also holds a few class names: "notamodel" was told to try
    model.model_type=EvollaModel, which is not a model type at all."""
    with pytest.raises(PilotError) as refused:
        build(model_type="notamodel", config={})
    message = str(refused.value)
    assert "Model" not in message.split("Fix:")[1].split("(")[0] and "model.model_type=" not in message.split("Fix:")[1]
    assert "llama" in message.split("Fix:")[1]


def test_left_padding_gives_a_model_with_learned_positions_its_tokens_own_positions(make_cfg):
    """GPT-2 (learned absolute positions) with data.padding_side=left read its padding: the built-in
    task passed no position_ids, so a left-padded row's tokens sat at other positions than alone.
    Each row collated alone and left-padded in a batch now gives the same logits at its real tokens."""
    cfg = make_cfg("model=hf_causal_lm", "model.model_type=gpt2", "data.padding_side=left")
    task = instantiate(cfg.data, _convert_="all")
    torch.manual_seed(0)
    model = instantiate(cfg.model, _convert_="all").eval()
    items = task.encoded("train")[:4]
    batch = task.collate(items)
    with torch.no_grad():
        together = task.forward(model, batch).logits
        for row, item in enumerate(items):
            alone = task.forward(model, task.collate([item])).logits[0]
            real = batch["attention_mask"][row].bool()
            assert torch.allclose(together[row][real], alone, atol=1e-5), row


def _composite_causal_type() -> str | None:
    """A model type whose config holds a text_config that transformers builds as a causal LM (Qwen3.5, ...)."""
    from pilot.models.hf_config_reads import _causal_sub_configs

    mapping = transformers.models.auto.configuration_auto.CONFIG_MAPPING
    causal = transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    return next((name for name in causal if name in mapping and _causal_sub_configs(transformers, mapping[name])), None)


def test_a_composite_model_type_that_reads_no_size_is_refused_before_it_is_built_at_its_default_size(make_cfg):
    """model.model_type=qwen3_5 (text_config + vision_config) stored every size of the YAML and read none:
    the default model, billions of parameters, ended the process out of memory (SIGKILL) with no word."""
    model_type = _composite_causal_type()
    if model_type is None:
        pytest.skip("this transformers has no composite config with a causal text model")
    with pytest.raises(ConfigRefused) as refused:
        validate(make_cfg("model=hf_causal_lm", f"model.model_type={model_type}"))
    message = str(refused.value)
    assert (
        f"model.model_type={model_type}" in message
        and "reads none of" in message
        and "model.config.hidden_size" in message
    )
    assert "Fix: model.model_type=" in message, message  # its causal text model
    with pytest.raises(PilotError, match="reads none of"):
        build(model_type=model_type, config={"hidden_size": 64, "num_hidden_layers": 2})


def test_settings_a_model_type_does_not_read_and_sizes_left_at_its_defaults_are_said(caplog):
    """OPT has ffn_dim, not intermediate_size: the YAML's 176 was read by nothing and OPT kept a 3072-wide
    MLP; Gemma keeps head_dim=256 beside hidden_size 64 and 4 heads. Said once per process."""
    sizes = {"hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 1, "num_attention_heads": 4}
    with caplog.at_level("WARNING", logger="pilot.models.hf_causal_lm"):
        build(model_type="opt", config={**sizes, "vocab_size": 300})
        build(model_type="opt", config={**sizes, "vocab_size": 300})
        build(model_type="gemma", config={**sizes, "vocab_size": 300})
        build(model_type="llama", config={**sizes, "vocab_size": 300})
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2, said
    assert "model.config.intermediate_size=176" in said[0] and "ffn_dim=3072" in said[0]
    assert "head_dim=256 is its default, not hidden_size / num_attention_heads = 16" in said[1]


def test_a_decoder_whose_depth_and_heads_the_settings_do_not_reach_is_said(caplog):
    """MBart maps num_hidden_layers and num_attention_heads onto its encoder; its causal LM is the decoder,
    built with 12 layers and 16 heads (6.8M parameters for the YAML's ~0.1M) and only the FFN widths said."""
    sizes = {"hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 1, "num_attention_heads": 4}
    with caplog.at_level("WARNING", logger="pilot.models.hf_causal_lm"):
        build(model_type="mbart", config={**sizes, "vocab_size": 300})
    (said,) = [record.getMessage() for record in caplog.records if "its own sizes" in record.getMessage()]
    assert "decoder_layers=12" in said and "decoder_attention_heads=16" in said, said


@pytest.mark.parametrize("model_type", ["mamba", "jamba", "recurrent_gemma"])
def test_read_only_block_types_do_not_crash_the_check_before_the_run(model_type):
    """Their configs' layer_types / layers_block_type are read-only properties: the one-block build of
    the check before the run raised AttributeError, a traceback before any record. Mamba's refusal of
    sdpa is now said with its fix; the others pass the check (they train: budget.value=2 above)."""
    from pilot.models.hf_causal_lm import config_problem

    sizes = {"hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4}
    sizes["num_key_value_heads"] = 4
    found = config_problem(model_type, {**sizes, "vocab_size": 300}, set(), "sdpa")
    if model_type == "mamba":
        assert found is not None and "Fix: model.attn_implementation=eager" in found[1], found
    else:
        assert found is None, found


def test_a_model_type_transformers_cannot_build_even_from_its_default_config_is_said_as_such():
    """dbrx and hunyuan_v1_dense in transformers 5.24: AttributeError / TypeError from their own code with
    their own defaults. Said as transformers' fault for the type; an error of the settings alone is not."""
    from types import SimpleNamespace

    from pilot.models.hf_causal_lm import _unbuildable_type

    def fails(config, **_):
        raise AttributeError("'XAttentionConfig' object has no attribute 'rope_theta'")

    def builds(config, **_):
        return torch.nn.Linear(1, 1)

    for from_config, said in ((fails, True), (builds, False)):
        fake = SimpleNamespace(
            __version__="9.9",
            AutoConfig=SimpleNamespace(for_model=lambda model_type: SimpleNamespace(model_type=model_type)),
            AutoModelForCausalLM=SimpleNamespace(from_config=from_config),
        )
        found = _unbuildable_type(fake, "xmodel", "sdpa", AttributeError("no attribute 'rope_theta'"))
        assert (found is not None) == said, found
    assert found is None
    found = _unbuildable_type(
        SimpleNamespace(
            __version__="9.9",
            AutoConfig=SimpleNamespace(for_model=lambda model_type: SimpleNamespace(model_type=model_type)),
            AutoModelForCausalLM=SimpleNamespace(from_config=fails),
        ),
        "xmodel",
        "sdpa",
        AttributeError("no attribute 'rope_theta'"),
    )
    assert found[0] == {"model_type": "xmodel"} and "transformers 9.9 cannot build it" in found[1]
    assert "not of your settings" in found[1]


def test_a_build_that_crashes_on_settings_that_disagree_names_them(make_cfg):
    """XGLM takes pad_token_id as the padding row of its position table: the YAML's 256 beside the
    default max_position_embeddings crashed the build (IndexError, a traceback). It is now a refusal
    naming the setting the message's sizes match."""
    from pilot.engine.build import build_model
    from pilot.errors import user_error

    cfg = make_cfg("model=hf_causal_lm", "model.model_type=xglm", "model.attn_implementation=eager")
    with pytest.raises(Exception) as refused:  # noqa: B017 - Hydra's instantiate wraps the refusal
        build_model(cfg)
    said = str(user_error(refused.value))
    assert said.startswith("model.model_type=xglm could not be built: IndexError")
    assert "match these settings: model.config.pad_token_id=256" in said


def test_a_forward_that_meets_a_none_where_a_count_is_due_names_the_settings_left_none(make_cfg):
    """DeepSeek-V2's config defaults num_experts_per_tok to None: the forward crashed in topk ("must be
    int, not NoneType") and the refusal named no setting."""
    cfg = make_cfg("model=hf_causal_lm", "model.model_type=deepseek_v2")
    with pytest.raises(ContractError) as refused:
        check_contract(instantiate(cfg.data, _convert_="all"), instantiate(cfg.model, _convert_="all"))
    assert "model.config.num_experts_per_tok (None: deepseek_v2's default)" in str(refused.value)


def test_own_sizes_left_at_defaults_far_above_the_width_are_said():
    """Llama 4 reads every YAML size, yet its dense MLP width (intermediate_size_mlp) stays at 16384
    beside hidden_size 64: a 6.6M-parameter pilot model where the YAML suggests far less, without a word."""
    from omegaconf import OmegaConf

    from pilot.models.hf_config_reads import unread_note
    from tests.conftest import compose_config

    cfg = compose_config(["model=hf_causal_lm", "model.model_type=llama4_text"])
    settings = OmegaConf.to_container(cfg.model.config, resolve=True)
    config_class = transformers.models.auto.configuration_auto.CONFIG_MAPPING["llama4_text"]
    note = unread_note(config_class, settings, transformers.AutoConfig.for_model("llama4_text", **settings))
    assert "sized for the full model, 8x hidden_size=64 and more: intermediate_size_mlp=16384" in note
    llama = transformers.models.auto.configuration_auto.CONFIG_MAPPING["llama"]
    assert unread_note(llama, settings, transformers.AutoConfig.for_model("llama", **settings)) is None


def test_a_position_table_shorter_than_the_pad_id_names_max_position_embeddings_not_the_vocabulary(tmp_path):
    """XLM-RoBERTa counts positions from the pad id: with pad id 256 and 96 positions, building it failed
    and pilot said 'pad_token_id=256 is not below vocab_size=259', which is false, and named the wrong fix."""
    done = _pilot(
        "model=hf_causal_lm",
        "model.model_type=xlm-roberta",
        "+model.config.is_decoder=true",
        f"hydra.run.dir={tmp_path}/r",
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "model.config.max_position_embeddings=96 is not above model.config.pad_token_id=256" in done.stderr
    assert "not below model.config.vocab_size" not in done.stderr and "max_position_embeddings=353" in done.stderr


def test_a_saved_model_is_estimated_as_it_trains_tied_once_and_in_train_mode(make_cfg, tmp_path):
    """model.path under fake tensors: from_pretrained read the real weights (a 7B model's 28 GB in an
    estimate) and left tied embeddings untied (gradients and AdamW state counted twice), and it returns a
    model in eval mode, so dropout's masks and transformers' activation checkpointing were left out of the
    estimate (and of the measurement it is checked against). Now built from the saved config, trained in
    train mode: the estimate equals the same model measured in train mode."""
    config = transformers.GPT2Config(
        vocab_size=259, n_embd=32, n_layer=1, n_head=2, n_positions=96, resid_pdrop=0.1, embd_pdrop=0.1,
        attn_pdrop=0.1, pad_token_id=256, bos_token_id=257, eos_token_id=258, tie_word_embeddings=True,
    )  # fmt: skip
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "saved")
    cfg = make_cfg("model=hf_gpt2", f"model.path={tmp_path / 'saved'}")
    fake = estimate_memory(cfg)
    assert fake.parameters == sum(p.numel() for p in transformers.GPT2LMHeadModel(config).parameters())
    assert fake.state_bytes["parameters"] == fake.closed_form["parameters"]
    measured = estimate_memory(cfg, fake=False)
    assert [p.peak_bytes for p in fake.phases] == [p.peak_bytes for p in measured.phases]
    without = transformers.GPT2Config(**{**config.to_dict(), "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0})
    transformers.GPT2LMHeadModel(without).save_pretrained(tmp_path / "no_dropout")
    plain = estimate_memory(make_cfg("model=hf_gpt2", f"model.path={tmp_path / 'no_dropout'}"))
    activations = [e.phase("first_step").moments["forward/backward"]["activations"] for e in (fake, plain)]
    assert activations[0] > activations[1], "dropout's masks are held for the backward in train mode"


def test_a_factory_loading_from_pretrained_is_estimated_from_its_config_and_runs_on_meta(
    make_cfg, tmp_path, monkeypatch
):
    """A factory of the user's own that calls from_pretrained: under fake tensors it read every real weight
    and left the tied embedding untied (counted twice); on the meta device transformers refused it, and the
    attention calls were not examined. While only shapes are wanted, from_pretrained builds from the saved
    config: the estimate counts the tied weight once and equals the real model's measurement."""
    from pilot.environment.attention import record_attention_calls
    from pilot.models.pretrained_shapes import ShapesOnlyPretrained

    config = transformers.GPT2Config(
        vocab_size=259, n_embd=32, n_layer=1, n_head=2, n_positions=96, pad_token_id=256, bos_token_id=257,
        eos_token_id=258, tie_word_embeddings=True,
    )  # fmt: skip
    transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / "saved")
    (tmp_path / "gpt2_factory.py").write_text(
        "import transformers\n\n"
        "def build(path, **settings):\n"
        "    return transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).train()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = make_cfg("model=hf_gpt2", "model._target_=gpt2_factory.build", f"model.path={tmp_path / 'saved'}")
    fake, measured = estimate_memory(cfg), estimate_memory(cfg, fake=False)
    assert fake.parameters == sum(p.numel() for p in transformers.GPT2LMHeadModel(config).parameters())
    assert [p.peak_bytes for p in fake.phases] == [p.peak_bytes for p in measured.phases]
    calls, _ = record_attention_calls(cfg, instantiate(cfg.data, _convert_="all"), meta=True)
    assert calls and calls[0]["heads"] == 2
    with ShapesOnlyPretrained():  # a load it cannot stand for runs as it is
        loaded = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "saved", output_loading_info=True)
    assert isinstance(loaded, tuple)


def test_a_factory_importing_transformers_when_called_is_estimated_without_reading_a_weight(tmp_path):
    """A fresh ``mode=estimate`` process, and a factory of the user's own that imports transformers only
    when it builds: from_pretrained must already stand for a build from the saved config then (pilot
    imports transformers first for a factory outside pilot). Its weights file is garbage here: reading
    it fails, so an estimate that succeeds read no weight."""
    config = transformers.GPT2Config(
        vocab_size=259, n_embd=32, n_layer=1, n_head=2, n_positions=96, pad_token_id=256, bos_token_id=257,
        eos_token_id=258, tie_word_embeddings=True,
    )  # fmt: skip
    saved = tmp_path / "saved"
    transformers.GPT2LMHeadModel(config).save_pretrained(saved)
    for weights in saved.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file" * 100)
    (tmp_path / "lazy_gpt2_factory.py").write_text(
        "def build(weights, **settings):\n"
        "    import transformers\n\n"
        "    return transformers.AutoModelForCausalLM.from_pretrained(weights, local_files_only=True).train()\n"
    )  # its own key for the weights (model.path would have pilot's config check import transformers first)
    env = {**os.environ, **OFFLINE, "PYTHONPATH": str(tmp_path), "PILOT_ESTIMATE_CACHE": "off"}
    command = [sys.executable, "-m", "pilot", "mode=estimate", "model._target_=lazy_gpt2_factory.build"]
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [*command, f"+model.weights={saved}", f"hydra.run.dir={run_dir}", "run.threads=1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    _ok(result)
    estimate = json.loads((run_dir / "memory_estimate.json").read_text())["estimate"]
    assert estimate["parameters"] == sum(p.numel() for p in transformers.GPT2LMHeadModel(config).parameters())


def test_the_flop_count_does_not_change_what_the_estimate_tracks(make_cfg):
    """The FLOP counter decomposes an operation without a formula (silu_backward into six elementwise
    ones, each a full-size temporary). Entered above the memory tracker, the tracker saw those temporaries,
    which training never allocates: a Llama with checkpointing was estimated 11% above its measurement.
    Entered beneath it, the estimate equals the measurement and the FLOPs are still counted."""
    cfg = make_cfg("model=hf_causal_lm", "memory=checkpointing")
    fake, measured = estimate_memory(cfg), estimate_memory(cfg, fake=False)
    for estimated, real in zip(fake.phases, measured.phases):
        assert abs(estimated.peak_bytes - real.peak_bytes) <= 0.001 * real.peak_bytes, (estimated, real)
    assert fake.flops_per_micro_batch > 0 and fake.flops_per_eval_batch > 0


def test_the_tracker_s_own_growth_under_lora_and_checkpointing_is_told_apart_from_a_wrong_estimate(make_cfg):
    """Real tensors, a frozen Llama base with LoRA and activation checkpointing: PyTorch's MemTracker counts
    98 KB more activations and temporaries after every micro-batch, while the tensors alive in Python do
    not grow. The fake estimate (one micro-batch) was then 12% below the measurement and the pilot failed
    a correct run; a gap no larger than that growth is said as such (a warning), and without LoRA there is
    no growth to explain anything."""
    from pilot.estimate_run import drift_explains

    cfg = make_cfg("model=hf_causal_lm", "memory=checkpointing", "adapter=lora")
    fake, measured = estimate_memory(cfg), estimate_memory(cfg, fake=False)
    assert measured.phase("first_step").tracker_drift_bytes > 0 and fake.phase("first_step").tracker_drift_bytes == 0
    assert drift_explains(fake, measured, 0.001) == measured.phase("first_step").tracker_drift_bytes
    plain = make_cfg("model=hf_causal_lm", "memory=checkpointing")
    assert estimate_memory(plain, fake=False).phase("first_step").tracker_drift_bytes == 0
    wrong = replace(fake, phases=[replace(p, peak_bytes=p.peak_bytes // 2) for p in fake.phases])
    assert drift_explains(wrong, measured, 0.1) == 0, "a gap larger than the growth is the estimate's"


def _tiny_llama_config(**more):
    return transformers.LlamaConfig(
        vocab_size=259, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        max_position_embeddings=96, pad_token_id=256, bos_token_id=257, eos_token_id=258, **more,
    )  # fmt: skip


def test_an_encoder_whose_causal_class_would_attend_both_ways_is_refused_saved_or_built(make_cfg, tmp_path):
    """An outside examination: a saved BertForMaskedLM (is_decoder=False) loaded as BertLMHeadModel attends to
    every position, the tokens it predicts included; mode=train ended ok (transformers logged one line). Refused
    saved and built from model.config; with is_decoder=true (BERT's causal mode) and for GPT-NeoX, whose
    config's is_decoder=False nothing reads, accepted."""
    from pilot.engine.build import build_model

    bert = transformers.BertConfig(vocab_size=259, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=32)  # fmt: skip
    transformers.BertForMaskedLM(bert).save_pretrained(tmp_path / "mlm")
    with pytest.raises(PilotError, match=r"bert model \(BertForMaskedLM\) whose config says is_decoder=false.*Fix"):
        validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'mlm'}"))
    transformers.BertLMHeadModel(transformers.BertConfig(**{**bert.to_dict(), "is_decoder": True})).save_pretrained(
        tmp_path / "decoder"
    )
    validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'decoder'}"))
    with pytest.raises(Exception, match=r"model_type=bert with is_decoder=false.*\+model.config.is_decoder=true"):
        build_model(make_cfg("model=hf_causal_lm", "model.model_type=bert"))
    causal = build_model(make_cfg("model=hf_causal_lm", "model.model_type=bert", "+model.config.is_decoder=true"))
    assert causal.config.is_decoder
    neox = build_model(make_cfg("model=hf_causal_lm", "model.model_type=gpt_neox"))
    assert neox.config.is_decoder is False  # unread by GPT-NeoX, which is causal


def test_a_saved_model_that_is_no_causal_lm_is_refused_before_anything_runs(make_cfg, tmp_path):
    """An outside examination: a saved LlamaForSequenceClassification and a BART (encoder-decoder) loaded as
    causal LMs with their head new and random (BART's encoder dropped) passed every verdict, the records giving
    the decoder's size; a T5 failed at setup naming model.model_type=llama (the YAML's, not the saved one), exit
    1 after a run directory. Each is now refused by validation naming what the directory holds; a file given
    for the directory names the directory."""
    transformers.LlamaForSequenceClassification(_tiny_llama_config(num_labels=3)).save_pretrained(tmp_path / "cls")
    transformers.T5ForConditionalGeneration(
        transformers.T5Config(vocab_size=259, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
    ).save_pretrained(tmp_path / "t5")
    transformers.LlamaForCausalLM(_tiny_llama_config()).save_pretrained(tmp_path / "causal")
    # a bare base model and a BERT classifier (its LM head's transform layer is no tied tensor): the estimate,
    # which builds from the config alone, estimated a model with a random head; a tied classifier loads whole
    transformers.LlamaModel(_tiny_llama_config(tie_word_embeddings=False)).save_pretrained(tmp_path / "base")
    bert = transformers.BertConfig(vocab_size=259, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=32, num_labels=2)  # fmt: skip
    transformers.BertForSequenceClassification(bert).save_pretrained(tmp_path / "bert")
    tied = _tiny_llama_config(num_labels=3, tie_word_embeddings=True)
    transformers.LlamaForSequenceClassification(tied).save_pretrained(tmp_path / "tied")
    whisper = transformers.WhisperConfig(vocab_size=259, d_model=16, encoder_layers=1, decoder_layers=1,
                                         encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                         decoder_ffn_dim=32, num_mel_bins=8, max_source_positions=16,
                                         max_target_positions=64, pad_token_id=256, bos_token_id=257,
                                         eos_token_id=258, decoder_start_token_id=257)  # fmt: skip
    transformers.WhisperForConditionalGeneration(whisper).save_pretrained(tmp_path / "whisper")  # trained, 'ok'
    said = {
        "whisper": r"holds WhisperForConditionalGeneration weights.*loaded as WhisperForCausalLM, its encoder would",
        "cls": r"holds LlamaForSequenceClassification weights.*loaded as LlamaForCausalLM.*\(lm_head.weight\) start at",
        "base": r"holds LlamaModel weights.*loaded as LlamaForCausalLM.*\(lm_head.weight\) start at random",
        "bert": r"holds BertForSequenceClassification weights.*loaded as BertLMHeadModel.*cls.predictions",
        "t5": r"holds a t5 model \(T5ForConditionalGeneration\), for which transformers has no causal",
        "causal/config.json": r"is a file.*Fix: model.path=.*causal, the directory that holds it",
    }
    for name, pattern in said.items():
        with pytest.raises(PilotError, match=pattern):
            validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / name}"))
    validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'causal'}"))  # a causal LM's: accepted
    validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'tied'}"))  # its LM head is its embeddings

    class MyLlama(transformers.LlamaForCausalLM):  # a class of the user's own (a review): its name is no mapping's
        pass

    MyLlama(_tiny_llama_config()).save_pretrained(tmp_path / "own")
    validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'own'}"))  # loads whole: accepted


def test_a_saved_causal_lm_missing_tensors_is_refused_when_built(tmp_path):
    """Weights that lack a tensor the model has (the output head of an untied model, cut from the file) would
    start at random while the run says it fine-tunes the saved model: refused naming it."""
    transformers.LlamaForCausalLM(_tiny_llama_config(tie_word_embeddings=False)).save_pretrained(tmp_path / "cut")
    weights = read_weights(tmp_path / "cut" / "model.safetensors")
    save_file({k: v.contiguous() for k, v in weights.items() if k != "lm_head.weight"},
              str(tmp_path / "cut" / "model.safetensors"), metadata={"format": "pt"})  # fmt: skip
    with pytest.raises(PilotError, match=r"loaded as LlamaForCausalLM, 1 of its tensors are not in the saved "
                       r"weights and would start at random \(lm_head.weight\)"):  # fmt: skip
        build("llama", path=str(tmp_path / "cut"))


def test_model_config_typed_beside_model_path_is_refused_naming_both(tmp_path):
    """An outside examination: model.config.num_hidden_layers=24 beside model.path estimated the saved 2-layer
    model, exit 0, nothing said: the saved config.json builds the model and model.config is read by nothing."""
    transformers.LlamaForCausalLM(_tiny_llama_config()).save_pretrained(tmp_path / "saved")
    done = _pilot("model=hf_causal_lm", f"model.path={tmp_path / 'saved'}", "model.config.num_hidden_layers=24",
                  "mode=estimate", f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "model.config.num_hidden_layers=24: model.path=" in done.stderr and "model.path=null" in done.stderr
    assert not (tmp_path / "run" / "run.json").exists()


def test_a_model_type_typed_beside_model_path_that_is_not_the_saved_one_is_refused(tmp_path):
    """model.model_type=qwen2 (or model=hf_gpt2) beside a saved Llama trained the Llama, exit 0, while config.yaml,
    the variant and REPRODUCE.md said qwen2 (an examination). The saved type itself, or none typed, runs."""
    transformers.LlamaForCausalLM(_tiny_llama_config()).save_pretrained(tmp_path / "saved")
    for line, said in ((["model=hf_causal_lm", "model.model_type=qwen2"], "model.model_type='qwen2'"),
                       (["model=hf_gpt2"], "model='hf_gpt2'")):  # fmt: skip
        done = _pilot(*line, f"model.path={tmp_path / 'saved'}", "mode=estimate", f"hydra.run.dir={tmp_path / 'run'}")
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert said in done.stderr and "holds a saved llama model" in done.stderr, done.stderr[-2000:]
        assert not (tmp_path / "run").exists()
    done = _pilot("model=hf_causal_lm", "model.model_type=llama", f"model.path={tmp_path / 'saved'}", "mode=estimate",
                  f"hydra.run.dir={tmp_path / 'run'}")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_saved_model_without_the_attention_kernel_asked_for_is_refused_before_anything_runs(make_cfg, tmp_path):
    """A saved Bloom under model.attn_implementation=sdpa (the default) was refused at setup, exit 1, a failed
    run directory left; without model.path validation refused it (exit 2, nothing written). The saved config
    is now built on the meta device by validation too."""
    bloom = transformers.BloomConfig(
        vocab_size=259, hidden_size=16, n_layer=1, n_head=2, pad_token_id=256, bos_token_id=257, eos_token_id=258
    )
    transformers.BloomForCausalLM(bloom).save_pretrained(tmp_path / "bloom")
    with pytest.raises(
        PilotError, match=r"model.attn_implementation=sdpa: BloomForCausalLM .* Fix: model.attn_implementation=eager"
    ):
        validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'bloom'}"))
    validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path / 'bloom'}", "model.attn_implementation=eager"))


def test_mode_estimate_sizes_a_saved_config_without_weights_and_training_refuses_it(tmp_path):
    """A directory holding config.json alone (an 8B model's, to plan its rental without downloading 16 GB):
    mode=estimate builds it on fake tensors from the config; a mode that trains still needs the weights."""
    from transformers import AutoConfig

    from tests.conftest import run_pilot

    saved = tmp_path / "config_only"
    AutoConfig.for_model(
        "llama", vocab_size=259, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, bos_token_id=257, eos_token_id=258, pad_token_id=256,
    ).save_pretrained(saved)  # fmt: skip
    estimated = run_pilot(tmp_path / "estimate", "model=hf_causal_lm", "mode=estimate", f"model.path={saved}")
    assert estimated.returncode == 0, estimated.stderr[-2000:]
    assert json.loads((tmp_path / "estimate" / "memory_estimate.json").read_text())["estimate"]["parameters"] > 0
    trained = run_pilot(tmp_path / "pilot", "model=hf_causal_lm", f"model.path={saved}")
    assert trained.returncode == 2 and "no weights there" in trained.stderr and "mode=estimate reads" in trained.stderr


@pytest.mark.slow
def test_a_pilot_on_a_rotary_model_made_for_fewer_positions_records_it_in_its_report(tmp_path):
    """An outside examination: the warning went to the log alone; report.md, checks.json and every verdict
    said pass for a loss measured on positions the model never learned. Now a 'warn' row of the contract."""
    done = _pilot(
        "model=hf_causal_lm", "model.config.max_position_embeddings=16", "data.max_len=64", f"hydra.run.dir={tmp_path}"
    )
    checks = json.loads((tmp_path / "checks.json").read_text())
    said = [c for c in checks if c["step"] == "contract"]
    assert said and said[0]["verdict"] == "warn" and "positions past 16" in said[0]["reason"], done.stderr[-2000:]
    assert "positions past 16" in (tmp_path / "report.md").read_text()


def test_a_rotary_model_made_for_fewer_positions_than_the_data_is_warned_about(make_cfg, caplog):
    """An outside examination: data.max_len past max_position_embeddings was refused for learned position tables
    only; a RoPE model trained past its context without a word. Warned (once), unless its config scales RoPE."""
    from pilot.engine import build

    cfg = make_cfg("model=hf_causal_lm", "model.config.max_position_embeddings=16", "data.max_len=64")
    build._warned.clear()
    with caplog.at_level("WARNING", logger="pilot"):
        build.build_model(cfg)
        build.build_model(cfg)
    said = [r.getMessage() for r in caplog.records if "positions past 16" in r.getMessage()]
    assert len(said) == 1 and "Fix: data.max_len=16" in said[0], said
    assert "in the model config's rope_parameters" in said[0], said  # the name transformers 5 reads
    for named in ("rope_scaling", "rope_parameters"):  # transformers 4's name and 5's: either scales
        caplog.clear()
        scaled = make_cfg(
            "model=hf_causal_lm",
            "model.config.max_position_embeddings=16",
            "data.max_len=64",
            f"+model.config.{named}={{rope_type:linear,factor:4.0}}",
        )
        with caplog.at_level("WARNING", logger="pilot"):
            build.build_model(scaled)
        assert not [r for r in caplog.records if "positions past" in r.getMessage()], named


def test_an_estimate_refused_for_a_saved_model_names_its_config_json_not_the_yaml(tmp_path):
    """An outside examination: a saved Mistral with 8 key/value heads for 4 heads was refused naming the YAML's
    model.config (num_key_value_heads=4, read by nothing beside model.path) and a fix, +model.config.<key>,
    which is refused beside model.path. The sizes named are now the saved config.json's, and the file the fix."""
    from omegaconf import OmegaConf

    from pilot.estimate.refusal import settings_in_message

    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "mistral", hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=8,
        intermediate_size=128, vocab_size=300,
    )  # fmt: skip
    config.save_pretrained(tmp_path)
    cfg = OmegaConf.create(
        {
            "model": {
                "model_type": "llama",
                "path": str(tmp_path),
                "config": {"num_attention_heads": 4, "num_key_value_heads": 4},
            }
        }
    )
    error = RuntimeError("The size of tensor a (4) must match the size of tensor b (8) at non-singleton dimension 1")
    said = settings_in_message(cfg, error)
    assert f"settings of {tmp_path}/config.json: " in said and "num_key_value_heads=8" in said, said
    assert "+model.config" not in said and "num_key_value_heads=4" not in said, said


def test_a_saved_config_whose_key_value_heads_do_not_divide_its_heads_is_refused_before_anything_runs(
    make_cfg, tmp_path
):
    """An outside examination: a saved Mistral with 8 key/value heads for 4 heads ran 15 s of a pilot (or an
    estimate that left a failed run.json) before the first forward's size mismatch; refused at validation now."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(
        "mistral", hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=8,
        intermediate_size=128, vocab_size=300, bos_token_id=257, eos_token_id=258, pad_token_id=256,
    )  # fmt: skip
    config.save_pretrained(tmp_path)  # config.json alone: what mode=estimate reads
    with pytest.raises(PilotError, match=r"its config.json says num_key_value_heads=8 does not divide") as refused:
        validate(make_cfg("model=hf_causal_lm", f"model.path={tmp_path}", "mode=estimate"))
    assert f"Fix: edit {tmp_path}/config.json" in str(refused.value)


def test_a_model_without_a_token_embedding_is_built_and_checked_not_failed_by_pilots_vocabulary_check():
    """transformers 5 raises NotImplementedError from get_input_embeddings for ResNet, ConvNeXt, Wav2Vec2 and
    HuBERT: pilot's vocabulary check let it out as 'the task or model could not be built', in every mode."""
    resnet = ResNetForImageClassification(ResNetConfig(hidden_sizes=[8, 16], depths=[1, 1], embedding_size=8))
    with pytest.raises(NotImplementedError):
        resnet.get_input_embeddings()  # the premise, in the transformers installed
    assert token_embedding(resnet) is None and output_layer(resnet) is None
    refuse_short_tables(resnet, 100, 64)  # nothing to refuse
    gpt = TinyGPT(vocab_size=50, d_model=16, n_layer=1, n_head=2, max_len=8)
    assert token_embedding(gpt) is None  # no transformers API at all


def test_a_refused_config_names_the_setting_the_message_is_about_not_every_equal_number():
    """'dropout probability has to be between 0 and 1, but got 2' named model.config.n_layer=2 beside
    model.config.resid_pdrop=2: every setting whose value the message quotes."""
    from transformers import GPT2Config

    from pilot.models.hf_refusals import config_refused

    error = ValueError("dropout probability has to be between 0 and 1, but got 2")
    said = str(config_refused(GPT2Config, {"n_layer": 2, "resid_pdrop": 2, "n_embd": 64}, error))
    assert "(model.config.resid_pdrop=2)" in said and "n_layer" not in said, said
    both = str(
        config_refused(GPT2Config, {"n_head": 3, "n_embd": 64}, ValueError("got embed_dim: 64 and num_heads: 3"))
    )
    assert "model.config.n_head=3" in both and "model.config.n_embd=64" in both, both  # no word in common: both kept
