"""``model.path`` (a local save_pretrained directory) before anything runs: an empty one (an unset variable),
a file for the directory, no config.json or weights, a saved model that is no causal LM
(``saved_model_problem``), and ``model.config.*`` typed beside it, which nothing would read."""

from __future__ import annotations

import json
from pathlib import Path

from pilot.config.values import enum_value, select, written_overrides
from pilot.models.saved_model import saved_model_problem
from pilot.validation.problems import Problem


def builds_hf(cfg) -> bool:
    """model=hf_causal_lm (or a YAML of the same builder)."""
    return str(select(cfg, "model._target_") or "").endswith("hf_causal_lm.build")


def check_model_path(cfg, problems: list[Problem]) -> None:
    """model.path (model=hf_causal_lm): a local save_pretrained directory; pilot never downloads."""
    path = select(cfg, "model.path")
    if isinstance(path, str) and not path.strip():  # model.path=$UNSET: not the saved model, a random one
        problems.append(
            Problem(
                "model.path",
                path,
                "an empty path names no directory (an unset variable?), and the run would train a freshly "
                "initialised model built from model.config instead of the saved one. Fix: the directory "
                "save_pretrained wrote, or model.path=null to build from model.config.",
            )
        )
        return
    if not isinstance(path, str):
        return
    directory = Path(path).expanduser()
    fix = "Fix: a local directory written by save_pretrained (pilot never downloads), or model.path=null to build from model.config."
    if directory.is_file():
        inside = f" Fix: model.path={directory.parent}, the directory that holds it" if directory.name in (
            "config.json", *WEIGHT_FILES) else f" {fix.rstrip('.')}"  # fmt: skip
        problems.append(Problem("model.path", path, f"is a file, not the directory save_pretrained writes.{inside}."))
        return
    if not (directory / "config.json").is_file():
        problems.append(Problem("model.path", path, f"no config.json there ({directory.resolve()}). {fix}"))
        return
    try:
        from transformers import AutoConfig

        AutoConfig.from_pretrained(str(directory), local_files_only=True)
    except ImportError:
        return  # the builder says transformers is missing, with its fix
    except Exception as error:  # noqa: BLE001 - what transformers cannot read there, said with the file
        said = " ".join(line.strip() for line in str(error).splitlines() if line.strip())[:300]
        problems.append(
            Problem("model.path", path, f"its config.json does not load ({type(error).__name__}: {said}). {fix}")
        )
        return
    estimate = enum_value(select(cfg, "mode")) == "estimate"  # fake tensors: the model built from config.json
    if not estimate and not any((directory / name).is_file() for name in WEIGHT_FILES):
        problems.append(
            Problem(
                "model.path",
                path,
                f"no weights there (none of {', '.join(WEIGHT_FILES)}). {fix} (mode=estimate reads config.json "
                "alone: a directory without weights sizes the rental)",
            )
        )
        return
    if builds_hf(cfg) and (other := saved_model_problem(path)) is not None:  # read as saved, or refused here
        problems.append(Problem("model.path", path, other))


WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def typed_config_keys() -> set[str]:
    """The ``model.config`` keys this command line sets (``+model.config.x=...`` or without the +)."""
    keys = set()
    for override in written_overrides():
        name = override.split("=", 1)[0].lstrip("+~")
        if name.startswith("model.config."):
            keys.add(name.removeprefix("model.config.").split(".")[0])
    return keys


def check_config_beside_path(cfg, problems: list[Problem]) -> None:
    """model.config.* typed beside model.path: the saved config.json is what builds the model, so the typed
    setting would be read by nothing (an estimate at 24 layers gave the saved 2-layer model's numbers, exit 0)."""
    path = select(cfg, "model.path")
    if not builds_hf(cfg) or not isinstance(path, str) or not path:
        return
    if (other := _another_model_type(cfg, path)) is not None:
        problems.append(other)
    for key in sorted(typed_config_keys()):
        problems.append(
            Problem(
                f"model.config.{key}",
                select(cfg, f"model.config.{key}"),
                f"model.path={path} is set, so the model is built from its saved config.json and model.config is "
                "not read. Fix: model.path=null to build a fresh model from model.config (an estimate at another "
                f"size), or leave model.config.{key} out to use the saved model as it is.",
            )
        )


def _another_model_type(cfg, path: str) -> Problem | None:
    """``model.model_type=qwen2`` (or ``model=hf_gpt2``, whose type is gpt2) chosen on the command line beside a
    ``model.path`` whose config.json says another type: the saved model is built as it was saved, and the typed
    type is read by nothing, yet config.yaml, the run's variant and REPRODUCE.md said it (a Llama trained while
    the records said qwen2). Not judged where config.json cannot be read (the path's own check says why)."""
    written = written_overrides()
    typed = any(o.split("=", 1)[0].lstrip("+~") == "model.model_type" for o in written)
    group = next((o.split("=", 1)[1] for o in written if o.split("=", 1)[0].lstrip("+") == "model"), None)
    if not typed and group in (None, "hf_causal_lm"):  # the group's default type, llama: a saved model of any type
        return None
    try:
        saved = json.loads((Path(path).expanduser() / "config.json").read_text()).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None
    chosen = select(cfg, "model.model_type")
    if not saved or chosen == saved:
        return None
    key = "model.model_type" if typed else "model"
    return Problem(
        key,
        chosen if typed else group,
        f"model.path={path} holds a saved {saved} model (its config.json), which is what is built: "
        f"model.model_type={chosen} would be read by nothing, and the run's records would say it. Fix: "
        + (
            f"leave model.model_type out (or model.model_type={saved})"
            if typed
            else f"model=hf_causal_lm model.path={path}"
        ),
    )
