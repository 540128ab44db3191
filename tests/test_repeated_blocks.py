"""A model of many identical blocks estimated from 3, 4 and 5 of them (pilot/estimate/repeated_blocks.py):
the same numbers as running every block, to the byte, across models and settings; every block run
where the blocks are not alike or do not grow alike, and the estimate says which it did."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from pilot.estimate.fake_tensor import estimate_memory
from pilot.estimate.repeated_blocks import NotSampled, _affine, repeated_blocks
from pilot.models.tiny_gpt import TinyGPT

SMALL = ("model.d_model=32", "model.n_head=2", "model.n_layer=9", "data.max_len=64")
LLAMA = ("model=hf_causal_lm", "model.config.num_hidden_layers=9")


def _numbers(estimate) -> dict:
    data = estimate.to_dict()
    for key in ("seconds", "host_rss_peak_bytes", "notes", "computed_seconds"):
        data.pop(key)
    return data


def _both(make_cfg, *overrides):
    sampled = estimate_memory(make_cfg(*overrides))
    every = estimate_memory(make_cfg(*overrides, "estimate.blocks=all"))
    return sampled, every


@pytest.mark.parametrize(
    "overrides",
    [
        SMALL,
        (*SMALL, "precision=bf16", "batch.micro_batch=2"),
        (*SMALL, "memory.activation_checkpointing=true"),
        (*SMALL, "optim.name=sgd"),
        (*SMALL, "distributed=fsdp", "distributed.replicas=2"),
        (*SMALL, "distributed=fsdp", "distributed.replicas=4", "memory.activation_checkpointing=true"),
        LLAMA,
        (*LLAMA, "adapter=lora", "adapter.r=4"),
    ],
    ids=["fp32", "bf16", "checkpointing", "sgd", "fsdp2", "fsdp4-checkpointing", "llama", "llama-lora"],
)
def test_sampled_blocks_give_every_number_of_running_every_block(make_cfg, overrides):
    sampled, every = _both(make_cfg, *overrides)
    assert any(note.startswith("estimated from its first 3, 4 and 5 of 9 identical blocks") for note in sampled.notes)
    assert not any("identical blocks" in note for note in every.notes)  # estimate.blocks=all: nothing sampled
    assert _numbers(sampled) == _numbers(every)


def test_a_first_update_without_held_gradients_runs_every_block(make_cfg):
    """One micro-batch per update: the backward's start holds the blocks' activations, its end their
    gradients; which is higher at 9 blocks cannot be told from 3, 4 and 5 of them."""
    sampled, every = _both(make_cfg, *SMALL, "batch.accumulation=1")
    assert any(
        note.startswith("every one of its 9 blocks (blocks) run: the peak of part 1 grew by") for note in sampled.notes
    )
    assert _numbers(sampled) == _numbers(every)


def test_a_model_with_fewer_blocks_than_sampling_needs_runs_them_all(make_cfg):
    estimate = estimate_memory(make_cfg("model.n_layer=4", "model.d_model=32", "model.n_head=2"))
    assert not any("blocks" in note for note in estimate.notes)


class _GrowingBlock(nn.Module):
    """Identical parameters, but each block keeps its input once more per block before it (a block that
    behaves by its position): activations grow quadratically with the count."""

    def __init__(self, d: int, index: int):
        super().__init__()
        self.linear, self.index = nn.Linear(d, d), index

    def forward(self, x):
        out = self.linear(x)
        for _ in range(self.index):
            out = out * torch.sigmoid(x)  # one more saved activation per earlier block
        return out


class PositionalGPT(TinyGPT):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        d = kwargs["d_model"]
        self.extra = nn.ModuleList(_GrowingBlock(d, index) for index in range(len(self.blocks)))
        self.blocks = nn.ModuleList()  # the positional blocks are the model's only list

    def forward(self, input_ids, attention_mask=None):
        x = self.token_emb(input_ids) + self.pos_emb(torch.arange(input_ids.shape[1], device=input_ids.device))
        for block in self.extra:
            x = block(x)
        return self.head(self.ln_f(x))


def test_blocks_that_grow_otherwise_than_by_equal_steps_run_every_block(make_cfg):
    overrides = (f"model._target_={__name__}.PositionalGPT", *SMALL)
    sampled, every = _both(make_cfg, *overrides)
    assert any(note.startswith("every one of its 9 blocks (extra) run") for note in sampled.notes)
    assert _numbers(sampled) == _numbers(every)


def test_only_one_list_of_identical_blocks_is_sampled():
    model = TinyGPT(vocab_size=32, max_len=16, d_model=16, n_layer=9, n_head=2)
    found = repeated_blocks(model)
    assert found is not None and (found.path, found.count) == ("blocks", 9)
    model.other = nn.ModuleList(nn.Linear(4, 4) for _ in range(9))  # an encoder and a decoder, say
    assert repeated_blocks(model) is None
    del model.other
    model.blocks[4].extra = nn.Linear(2, 2)  # one block unlike the others
    assert repeated_blocks(model) is None


def test_numbers_are_extended_only_when_they_grow_by_equal_steps():
    assert _affine([{"a": 10, "b": "x"}, {"a": 13, "b": "x"}, {"a": 16, "b": "x"}], 4, "e") == {"a": 28, "b": "x"}
    with pytest.raises(NotSampled, match="e.a did not grow by equal steps"):
        _affine([{"a": 10}, {"a": 13}, {"a": 17}], 4, "e")
    with pytest.raises(NotSampled, match="changed with the block count"):
        _affine(["forward", "forward", "optimizer step"], 4, "e")
