"""What the user probably meant, after Hydra refused the command line: the nearest setting for a key
the config does not have (Hydra's own advice, a ``+``, would add a key nothing reads) and the
nearest option of a config group. Computed only when Hydra has refused: it composes the default
config once more (a fraction of a second), never on a command line that works."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

HIDDEN_OPTIONS = "schema"  # the schema's own entries in a group (schema, schema_<option>: pilot.config.register)


def suggestions(conf_dir: str, arguments: list[str]) -> list[str]:
    """One line per command-line override that names a key the default config lacks, or an option
    its group lacks, with the nearest ones; [] when there is nothing to suggest or it cannot tell."""
    try:
        overrides = OverridesParser.create().parse_overrides([a for a in arguments if "=" in a])
    except Exception:  # noqa: BLE001 - a line Hydra could not parse: its own message says where
        return []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            cfg = compose("config")
            loader = GlobalHydra.instance().config_loader()
            groups = set(loader.list_groups(""))
            lines = []
            for override in overrides:
                key = override.key_or_group
                if key.startswith("hydra") or override.is_add() or override.is_delete():
                    continue
                if key in groups and not override.is_sweep_override():
                    options = [o for o in loader.get_group_options(key) if not o.startswith(HIDDEN_OPTIONS)]
                    value = str(override.value())
                    if value not in options:
                        lines.append(_nearest(f"{key}={value}: no such option", value, options, "options"))
                elif "." in key and OmegaConf.select(cfg, key, default=_MISSING) is _MISSING:
                    lines.append(_nearest(f"{key}: not a setting", key, list(_keys(cfg)), "settings"))
            return lines
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy: Hydra's own message already stands
        return []
    finally:
        GlobalHydra.instance().clear()


_MISSING = object()


def _nearest(what: str, given: str, known: list[str], kind: str) -> str:
    near = difflib.get_close_matches(given, known, n=3, cutoff=0.6)
    if near:
        return f"{what}; did you mean {' or '.join(near)}?"
    return f"{what}; the {kind}: {', '.join(sorted(known)[:40])}"


def _keys(node: DictConfig, prefix: str = "") -> Iterator[str]:
    for key in node.keys():
        child = node._get_node(key)
        if isinstance(child, DictConfig):
            yield from _keys(child, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"
