"""A transformers causal LM for the planted tasks: a one-block Llama over the byte tokenizer, built
from its config (no download). Its forward returns a ``ModelOutput``; given ``labels`` it also
returns its own loss (a mean over the tokens it counts, after shifting the labels itself)."""

from __future__ import annotations

import torch
import transformers

from pilot.data import byte_tokenizer as tok
from pilot.data.task import Batch, TaskData


def tiny_llama(task: TaskData) -> torch.nn.Module:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=tok.VOCAB_SIZE,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=tok.PAD_ID,
    )
    return transformers.LlamaForCausalLM(config)


def hf_forward(model: torch.nn.Module, batch: Batch):
    return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])


def hf_forward_with_labels(model: torch.nn.Module, batch: Batch):
    """The model computes its own loss from the labels (it shifts them: output t-1 predicts label t)."""
    return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
