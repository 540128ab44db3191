"""correct: a transformers ResNet (no token embedding) classifying the bar images (an outside examination,
2026-12-07: transformers 5 raises NotImplementedError from its get_input_embeddings, and pilot's own
vocabulary check let it out as the model's failure to build, in every mode)."""

import torch
import torch.nn.functional as F
from transformers import ResNetConfig, ResNetForImageClassification

from tests.planted_tasks._reshaped_images import reshaped_task

EXPECTED = None
SETTINGS = {"tiny_overrides": ["optim.lr=1e-2"]}


def make_task():
    task = reshaped_task(lambda hwc: hwc.permute(2, 0, 1))
    task.forward = lambda model, batch: model(pixel_values=batch["inputs"]).logits
    task.loss_sum = lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum")
    return task


def build_model(task):
    torch.manual_seed(0)
    config = ResNetConfig(
        hidden_sizes=[8, 16], depths=[1, 1], embedding_size=8, num_labels=4, downsample_in_first_stage=False
    )
    return ResNetForImageClassification(config)
