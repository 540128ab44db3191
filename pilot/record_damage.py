"""What a value must be, and how the recap says it is not: the reasons a run directory is ``Unreadable``."""

from __future__ import annotations

import json
import os
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


def read_bytes(path: Path | str) -> bytes:
    """A file's bytes (binary: no text layer, the recap reads 20,000 files); Unreadable when it cannot be read."""
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        raise Unreadable(f"{os.path.basename(path)}: missing") from None
    except OSError as error:
        raise Unreadable(f"{os.path.basename(path)}: cannot be read ({error.strerror or error})") from None


def decode(data: bytes, name: str) -> str:
    """``data`` as ``Path.read_text`` gives it: UTF-8, ``\\r\\n`` and ``\\r`` read as ``\\n``."""
    try:
        text = data.decode()
    except UnicodeDecodeError as error:
        raise Unreadable(f"{name}: not text (byte {error.start} is not UTF-8)") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_text(path: Path | str) -> str:
    return decode(read_bytes(path), os.path.basename(path))


def json_problem(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return (
            f"not JSON ({error.msg.removesuffix(' at')} at column {error.colno})"  # 'Unterminated string starting at'
        )
    return f"not JSON ({error})"


def read_json_object(path: Path | str) -> dict[str, Any]:
    """A JSON file that must hold one object (run.json)."""
    name = os.path.basename(path)
    text = read_text(path)
    if not text.strip():
        raise Unreadable(f"{name}: empty file")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(f"{name} line {error.lineno}: {json_problem(error)}") from None
    except (ValueError, RecursionError) as error:
        raise Unreadable(f"{name}: not JSON ({type(error).__name__})") from None
    if not isinstance(value, dict):
        raise Unreadable(f"{name}: holds {json_kind(value)}, not an object")
    return value
