"""Each default is stated once (STYLE rule 12).

The YAML under ``conf/`` holds every value, with the comment a user reads; the schemas in
``pilot/config/schema.py`` hold the types, the required fields (``MISSING``) and the enums, and
state no value but the ``_target_`` a schema describes. Where a value is still written twice —
a keyword default of the class or function a model or data file's ``_target_`` names, kept for
callers that build it without Hydra — it must equal the YAML's: ``drifts`` finds every key whose
two statements differ, and ``test_a_planted_drift_is_found`` shows that it does.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hydra.core.config_store import ConfigStore
from hydra.core.object_type import ObjectType
from omegaconf import MISSING, DictConfig, OmegaConf

from pilot.config import register
from pilot.config.values import import_target
from tests.conftest import compose_config

CONF = Path(__file__).resolve().parents[1] / "conf"
# what a schema may state: the class or factory it describes, never a setting of the YAML
SCHEMA_MAY_STATE = ("_target_",)
PAIRED = {
    "model": {
        "tiny_gpt": "instructions",
        "mlp_classifier": "digits",
        "hf_causal_lm": "instructions",
        "hf_gpt2": "instructions",
    }
}
MODEL_FOR_DATA = {"instructions": "tiny_gpt", "digits": "mlp_classifier"}  # the built-in pair of each task
# data options whose file and tokenizer only the user can name (??? in the YAML): any path composes;
# the vocabulary, read from the tokenizer directory at compose time, is given
USER_FILES = {
    "hf_instructions": [
        "model=tiny_gpt",
        "data.path=data.jsonl",
        "data.tokenizer=tokenizer",
        "data.vocab_size=512",
        *(f"data.{which}_token_id={at}" for at, which in enumerate(("pad", "bos", "eos"))),
    ]
}


# --------------------------------------------------------------------------- the comparison
def _plain(value: Any) -> Any:
    """Comparable form: an enum member as its value (``PaddingSide.left`` states "left")."""
    return value.value if isinstance(value, enum.Enum) else value


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict):  # an empty node (adapter=none) states nothing
        for key, child in value.items():
            _flatten(child, f"{prefix}.{key}" if prefix else str(key), out)
    elif value != "???":  # MISSING states nothing
        out[prefix] = _plain(value)
    return out


def stated_values(node: DictConfig) -> dict[str, Any]:
    """Every value ``node`` states, by dotted key. MISSING states nothing; an interpolation is kept
    as written (``${data.max_len}``), so a constant and an interpolation of the same key differ."""
    container = OmegaConf.to_container(node, resolve=False, throw_on_missing=False)
    container.pop("defaults", None)  # Hydra's defaults list: which files, not values
    return _flatten(container, "", {})


def stated_twice(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    return sorted(first.keys() & second.keys())


def drifts(first: dict[str, Any], second: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The keys both state with different values: (key, first's value, second's value)."""
    return [(key, first[key], second[key]) for key in stated_twice(first, second) if first[key] != second[key]]


# --------------------------------------------------------------------------- the files
def _schema_files() -> list[tuple[Path, str]]:
    """Each YAML file that starts from a schema of the ConfigStore, with that schema's name."""
    register()
    store = ConfigStore.instance()
    pairs = []
    for path in sorted(CONF.rglob("*.yaml")):
        group = "" if path.parent == CONF else path.parent.relative_to(CONF).as_posix()
        if group.startswith("hydra") or store.get_type(group) is not ObjectType.GROUP:
            continue  # Hydra's own settings, and the groups without a schema (experiment, memory_variant)
        stored = store.list(group)
        for entry in OmegaConf.load(path).get("defaults", []):
            if isinstance(entry, str) and f"{entry}.yaml" in stored:
                pairs.append((path, f"{group}/{entry}.yaml".lstrip("/")))
    return pairs


SCHEMA_FILES = _schema_files()
SCHEMAS = sorted({schema for _, schema in SCHEMA_FILES})


def _schema_values(schema: str) -> dict[str, Any]:
    register()
    return stated_values(ConfigStore.instance().load(schema).node)


def _yaml_values(path: Path) -> dict[str, Any]:
    return stated_values(OmegaConf.load(path))


