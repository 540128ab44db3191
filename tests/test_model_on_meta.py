"""The configured model built on the meta device for the checks before a run (pilot.validation.on_meta)."""

import subprocess
import sys

import pytest
import torch
from hydra.utils import instantiate

from pilot.validation.on_meta import model_on_meta
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("overrides", [[], ["model=hf_gpt2"], ["model=mlp_classifier", "data=digits"]])
def test_the_model_on_meta_has_the_real_models_parameters(make_cfg, overrides):
    """Its initialisers' writes are skipped there (they hold no values): shapes, dtypes and which
    parameters train are the real model's."""
    cfg = make_cfg("mode=train", *overrides)
    on_meta, real = model_on_meta(cfg), instantiate(cfg.model, _convert_="all")
    assert all(p.is_meta for p in on_meta.parameters())

    def described(model):
        return [(name, p.shape, p.dtype, p.requires_grad) for name, p in model.named_parameters()]

    assert described(on_meta) == described(real)


def test_the_model_is_built_once_for_each_config_and_again_for_another(make_cfg):
    """The checks that read it, and a sweep's check of a job then the job's own, share one build."""
    cfg = make_cfg("mode=train", "seed=1")
    assert model_on_meta(cfg) is model_on_meta(make_cfg("mode=train", "seed=2"))  # the seed builds no other model
    wider = model_on_meta(make_cfg("mode=train", "model.d_model=32"))
    assert wider is not model_on_meta(cfg) and wider.head.weight.shape[1] == 32


def test_a_model_that_cannot_be_built_there_is_none(make_cfg):
    assert model_on_meta(make_cfg("mode=train", "+model.no_such_argument=1")) is None


def test_a_process_that_only_checks_never_imports_dynamo():
    """A sweep's launcher checks every job on the meta device and trains none: the initialisers' meta kernels
    imported torch._dynamo there (1.4 s of the launcher's start before its first job is submitted)."""
    probe = (
        "import sys\n"
        "from tests.conftest import compose_config\n"
        "from pilot.validation import validate\n"
        "from pilot.validation.on_meta import model_on_meta\n"
        "cfg = compose_config(['mode=train'])\n"
        "assert model_on_meta(cfg) is not None\n"
        "validate(cfg)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr[-2000:]


def test_an_in_place_write_that_changes_no_shape_is_skipped_and_a_reshape_is_not():
    from pilot.validation.on_meta import _NoValuesWritten

    with torch.device("meta"), _NoValuesWritten():
        weight = torch.empty(4, 3)
        torch.nn.init.trunc_normal_(weight, std=0.02)
        weight.normal_().clamp_(-1, 1)
        row = torch.empty(3, 4).t_()  # not a value write: the shape changes as it would
    assert weight.shape == (4, 3) and row.shape == (4, 3)


class _InPlaceOnALeafWithGrad(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3, 3))
        self.weight.mul_(0.5)  # outside no_grad: the real build refuses it


class _CopyOfAnotherShape(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(3, 3))
        with torch.no_grad():
            self.weight.copy_(torch.ones(4, 4))


@pytest.mark.parametrize("model", [_InPlaceOnALeafWithGrad, _CopyOfAnotherShape])
def test_a_write_the_real_build_refuses_is_refused_on_meta_too(model):
    """Skipping value writes must not build on meta a model that cannot be built (outside examination): the
    checks would judge a model that does not exist, and the user meet the bug only after fixing another."""
    from pilot.validation.on_meta import _NoValuesWritten

    with pytest.raises(RuntimeError):
        model()
    with pytest.raises(RuntimeError), torch.device("meta"), _NoValuesWritten():
        model()
