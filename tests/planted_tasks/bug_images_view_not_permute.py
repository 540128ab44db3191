"""images: the HWC array turned into the model's tensor with .view(3, H, W) where .permute(2, 0, 1) was
meant: same size, same values, but each "channel" holds a row's red, green and blue values side by side,
and no bar is where the convolution looks for it. The model still trains and memorises."""

from tests.planted_tasks._reshaped_images import build_model, reshaped_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "image reshaped, not transposed"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return reshaped_task(lambda hwc: hwc.view(3, 8, 8))
