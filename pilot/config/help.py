"""``python -m pilot --help``: the groups a user chooses from (``conf/``), without the schema entries
pilot registers in the same groups (``schema``, ``schema_<option>``: types, not choices)."""

from __future__ import annotations

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def config_groups(conf_dir: Path = CONF_DIR) -> str:
    """One line per group, ``group: option, option``, from the YAML files under ``conf_dir``."""
    lines = []
    for group in sorted(p for p in conf_dir.rglob("*") if p.is_dir() and any(p.glob("*.yaml"))):
        name = group.relative_to(conf_dir).as_posix()
        if name == "hydra/help":
            continue
        lines.append(f"{name}: {', '.join(sorted(p.stem for p in group.glob('*.yaml')))}")
    return "\n".join(lines)
