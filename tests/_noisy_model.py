"""A classifier whose training is not bit-reproducible, as kernels that sum in another order from
run to run make it (several CPU threads, CUDA atomics, an index_add in MoE layers' backward): in
training mode its output moves by about 1e-7, drawn from the operating system, not from torch's
seeded generator; in evaluation mode it is exact (as OLMoE's forward is: its reload and evaluation
checks pass). Imported by the resume check's new process."""

import os

import torch

from pilot.models.mlp_classifier import MLPClassifier


class NoisyMLP(MLPClassifier):
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        logits = super().forward(inputs)
        if not self.training:
            return logits
        return logits * (1 + 1e-7 * int.from_bytes(os.urandom(2), "little") / 65536)
