"""What a value must be, and how the recap says it is not: the reasons a run directory is ``Unreadable``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Unreadable(Exception):
    """Why one run directory cannot be read: the file, the line and what was wrong."""


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


TEXT = ("a string", lambda v: isinstance(v, str))
INTEGER = ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**63)
NUMBER = ("a number", is_number)
OBJECT = ("an object", lambda v: isinstance(v, dict))
LIST = ("a list", lambda v: isinstance(v, list))
TEXTS = ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))


def shown(value: Any) -> str:
    """A value as the reason quotes it: strings in quotes, the rest as JSON, cut at 40 characters."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), "a number")


def wrong_value(holder: dict[str, Any], key: str, expected: str, name: str | None = None) -> str:
    name = name or key
    if key not in holder:
        return f"no {name}"
    return f"{name} is {shown(holder[key])}, not {expected}"


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        raise Unreadable(f"{path.name}: missing") from None
    except UnicodeDecodeError as error:
        raise Unreadable(f"{path.name}: not text (byte {error.start} is not UTF-8)") from None
    except OSError as error:
        raise Unreadable(f"{path.name}: cannot be read ({error.strerror or error})") from None


def json_problem(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg} at column {error.colno})"
    return f"not JSON ({error})"


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file that must hold one object (run.json)."""
    text = read_text(path)
    if not text.strip():
        raise Unreadable(f"{path.name}: empty file")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(f"{path.name} line {error.lineno}: {json_problem(error)}") from None
    except (ValueError, RecursionError) as error:
        raise Unreadable(f"{path.name}: not JSON ({type(error).__name__})") from None
    if not isinstance(value, dict):
        raise Unreadable(f"{path.name}: holds {json_kind(value)}, not an object")
    return value
