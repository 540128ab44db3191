"""A number typed with a unit or a suffix for a setting that takes a bare one (``rental.margin=10%``,
``estimate.seq_len=2k``, ``rental.reserve_gib=1024MB``, ``rental.closing_reserve_minutes=1h``): the bare
number to write, in the setting's own unit (its name says it: ``_gib``, ``_minutes``). Said after the
schema refused the value; None when the text is no number with a unit pilot knows."""

from __future__ import annotations

import re

NUMBER = r"(\d+(?:\.\d+)?|\.\d+)"
COUNTS = {"k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9}  # 2k steps, 1M tokens, 7B parameters
BYTES = {"b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}  # KB, MB, GB, TB; with 'i': powers of 1024
BINARY = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
SECONDS = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "hr": 3600, "d": 86400}
UNIT_OF_KEY = {
    "_gib": ("bytes", 2**30, "GiB"),
    "_minutes": ("seconds", 60, "minutes"),
    "_hours": ("seconds", 3600, "hours"),
}


def _shown(number: float) -> str:
    """A number as the command line writes it: an integer without '.0', else at most 4 significant digits."""
    return str(int(number)) if float(number).is_integer() else f"{number:.4g}"


def unit_fix(key: str, text: str, integer: bool) -> str | None:
    """``key=<number><unit>`` as the bare number ``key`` takes (``integer``: a whole one), with why."""
    text = text.strip()
    unit = next((unit for suffix, unit in UNIT_OF_KEY.items() if key.endswith(suffix)), None)
    if unit is not None:
        return _in_the_keys_unit(key, text, unit)
    if (percent := re.fullmatch(NUMBER + r"\s*%", text)) and not integer:
        return f"{text} is written as a fraction: {key}={_shown(float(percent[1]) / 100)}"
    counted = re.fullmatch(NUMBER + r"\s*([kKmMbBgG])", text)
    if counted is None:
        return None
    number = float(counted[1]) * COUNTS[counted[2].lower()]
    if integer and not number.is_integer():
        return None
    fix = f"{key}={_shown(number)}"
    lengths = re.search(r"len|seq|token|position|context", key.rsplit(".", 1)[-1])
    if lengths and counted[2].lower() == "k" and float(counted[1]).is_integer():  # a 2k context: often 2 x 1024
        fix += f" (or {key}={_shown(float(counted[1]) * 1024)} if {text} meant {counted[1]} x 1024)"
    return f"{text} is written out: {fix}"


def _in_the_keys_unit(key: str, text: str, unit: tuple[str, int, str]) -> str | None:
    """``rental.reserve_gib=1024MB``, ``..._minutes=1h``: the amount converted to the unit the key's name says."""
    measure, size, name = unit
    if measure == "bytes":
        given = re.fullmatch(NUMBER + r"\s*([kKmMgGtT]?)(i?)[bB]?", text)
        if given is None or not (given[2] or text[-1] in "bB"):
            return None
        prefix, number = given[2].lower() or "b", float(given[1])
        amount = number * (BINARY[prefix] if given[3] and prefix in BINARY else BYTES[prefix])
        fix = f"{key}={_shown(amount / size)}"
        if not given[3] and prefix in BINARY and BINARY[prefix] != BYTES[prefix]:  # MB said, MiB maybe meant
            fix += f" ({text} in {name}; {key}={_shown(number * BINARY[prefix] / size)} if {given[1]} {prefix.upper()}iB was meant)"
        return f"{key} is in {name}, a number without a unit: {fix}"
    given = re.fullmatch(NUMBER + r"\s*([a-zA-Z]+)", text)
    if given is None or given[2].lower() not in SECONDS:
        return None
    return f"{key} is in {name}, a number without a unit: {key}={_shown(float(given[1]) * SECONDS[given[2].lower()] / size)}"
