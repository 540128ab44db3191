"""shared: knowledge distillation on 3-class blobs: a 'teacher' (a fixed linear map near the class centres, T=2)
gives soft logits stored per example; the loss is 0.9 * T^2 KL(teacher || student) + 0.1 CE, summed."""

import numpy as np
import torch.nn.functional as F

from tests.planted_tasks._small_tasks import blobs, cls_task

T, ALPHA = 2.0, 0.9
NAMES = ("low", "mid", "high")


def kd_loss(logits, b):
    logp = F.log_softmax(logits.float() / T, -1)
    kd = F.kl_div(logp, F.log_softmax(b["teacher"].float() / T, -1), log_target=True, reduction="sum") * T * T
    return ALPHA * kd + (1 - ALPHA) * F.cross_entropy(logits.float(), b["labels"], reduction="sum")


def kd_task(teacher_aligned, strong=False):
    ex = blobs(240, NAMES, seed=4, sep=1.2)
    centres = np.stack([np.mean([e.fields["x"] for e in ex if e.fields["y"] == c], 0) for c in range(3)])
    # teacher logits computed over the examples in file order sorted by class (as a teacher dump often is)
    dump_order = sorted(ex, key=lambda e: (e.fields["y"], e.index))
    teacher = {
        id(e): (
            (-0.5 * ((e.fields["x"][None] - centres) ** 2).sum(-1)) if strong else (e.fields["x"] @ centres.T)
        ).astype("float32")
        for e in dump_order
    }
    dump = [teacher[id(e)] for e in dump_order]
    for pos, e in enumerate(ex):
        # correct: look the teacher row up by example; bug: by position in the dump
        e.fields["b_teacher"] = teacher[id(e)] if teacher_aligned else dump[pos]
    return cls_task(ex, NAMES, loss_sum=kd_loss, initial_loss_tolerance=None)
