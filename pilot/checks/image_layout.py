"""Images reshaped instead of transposed (a warning from the data alone): ``torch.from_numpy(hwc).view(3,
H, W)`` where ``.permute(2, 0, 1)`` was meant. The array keeps its size and its value range, the model
trains and memorises, but each "channel" holds runs of red, green and blue values of consecutive pixels,
and no image is where the convolution looks for it.

Seen from the first ``EXAMPLES`` training examples collated alone, in every input of shape (1, 3, H, W)
(channels first, H and W at least ``MIN_SIDE``), values centred per channel: along the last axis, a
pixel's correlation with the one ``PERIOD`` columns away against its neighbour's. A photograph's
neighbours correlate most; a view of HWC data puts each pixel's three colour values side by side, so the
same channel of the next pixel is three columns away: warned when that correlation is at least
``STRONG`` and ``MARGIN`` above the neighbour's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pilot.checks.result import Finding
from pilot.data.task import TaskData

EXAMPLES = 64
MIN_SIDE = 8
PERIOD = 3
STRONG, MARGIN = 0.3, 0.3


def _correlation(x: np.ndarray, lag: int) -> float:
    a, b = x[..., :-lag].ravel(), x[..., lag:].ravel()
    a, b = a - a.mean(), b - b.mean()
    denominator = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / denominator if denominator > 0 else 0.0


def image_layout_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    batches = [task.collate([item]) for item in encoded[:EXAMPLES]]
    if not batches:
        return [], {}
    findings, details = [], {}
    for key, value in batches[0].items():
        if not (torch.is_tensor(value) and value.is_floating_point() and value.dim() == 4):
            continue
        if value.shape[:2] != (1, 3) or min(value.shape[2:]) < MIN_SIDE:
            continue
        images = [b[key] for b in batches if torch.is_tensor(b.get(key)) and b[key].shape == value.shape]
        x = torch.cat(images).detach().float().cpu().numpy()
        x = x - x.mean(axis=(0, 2, 3), keepdims=True)
        neighbour, period = _correlation(x, 1), _correlation(x, PERIOD)
        details[key] = {"neighbour_correlation": round(neighbour, 3), f"lag{PERIOD}_correlation": round(period, 3)}
        if period >= STRONG and period >= neighbour + MARGIN:
            findings.append(
                Finding(
                    f"'{key}' holds images (3 x {value.shape[2]} x {value.shape[3]}) whose values {PERIOD} columns "
                    f"apart correlate far more ({period:.2f}) than neighbouring ones ({neighbour:.2f}): each "
                    "'channel' reads a pixel's three colour values side by side. An HWC array reshaped with "
                    ".view(3, H, W) or .reshape where a transpose was meant: the model trains on scrambled images. "
                    "Fix: torch.from_numpy(hwc).permute(2, 0, 1) (or torchvision's ToTensor)",
                    "train",
                )
            )
    return findings, details
