"""correct but unusual: 3 animal classes plus an 'unknown' class for photos the annotators could not label;
the head has 4 outputs (so 'unknown' ids stay valid everywhere) and the loss gives 'unknown' weight 0
(`F.cross_entropy(weight=[1,1,1,0])`), target_count counts only the known labels: unknown examples are kept
in the data (they still flow through the model) but legitimately train nothing."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._common import MLP, classification_task, vector_examples

EXPECTED = None
NAMES = ["cat", "dog", "bird", "unknown"]
W = torch.tensor([1.0, 1.0, 1.0, 0.0])


def make_task():
    ex = vector_examples(240)
    rng = np.random.default_rng(2)
    for e in ex:
        if rng.random() < 0.15:
            e.fields["animal"] = "unknown"
    ids = {n: i for i, n in enumerate(NAMES)}
    return classification_task(
        ex,
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "label": ids[e.fields["animal"]],
        },
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], weight=W, reduction="sum"),
        target_count=lambda b: (b["labels"] != 3).sum(),
        correct_count=lambda logits, b: ((logits[:, :3].argmax(-1) == b["labels"]) & (b["labels"] != 3)).sum(),
        predict=lambda logits, b: logits[:, :3].argmax(-1),
        class_names=NAMES,
        info={"num_classes": 4, "target_unit": "example"},
    )


def build_model(task):
    return MLP(classes=4)
