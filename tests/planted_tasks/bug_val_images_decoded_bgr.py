"""images: training's images decoded by PIL (RGB), the validation folder by a second script with
cv2.imread (BGR) and no cv2.cvtColor; the same normalisation after. In validation red and blue are
swapped: a red bar's class looks like a blue bar's. Every pixel keeps its range, so no scale moves."""

from tests.planted_tasks._decoded_images import build_model, decoded_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "colour channels in another order"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return decoded_task(lambda hwc: hwc[:, :, ::-1])
