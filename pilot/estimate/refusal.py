"""Why a configuration cannot be estimated on fake tensors: ``EstimateRefused`` and its message.

The estimator refuses instead of guessing (STYLE.md rule 6); the message names the real cause of
the error raised under fake tensors and where it was raised.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from omegaconf import OmegaConf
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    UnsupportedOperatorException,
)

from pilot.errors import PilotError, user_error
from pilot.models.hf_config_reads import config_settings_matching, sizes_in


class EstimateRefused(PilotError, ValueError):
    """The configuration cannot be estimated without allocating; the message says why and what to do."""


ESTIMATOR_DIR = str(Path(__file__).resolve().parent)


def _machinery(filename: str) -> bool:
    """A frame of torch or of the estimator itself, never the cause of a refusal."""
    return "/torch/" in filename.replace("\\", "/") or filename.startswith(ESTIMATOR_DIR)


def _raised_at(error: BaseException) -> str:
    """Where an error was raised: the innermost frame outside torch and outside the estimator's own
    dispatch modes (``pilot/estimate``), as ``file.py:line in function``."""
    frames = traceback.extract_tb(error.__traceback__)
    outside = [f for f in frames if not _machinery(f.filename)] or frames
    if not outside:
        return "an unknown place"
    frame = outside[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} in {frame.name}"


FAKE_KERNELS = ("/torch/_meta_registrations.py", "/torch/_prims_common/", "/torch/_refs/", "/torch/_decomp/")


TRACKER_HOOKS = "/torch/distributed/_tools/mod_tracker.py"  # the module hooks MemTracker runs under


def _in_tracker(error: BaseException) -> bool:
    """Raised inside the memory tracker's module hooks (after the model's own last frame), not by the
    model's code nor by an operator's kernel (every operator passes the tracker's dispatch too)."""
    frames = [frame.filename.replace("\\", "/") for frame in traceback.extract_tb(error.__traceback__)]
    own = [at for at, name in enumerate(frames) if "/torch/" not in name]
    after = frames[own[-1] + 1 :] if own else frames
    return any(name.endswith(TRACKER_HOOKS) for name in after) and not _in_fake_kernel(error)


def _in_fake_kernel(error: BaseException) -> bool:
    """Raised inside the fake (meta) implementation of an operator (its checks of the inputs)."""
    frames = traceback.extract_tb(error.__traceback__)
    return any(part in frame.filename.replace("\\", "/") for frame in frames for part in FAKE_KERNELS)


def settings_in_message(cfg, error: BaseException) -> str:
    """For a transformers model built from ``model.model_type`` and ``model.config``: the settings (its
    config's defaults included, marked) holding a size the error names, as a sentence; "" otherwise. A
    default sized for the full model beside the YAML's small sizes (GPT-J's rotary_dim=64 with 16 per
    head) crashes in a kernel and reads like a PyTorch limitation."""
    model_type, settings = OmegaConf.select(cfg, "model.model_type"), OmegaConf.select(cfg, "model.config")
    path = OmegaConf.select(cfg, "model.path", default=None)
    if path:  # a saved model is built from its config.json: the YAML's model_type and config are not read
        return _saved_settings_in_message(str(path), error)
    if not model_type or settings is None:
        return ""
    try:
        import transformers

        given = OmegaConf.to_container(settings, resolve=True)
        found = config_settings_matching(
            sizes_in(str(error)), transformers.AutoConfig.for_model(str(model_type), **given), given
        )
    except Exception:  # noqa: BLE001 - no config to read: nothing said
        return ""
    listed = [text for _, text in sorted(found, key=lambda item: item[0])][:6]  # defaults first
    return (
        f" Sizes in that message match these settings: {', '.join(listed)}; a default sized for a larger model "
        "(marked) beside the YAML's small sizes is the usual cause. Fix: make them agree (+model.config.<key>=...)."
        if listed
        else ""
    )


def _saved_settings_in_message(path: str, error: BaseException) -> str:
    """``settings_in_message`` for a model saved in ``path``: the sizes in its config.json the error names."""
    try:
        import transformers

        config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
        given = {k: v for k, v in config.to_diff_dict().items() if isinstance(v, (int, float))}
        found = config_settings_matching(sizes_in(str(error)), config, given)
    except Exception:  # noqa: BLE001 - no config to read: nothing said
        return ""
    listed = [text.replace("model.config.", "") for _, text in sorted(found, key=lambda item: item[0])][:6]
    return (
        f" Sizes in that message match these settings of {path}/config.json: {', '.join(listed)}. Fix: make them "
        "agree in that file (the model was saved with settings that cannot build it)."
        if listed
        else ""
    )


def refusal_reason(error: BaseException, *, building: bool = False, settings_note: str = "") -> str:
    """The refusal message for an error raised under fake tensors, naming its real cause.

    Only an operation that needs a tensor's *value* (``.item()``, ``if tensor``, a shape that depends
    on the data) is blamed on reading values; an operator without a fake implementation and any
    other error are reported as what they are, with where they were raised; ``building``: raised
    while the model was built (its ``__init__`` and weight initialization), not in forward/loss.
    """
    if type(error).__name__ == "InstantiationException" and error.__cause__ is not None:
        error = error.__cause__  # Hydra's wrapper says only 'Error in call to target': its cause says why
    if (said := user_error(error)) is not None:
        return str(said)
    first_line = (str(error).splitlines() or [""])[0][:300]
    what = f"{type(error).__name__}: {first_line}"
    where = _raised_at(error)
    data_dependent = (DataDependentOutputException, DynamicOutputShapeException)
    if isinstance(error, data_dependent) or type(error).__name__.startswith("GuardOnDataDependent"):
        return _reads_values(what, where, building)
    if _in_tracker(error):
        return (
            f"PyTorch's memory tracker (torch.distributed._tools.mem_tracker, which the estimate runs under) cannot "
            f"follow this model's layers ({what}; raised at {where}, inside the tracker's module hooks): a PyTorch "
            "limitation, not your code (transformers' Mamba-style layers meet it: Jamba, Bamba, Falcon-H1). Fix: measure it on a real device with the pilot's phases (its peak memory is measured there)."
        )
    if isinstance(error, UnsupportedOperatorException):
        return (
            f"the model or task code cannot run on fake tensors: operator {first_line} has no "
            f"fake-tensor implementation (raised at {where}); pilot refuses to guess its memory. "
            "Fix: use an operator PyTorch can run on fake tensors, or measure it on a real device "
            "with the pilot's phases."
        )
    fake_kernel = (
        " It was raised by PyTorch's fake (meta) kernel of an operator: if the same code runs on real "
        "tensors (the pilot's phases train it), that kernel accepts less than the real one, a PyTorch "
        "limitation, not your code; give the operator what it names."
        if _in_fake_kernel(error) and not settings_note
        else ""
    )
    return (
        f"the estimator could not run the model, task or update code ({what}; raised at {where}); "
        "pilot refuses to guess its memory. This is not a value read; fix the error (run "
        "estimate_memory(cfg, fake=False) to see it on real tensors) or measure it on a real device "
        f"with the pilot's phases.{settings_note or fake_kernel}"
    )


def _reads_values(what: str, where: str, building: bool) -> str:
    """The refusal of an operation that needs a tensor's value or makes a shape from the data."""
    if building:
        return (
            f"the model's construction cannot run on fake tensors: its __init__ or weight "
            f"initialization reads a tensor value ({what}; raised at {where}); pilot refuses to "
            "guess its memory. Fix: initialize the weights without reading their values (e.g. no "
            "loop until no sample is out of range; torch.nn.init's functions are handled), or "
            "measure it on a real device with the pilot's phases."
        )
    if "pack_padded_sequence" in what:  # shapes from the lengths by design: the right way, not a fault
        return (
            f"the model packs its batches (torch.nn.utils.rnn.pack_padded_sequence), whose shapes come from "
            f"each batch's lengths, which fake tensors do not have ({what}; raised at {where}); pilot refuses to "
            "guess its memory. Packing is the right way to keep an RNN off its padding: keep it. Its memory is "
            "measured on real tensors by the pilot's phases (phases.csv); run the pilot at the campaign's sizes "
            "on the target device to size it."
        )
    operator = re.search(r"aten\.([A-Za-z0-9_]+)", what)
    if operator and operator.group(1).lstrip("_") not in CODE_MADE_SHAPES:  # F.ctc_loss: the operator's own
        return (
            f"PyTorch's operator aten.{operator.group(1)} sizes its output from its inputs' values, which fake "
            f"tensors do not have ({what}; raised at {where}): PyTorch has no fake-tensor kernel for it, a "
            "limitation of the estimate, not your code; pilot refuses to guess its memory. Its memory is "
            "measured on real tensors by the pilot's phases (phases.csv); run the pilot at the campaign's sizes "
            "on the target device to size it."
        )
    return (
        f"the model or task code cannot run on fake tensors: it reads a tensor value or makes a "
        f"shape depend on the data ({what}; raised at {where}); pilot refuses to guess its memory. "
        "Fix: avoid reading tensor values inside forward/loss (e.g. .item(), data-dependent "
        "shapes), or measure it on a real device with the pilot's phases."
    )


# operators whose output size comes from values because the code chose them: a boolean index, nonzero,
# unique, masked_select (their fix is the code's); any other operator raising it does so by its own nature
CODE_MADE_SHAPES = frozenset(
    {"nonzero", "nonzero_static", "argwhere", "masked_select", "masked_scatter", "unique", "unique2",
     "unique_dim", "unique_consecutive", "index", "index_put", "repeat_interleave", "local_scalar_dense", "item",
     "bincount", "histc", "segment_reduce", "to_sparse", "sparse_coo_tensor"}
)  # fmt: skip
