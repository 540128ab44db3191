"""A classifier whose training is not bit-reproducible, as kernels that sum in another order from
run to run make it (several CPU threads, CUDA atomics): its output moves by about 1e-7, drawn from
the operating system, not from torch's seeded generator. Imported by the resume check's new process."""

import os

import torch

from pilot.models.mlp_classifier import MLPClassifier


class NoisyMLP(MLPClassifier):
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        logits = super().forward(inputs)
        return logits * (1 + 1e-7 * int.from_bytes(os.urandom(2), "little") / 65536)
