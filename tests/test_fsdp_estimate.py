"""Issue 15 item 4: the per-rank FSDP memory estimate, on a fake process group of N ranks, against
the same tracker on N real gloo ranks running the engine's sharded update; the sharded terms in
closed form; the choice sheet shards a model too large for one GPU."""

from __future__ import annotations

import pytest
import torch
from _ddp_helpers import estimate_and_save
from hydra.utils import instantiate

from pilot.engine.distributed import spawn
from pilot.engine.sharding import block_modules
from pilot.estimate.fake_tensor import estimate_memory
from pilot.rental.catalog import Gpu
from pilot.rental.choice_sheet import choice_rows
from pilot.rental.estimate_cache import EstimateCache

GIB = 2**30
# states outweigh activations here: short sequences, one example per micro-batch and per evaluation batch
STATE_BOUND = (
    "model.d_model=256",
    "model.n_layer=4",
    "data.max_len=32",
    "batch.micro_batch=1",
    "batch.accumulation=4",
    "batch.eval_micro_batch=1",
)


pytestmark = pytest.mark.usefixtures("no_launcher_variables")


@pytest.mark.parametrize(
    "ranks, extra",
    [
        (4, ()),  # 4 ranks: where the first gradient norm's sharding propagation showed (local_shards)
        pytest.param(2, (), marks=pytest.mark.slow),  # as 4 ranks; bench/fsdp_estimate.py runs 2 and 4 at 3 sizes
        pytest.param(  # the same mechanism as above with other settings: -m slow keeps the default suite short
            2,
            ("memory=checkpointing", "precision=bf16", "distributed.fsdp.sync_every_micro_batch=false"),
            marks=pytest.mark.slow,
        ),
    ],
)
def test_the_fake_rank_estimate_matches_real_gloo_ranks(make_cfg, tmp_path, ranks, extra):
    cfg = make_cfg(
        "distributed=fsdp",
        f"distributed.replicas={ranks}",
        "model.d_model=128",
        "model.n_layer=3",
        "batch.micro_batch=4",
        "batch.accumulation=2",
        *extra,
    )
    estimate = estimate_memory(cfg)
    spawn(estimate_and_save, (cfg, str(tmp_path / "real.pt")), ranks)
    real = torch.load(tmp_path / "real.pt", weights_only=True)
    for phase in estimate.phases:  # every part of every phase, each category: equal to the byte
        assert phase.moments == real["moments"][phase.phase], phase.phase
    # rank 0's shards equal the closed form to the byte, on fake and on real ranks
    for state in (estimate.state_bytes, real["state"]):
        assert state == {k: estimate.closed_form[k] for k in ("parameters", "optimizer_state")}
    whole = estimate.whole_states
    assert estimate.closed_form["parameters"] * ranks == whole["parameters"] + estimate.closed_form["padding"]
    assert estimate.settings["strategy"] == "fsdp" and estimate.settings["replicas"] == ranks


def test_keeping_gradients_unsharded_between_micro_batches_costs_the_whole_gradients(make_cfg):
    """sync_every_micro_batch=false keeps every rank's gradients whole between micro-batches."""
    common = ("distributed=fsdp", "distributed.replicas=4", "batch.accumulation=2", *STATE_BOUND)
    sharded = estimate_memory(make_cfg(*common)).phase("steady_steps")
    whole = estimate_memory(make_cfg(*common, "distributed.fsdp.sync_every_micro_batch=false")).phase("steady_steps")
    assert whole.breakdown["gradients"] > 2 * sharded.breakdown["gradients"]


