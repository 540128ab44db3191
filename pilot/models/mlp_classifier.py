"""Multi-layer perceptron for vector inputs; the head has ``num_classes`` outputs.

The keyword defaults serve callers that build the model without Hydra; they equal
``conf/model/mlp_classifier.yaml`` (tests/test_defaults_once.py), where each value is explained.
"""

from __future__ import annotations

import torch
import torch.nn as nn


class MLPClassifier(nn.Module):
    supports_activation_checkpointing = False  # too shallow for recomputation to pay off

    def __init__(
        self, in_features: int, num_classes: int, hidden: int = 128, n_hidden_layers: int = 2, dropout: float = 0.0
    ):
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(n_hidden_layers):
            layers += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)
        self.num_classes = num_classes

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs)