def _keyword_defaults(target: Any) -> dict[str, Any]:
    """The keyword defaults of the class or function a ``_target_`` names."""
    parameters = inspect.signature(target).parameters.values()
    return {p.name: _plain(p.default) for p in parameters if p.default is not inspect.Parameter.empty}


def _target_files() -> list[Path]:
    return sorted(path for group in ("model", "data") for path in (CONF / group).glob("*.yaml"))


# --------------------------------------------------------------------------- the comparison can fail
@dataclass
class _PlantedSplit:
    salt: str = "pilot"


@dataclass
class _PlantedModel:
    _target_: str = "pilot.models.tiny_gpt.TinyGPT"
    vocab_size: int = MISSING
    max_len: int = 128  # the drift this file was written for: the YAML takes it from the data
    d_model: int = 64
    split: _PlantedSplit = field(default_factory=_PlantedSplit)


def test_a_planted_drift_is_found():
    schema = stated_values(OmegaConf.structured(_PlantedModel))
    yaml = stated_values(
        OmegaConf.create(
            "defaults: [schema, _self_]\nvocab_size: ${data.vocab_size}\nmax_len: ${data.max_len}\n"
            "d_model: 64\nsplit: {salt: other}\n"
        )
    )
    assert "vocab_size" not in schema  # MISSING states nothing
    assert stated_twice(schema, yaml) == ["d_model", "max_len", "split.salt"]
    assert drifts(schema, yaml) == [("max_len", 128, "${data.max_len}"), ("split.salt", "pilot", "other")]
    assert drifts(schema, {"max_len": 128, "d_model": 64.0}) == []  # 64 and 64.0 are one value


def test_a_planted_constructor_drift_is_found():
    def make_task(path=None, max_len: int = 80, padding_side: str = "right"):
        raise AssertionError("never called")

    yaml = {"path": None, "max_len": 96, "padding_side": "right"}
    assert drifts(_keyword_defaults(make_task), yaml) == [("max_len", 80, 96)]


def test_the_schema_files_are_found():
    assert len(SCHEMA_FILES) >= 20 and (CONF / "config.yaml", "pilot_schema.yaml") in SCHEMA_FILES


# --------------------------------------------------------------------------- the tree
@pytest.mark.parametrize("schema", SCHEMAS)
def test_a_schema_states_no_setting(schema):
    stated = {key: value for key, value in _schema_values(schema).items() if key not in SCHEMA_MAY_STATE}
    assert not stated, (
        f"{schema} states {stated}: state each value once, in the YAML that uses the schema "
        "(the schema keeps the type and MISSING)"
    )


@pytest.mark.parametrize("path, schema", SCHEMA_FILES, ids=[str(p.relative_to(CONF)) for p, _ in SCHEMA_FILES])
def test_no_schema_default_differs_from_the_yaml(path, schema):
    assert drifts(_schema_values(schema), _yaml_values(path)) == []


@pytest.mark.parametrize("path", _target_files(), ids=lambda p: str(p.relative_to(CONF)))
def test_no_constructor_default_differs_from_the_yaml(path):
    yaml = _yaml_values(path)
    schema = next((s for p, s in SCHEMA_FILES if p == path), None)
    target = yaml.get("_target_") or (_schema_values(schema).get("_target_") if schema else None)
    assert target, f"{path} names no _target_"
    assert drifts(_keyword_defaults(import_target(target)), yaml) == []


def _option_lines() -> list[list[str]]:
    lines = [[]] + [[f"+experiment={p.stem}"] for p in sorted((CONF / "experiment").glob("*.yaml"))]
    for group in sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name not in ("experiment", "hydra")):
        for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
            line = [f"{'+' if group == 'memory_variant' else ''}{group}={option}"]
            if group == "model":
                line.append(f"data={PAIRED['model'][option]}")
            if group == "data":
                line += USER_FILES.get(option) or [f"model={MODEL_FOR_DATA[option]}"]
            lines.append(line)
    return lines


@pytest.mark.parametrize("line", _option_lines(), ids=lambda line: " ".join(line) or "default")
def test_every_composed_value_comes_from_the_yaml(line):
    """The schemas no longer back the YAML up: every option states every setting of its group."""
    assert OmegaConf.missing_keys(compose_config(line)) == set()
