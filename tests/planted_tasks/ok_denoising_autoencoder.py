"""correct: a denoising autoencoder on 8 sensor readings: the input is the reading with noise drawn per
example, the target the clean reading, MSE."""

import dataclasses

import numpy as np
import torch

from tests.planted_tasks.ok_autoencoder_reconstruction import Model
from tests.planted_tasks.ok_autoencoder_reconstruction import make_task as autoencoder_task

EXPECTED = None
__all__ = ["Model", "make_task"]


def noised(e, target_too=False):
    clean = torch.from_numpy(e.fields["x"])
    noisy = clean + torch.from_numpy(np.random.default_rng(e.index).normal(size=8).astype("float32")) * 0.5
    return {"index": e.index, "inputs": noisy, "target": noisy.clone() if target_too else clean}


def collate(items):
    return {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "labels": torch.stack([i["target"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task(target_too=False):
    return dataclasses.replace(
        autoencoder_task(), kind="denoising", encode=lambda e: noised(e, target_too), collate=collate
    )
