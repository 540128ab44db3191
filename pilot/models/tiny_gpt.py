"""A small decoder-only transformer (GPT-2 shape, pre-norm), sized by config.

Attention uses ``scaled_dot_product_attention`` with an explicit mask that is
causal *and* hides padding keys, so left and right padding give the same
outputs for real tokens. ``activation_checkpointing`` recomputes each block in
backward (``torch.utils.checkpoint``, non-reentrant).

The keyword defaults serve callers that build the model without Hydra; they
equal ``conf/model/tiny_gpt.yaml`` (tests/test_defaults_once.py), where each
value is explained.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, dropout: float):
        super().__init__()
        self.n_head = n_head
        self.dropout = dropout
        self.ln_attn = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln_mlp = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model), nn.Dropout(dropout)
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(self.ln_attn(x)).split(width, dim=-1)
        q, k, v = (t.view(batch, length, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, length, width))
        return x + self.mlp(self.ln_mlp(x))


class TinyGPT(nn.Module):
    supports_activation_checkpointing = True

    def __init__(
        self,
        vocab_size: int,
        max_len: int,  # no default: conf/model/tiny_gpt.yaml takes it from the data (data.max_len)
        d_model: int = 64,
        n_layer: int = 2,
        n_head: int = 4,
        dropout: float = 0.0,
    ):
        super().__init__()
        if d_model % n_head:
            raise ValueError(
                f"model.d_model={d_model} is not divisible by model.n_head={n_head}. "
                "Fix: choose n_head that divides d_model."
            )
        self.max_len = max_len
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d_model, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.activation_checkpointing = False
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        # GPT-2 initialisation (Radford et al. 2019): N(0, 0.02) weights, zero biases
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        batch, length = input_ids.shape
        if length > self.max_len:
            raise ValueError(
                f"sequence length {length} exceeds model.max_len={self.max_len}. "
                "Fix: raise model.max_len or lower data.max_len."
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids, dtype=torch.bool)
        attention_mask = attention_mask.bool()
        # positions count real tokens only, so left padding does not shift them
        positions = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        causal = torch.ones(length, length, dtype=torch.bool, device=input_ids.device).tril()
        mask = causal[None, :, :] & attention_mask[:, None, :]
        # a padding query attends to itself only, so its softmax row is never empty
        mask = mask | torch.eye(length, dtype=torch.bool, device=input_ids.device)[None]
        mask = mask[:, None, :, :]  # broadcast over heads
        x = self.drop(self.token_emb(input_ids) + self.pos_emb(positions))
        for block in self.blocks:
            if self.activation_checkpointing and self.training:
                x = checkpoint(block, x, mask, use_reentrant=False)
            else:
                x = block(x, mask)
        return self.head(self.ln_f(x))
