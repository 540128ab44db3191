"""a denoising autoencoder whose target is taken after the noise was added (the augmentation applied to the
target too): the model learns the identity and every other check passed (an outside examination)."""

from tests.planted_tasks.ok_denoising_autoencoder import Model
from tests.planted_tasks.ok_denoising_autoencoder import make_task as denoising_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "a denoising task whose targets equal its input"}
__all__ = ["Model", "make_task"]


def make_task():
    return denoising_task(target_too=True)
