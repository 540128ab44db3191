"""What the command line itself says, before Hydra composes anything."""

from __future__ import annotations


def repeated_keys(arguments: list[str]) -> list[str]:
    """A warning for each key the line sets more than once with different values (``optim.lr=1e-3 ...
    optim.lr=2e-3``, often a shell variable's settings followed by one's own): Hydra keeps the last
    without a word, and the run's record lists both as typed."""
    values: dict[str, list[str]] = {}
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, value = argument.split("=", 1)
        values.setdefault(key.lstrip("+~"), []).append(value)
    return [
        f"{key} is given {len(given)} times ({', then '.join(given)}): Hydra keeps the last, {key}={given[-1]}; "
        "give it once"
        for key, given in values.items()
        if len(set(given)) > 1
    ]
