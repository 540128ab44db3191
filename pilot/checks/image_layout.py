"""Images reshaped instead of transposed (a warning from the data alone): ``torch.from_numpy(hwc).view(3,
H, W)`` where ``.permute(2, 0, 1)`` was meant. The array keeps its size and its value range, the model
trains and memorises, but each "channel" holds runs of red, green and blue values of consecutive pixels,
and no image is where the convolution looks for it.

Seen from the first ``EXAMPLES`` training examples collated alone, in every input of shape (1, 3, H, W),
against the example's own raw field holding an (H, W, 3) array (the decoded image): per channel, the
correlation of the input with the raw array transposed (``permute(2, 0, 1)``) and with the raw array
reshaped (``view(3, H, W)``), either up to a per-channel affine map (any normalisation). Warned when the
reshaped array fits every example (``FITS``) and the transposed one does not (``APART``). An example
without such a raw field, or whose input is neither (augmented), is not judged: a texture with a period
of three pixels cannot be told from a reshape by the input alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pilot.checks.result import Finding
from pilot.data.task import TaskData

EXAMPLES = 16
MIN_SIDE = 4
FITS, APART = 0.99, 0.9


def _fit(image: np.ndarray, raw: np.ndarray) -> float:
    """The smallest correlation over the three channels of ``image`` with ``raw`` (both 3 x H x W)."""
    worst = 1.0
    for a, b in zip(image.reshape(3, -1), raw.reshape(3, -1)):
        a, b = a - a.mean(), b - b.mean()
        denominator = float(np.sqrt((a * a).sum() * (b * b).sum()))
        worst = min(worst, float((a * b).sum()) / denominator if denominator > 0 else 0.0)
    return worst


def _raw_image(fields: dict[str, Any], height: int, width: int) -> np.ndarray | None:
    for value in fields.values():
        if isinstance(value, np.ndarray) and value.shape == (height, width, 3):
            return value.astype(np.float64)
    return None


def image_layout_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    examples = {e.index: e for e in task.splits.get("train", [])}
    judged: dict[str, list[tuple[float, float]]] = {}
    for item in encoded[:EXAMPLES]:
        example = examples.get(item.get("index"))
        if example is None:
            continue
        for key, value in task.collate([item]).items():
            if not (torch.is_tensor(value) and value.is_floating_point() and value.dim() == 4):
                continue
            if value.shape[:2] != (1, 3) or min(value.shape[2:]) < MIN_SIDE:
                continue
            raw = _raw_image(example.fields, value.shape[2], value.shape[3])
            if raw is not None:
                image = value[0].detach().double().cpu().numpy()
                judged.setdefault(key, []).append(
                    (_fit(image, raw.reshape(3, *raw.shape[:2])), _fit(image, raw.transpose(2, 0, 1)))
                )
    findings, details = [], {}
    for key, fits in judged.items():
        viewed, transposed = min(f for f, _ in fits), max(t for _, t in fits)
        details[key] = {"examples": len(fits), "reshaped_fit": round(viewed, 4), "transposed_fit": round(transposed, 4)}
        if viewed >= FITS and transposed < APART:
            findings.append(
                Finding(
                    f"'{key}' holds each example's raw (H, W, 3) image reshaped, not transposed: per channel it "
                    f"equals the raw array read as .view(3, H, W) up to a normalisation (correlation >= {viewed:.3f} "
                    f"in {len(fits)} examples), and not the array transposed (at most {transposed:.2f}). Each "
                    "'channel' then holds a row's red, green and blue values side by side and the model trains on "
                    "scrambled images. Fix: torch.from_numpy(hwc).permute(2, 0, 1) (or torchvision's ToTensor)",
                    "train",
                )
            )
    return findings, details