def test_a_model_too_large_for_one_gpu_is_sharded_over_several(make_cfg):
    cfg = make_cfg("rental.counts=[1,2,4]", "rental.reserve_gib=0", "rental.margin=0", *STATE_BOUND)
    cache = EstimateCache(cfg, instantiate(cfg.data, _convert_="all"))
    states = sum(cache.base.whole_states.values())
    gpu = Gpu("mid", memory_gib=0.9 * states / GIB, fp32_tflops=10.0, link_gbps=64)
    one, two, four = choice_rows(cfg, cache, [gpu])
    assert not one.fits and "must be sharded (FSDP)" in one.reason
    assert two.fits and two.strategy == "FSDP, 2 ranks" and two.ranks == 2
    used = cache.get(two.micro_batch, two.activation_checkpointing, 2)
    assert used.settings["strategy"] == "fsdp" and two.need_gib == pytest.approx(used.peak_bytes / GIB)
    assert used.peak_bytes < cache.base.peak_bytes
    assert "FSDP all-gathers and reduce-scatters" in two.time_source and "64 GB/s" in two.time_source
    assert four.fits and four.need_gib < two.need_gib  # more ranks, smaller shards


def test_more_gpus_that_fit_sharded_where_ddp_s_whole_copies_do_not_are_never_said_not_to_fit(make_cfg):
    """The 7B on H200s: 1 x fits, but 2, 4 and 8 x were tried as DDP alone (whole states plus its gradient
    buckets: 166 GiB) and said not to fit, although the same sheet's FSDP estimates fit 2 x H100."""
    cfg = make_cfg("rental.counts=[1,2]", "rental.reserve_gib=0", "rental.margin=0", *STATE_BOUND)
    cache = EstimateCache(cfg, instantiate(cfg.data, _convert_="all"))
    gpu = Gpu("big", memory_gib=1.02 * cache.base.peak_bytes / GIB, fp32_tflops=10.0, link_gbps=64)
    one, two = choice_rows(cfg, cache, [gpu])
    assert one.fits and one.strategy == "single GPU"
    assert two.fits and two.strategy == "FSDP, 2 ranks" and two.need_gib < one.need_gib, two.reason


def test_blocks_are_the_models_layers_or_the_named_classes(make_cfg):
    from pilot.engine.build import build_model

    model = build_model(make_cfg())
    assert block_modules(model, []) == list(model.blocks)
    assert block_modules(model, ["LayerNorm"]) == [m for m in model.modules() if type(m).__name__ == "LayerNorm"]
    with pytest.raises(ValueError, match=r"distributed.fsdp.blocks=\['Nope'\].*Block"):
        block_modules(model, ["Nope"])


def test_a_hugging_face_llama_is_sharded_by_its_own_layers(make_cfg):
    from pilot.engine.build import build_model

    layers = block_modules(build_model(make_cfg("model=hf_causal_lm")), [])  # its _no_split_modules
    assert layers and {type(m).__name__ for m in layers} == {"LlamaDecoderLayer"}


@pytest.mark.slow
def test_a_hugging_face_llama_is_estimated_per_rank(make_cfg, tmp_path):
    """The peak is within 10% of real gloo ranks, and no phase is under-estimated by more than that
    (``first_step`` is 13.5% above: README)."""
    cfg = make_cfg("model=hf_causal_lm", "distributed=fsdp", "distributed.replicas=2")
    estimate = estimate_memory(cfg)
    spawn(estimate_and_save, (cfg, str(tmp_path / "real.pt")), 2)
    real = torch.load(tmp_path / "real.pt", weights_only=True)
    assert abs(estimate.peak_bytes - max(real["peaks"].values())) <= 0.10 * max(real["peaks"].values())
    for phase in estimate.phases:
        assert phase.peak_bytes >= 0.90 * real["peaks"][phase.phase], phase.phase
    assert real["state"] == estimate.state_bytes


def test_fsdp_over_one_rank_is_estimated_as_the_engine_trains_it_unsharded(make_cfg):
    """One FSDP rank trains without a process group (nothing to shard over): its estimate, fake or
    measured, is the unsharded one (the pilot's estimate check with distributed.replicas=1 needs the second)."""
    common = ("run.device=cpu", "batch.accumulation=2")
    one = estimate_memory(make_cfg(*common, "distributed=fsdp", "distributed.replicas=1"))
    single = estimate_memory(make_cfg(*common))
    assert [p.peak_bytes for p in one.phases] == [p.peak_bytes for p in single.phases]
    measured = estimate_memory(make_cfg(*common, "distributed=fsdp", "distributed.replicas=1"), fake=False)
    assert [p.peak_bytes for p in measured.phases] == [p.peak_bytes for p in single.phases]
