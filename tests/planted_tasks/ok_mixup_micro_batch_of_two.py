"""correct: mixup in collate (lambda and the partner rows drawn from torch's global generator), one-hot
targets mixed with the same permutation, micro-batches of 2: collating twice left the batch as it was half
the time (randperm(2) the identity), the collate was judged not random and every mixed row failed inspect."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, classification_task, mlp, stack_collate

EXPECTED = None
SETTINGS = {"micro_batch": 2}


def mixup_collate(items):
    batch = stack_collate(items)
    targets = F.one_hot(batch["labels"], len(CLASS_NAMES)).float()
    share = float(torch.distributions.Beta(0.4, 0.4).sample())
    partner = torch.randperm(len(items))
    return {
        "inputs": share * batch["inputs"] + (1 - share) * batch["inputs"][partner],
        "labels": share * targets + (1 - share) * targets[partner],
        "index": batch["index"],
    }


def make_task():
    return classification_task(
        collate=mixup_collate,
        loss_sum=lambda logits, batch: F.cross_entropy(logits, batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].shape[0]),
        correct_count=lambda logits, batch: (logits.argmax(-1) == batch["labels"].argmax(-1)).sum(),
    )


build_model = mlp
