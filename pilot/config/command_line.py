"""What the command line itself says, before Hydra composes anything, and how Hydra's refusals of it are said."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pilot.config.group_choices import group_value_problem
from pilot.config.help import CONF_DIR
from pilot.config.other_names import environment_variable, other_trainers_flags
from pilot.config.suggest import readings_that_fit


def repeated_keys(arguments: list[str]) -> list[str]:
    """A warning for each key the line sets more than once with different values (``optim.lr=1e-3 ...
    optim.lr=2e-3``, often a shell variable's settings followed by one's own): Hydra keeps the last
    without a word, and the run's record lists both as typed."""
    values, added = _values_by_key(arguments)
    return [
        f"{key} is given {len(given)} times ({', then '.join(given)}): Hydra keeps the last, {key}={given[-1]}; "
        "give it once"
        for key, given in values.items()
        if len(set(given)) > 1 and key not in added
    ]


# a number whose fraction or exponent holds '_': Hydra, as Python, reads '_' between digits as a digit
# separator (1e-3_2 is 1e-32), useful in 10_000 and nowhere in a fraction or an exponent but as a typo
_SEPARATED_FRACTION = re.compile(r"[+-]?(\d[\d_]*)?\.?[\d_]*([eE][+-]?[\d_]+)?")


def separated_numbers(arguments: list[str]) -> list[str]:
    """A warning for each number typed with '_' in its fraction or exponent (``optim.lr=1e-3_2``): it
    is read as Python reads it, the '_' a digit separator (1e-32), not refused and not said."""
    warnings = []
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, value = argument.split("=", 1)
        for text in value.strip("[]()").split(","):
            text = text.strip()
            tail = re.split(r"[.eE]", text, maxsplit=1)[1:]
            if "_" in "".join(tail) and _SEPARATED_FRACTION.fullmatch(text) and _reads_as_number(text):
                warnings.append(
                    f"{key.lstrip('+~')}={text} is read as {float(text):g}: '_' between digits is a digit "
                    f"separator (10_000 = 10000), in a fraction or an exponent too; if you meant another "
                    f"number, type it without '_'"
                )
    return warnings


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def refuse_added_twice(arguments: list[str]) -> None:
    """A key added with '+' and given again (``+experiment=a +experiment=b``, ``+seed=1 seed=2``): Hydra refuses
    it ("Multiple values for experiment", advice for a YAML defaults list) after a warning that said it keeps
    the last. One line naming both, exit 2."""
    values, added = _values_by_key(arguments)
    twice = [key for key in added if len(values[key]) > 1]
    if twice:
        key = twice[0]
        last = next(a for a in reversed(arguments) if "=" in a and a.split("=", 1)[0].lstrip("+~") == key)
        print(
            f"pilot: {key} is given {len(values[key])} times ({', then '.join(values[key])}), added with '+' "
            f"where a '+' adds a key once. Fix: give it once, e.g. {last}",
            file=sys.stderr,
        )
        raise SystemExit(2)


def _values_by_key(arguments: list[str]) -> tuple[dict[str, list[str]], set[str]]:
    """Each key's values as the line gives them, and the keys one of whose arguments adds it ('+', not '++')."""
    values: dict[str, list[str]] = {}
    added: set[str] = set()
    for argument in arguments:
        if argument.startswith("-") or "=" not in argument:
            continue
        key, value = argument.split("=", 1)
        values.setdefault(key.lstrip("+~"), []).append(value)
        if key.startswith("+") and not key.startswith("++"):
            added.add(key.lstrip("+~"))
    return values, added


NODE_DETAILS = ("full_key:", "reference_type=", "object_type=")  # OmegaConf's own lines: where in its tree


def without_node_details(text: str) -> str:
    """OmegaConf's message without the lines that locate it in its own tree (the key is in Hydra's line)."""
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith(NODE_DETAILS))


def names_hydras_key(said: list[str], hydras: str) -> bool:
    """Whether pilot's lines say what is wrong with what Hydra's message names first ("Could not
    override 'optim.lrr'.", "Error merging override seed=1e3", "Could not find 'model/nope'"), or say how to
    write an argument Hydra's grammar cannot read: then they replace Hydra's (whose fix for a typo is to add
    it, +optim.lrr=1; whose grammar error names a token, not the argument)."""
    first = hydras.splitlines()[0] if hydras else ""
    named = re.findall(r"'([^']+)'", first) + re.findall(
        r"^(?:Error merging override|Multiple values for) (\S+?)\.?$", first.split(". ")[0]
    )
    keys = (
        {n.split("=")[0].lstrip("+~") for n in named}
        | {  # 'model/org/name': model=org/name (a Hub name)
            f"{n[:at]}={n[at + 1 :]}" for n in named for at in (i for i, c in enumerate(n) if c == "/")
        }
    )
    grammar = any(
        "Hydra's override grammar cannot read it" in line
        or "a setting without a value" in line
        or "a setting is written key=value" in line
        or "the shell split the value at its spaces" in line
        or "look-alikes of ASCII" in line  # a pasted '–m' (Hydra: LexerNoViableAltException)
        for line in said
    )
    lines = [line.lstrip("+~") for line in said]  # '+optim.lr=1: ...' names optim.lr ('model/nope': model=nope)
    return grammar or any(line.startswith((f"{key}:", f"{key}=")) for key in keys - {"config"} for line in lines)


VALUED_FLAGS = ("-cp", "--config-path", "-cn", "--config-name", "-cd", "--config-dir", "--experimental-rerun")


FLAGS_MOVED = {"-m": 0, "--multirun": 0, "--resolve": 0, "--cfg": 1, "-c": 1, "--package": 1, "-p": 1}  # and values
INFO_TOPICS = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")  # --info's optional value


def flags_first(argv: list[str]) -> list[str]:
    """Hydra's flags (``-m``, ``--cfg job``, ``--info [topic]``, ``--resolve``, ``--package p``) moved before the
    overrides, each with its value: Hydra's argparse takes the overrides as one group, so ``python -m pilot
    +experiment=lr_sweep -m seed=0,1`` refused ``seed=0,1`` as an unrecognized argument (a page of usage, or
    pilot's line telling settings to drop dashes they did not have). The config flags' values stay put."""
    moved, kept, at = [], [argv[0]], 1
    while at < len(argv):
        arg = argv[at]
        flag = arg.partition("=")[0] if arg.startswith("--") else arg
        if arg in VALUED_FLAGS:
            kept += argv[at : at + 2]
            at += 2
            continue
        if flag in FLAGS_MOVED or flag in ("--info", "-i"):
            takes = (
                0
                if "=" in arg
                else FLAGS_MOVED.get(flag, 1 if argv[at + 1 : at + 2] in ([t] for t in INFO_TOPICS) else 0)
            )
            moved += argv[at : at + 1 + takes]
            at += 1 + takes
            continue
        kept.append(arg)
        at += 1
    return [kept[0], *moved, *kept[1:]]


LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")  # torchrun's, read as integers


def refuse_unusable(arguments: list[str], conf_dir: str, environ: Mapping[str, str]) -> None:
    """What Hydra or the launch would meet with a traceback: a config group set to null (``optim=null``,
    one of a sweep's values too: Hydra's ValueError), a launcher variable that is no integer (``RANK=abc``):
    one line each, exit 2."""
    groups = {p.name for p in Path(conf_dir).iterdir() if p.is_dir()}
    lines = []
    for at, argument in enumerate(arguments):
        if not argument.strip():  # '"$EXTRA"' with EXTRA unset: Hydra's grammar message alone, before
            lines.append(
                "an empty argument on the command line (a quoted shell variable that is unset?). Fix: leave it out"
            )
            continue
        spaced = _spaced_setting(arguments, at)
        if spaced:  # optim.lr = 1e-4, optim.lr =1e-4
            lines.append(spaced)
            continue
        if argument.lstrip("+~").startswith("="):  # Hydra's ValueError on '=5', a bare grammar message on '=abc'
            lines.append(
                f"{argument}: no key before '=' (an unset shell variable, as in ${{KEY}}=5?). Fix: key=value, "
                "e.g. optim.lr=1e-3 (python -m pilot --cfg job lists the keys)"
            )
            continue
        name = argument[2:].partition("=")[0]
        if argument.startswith("--") and ("." in name or name in groups):  # argparse's usage alone, before
            after = arguments[at + 1] if at + 1 < len(arguments) else ""
            spaced = "=" not in argument and after and not after.startswith("-") and "=" not in after  # --optim.lr 1e-3
            typed, fix = (f"{argument} {after}", f"{name}={after}") if spaced else (argument, argument[2:])
            lines.append(f"{typed}: a setting is written key=value, without dashes. Fix: {fix}")
            continue
        key, _, value = argument.lstrip("+").partition("=")
        if key.startswith("hydra/") and "null" in [v.strip() for v in value.split(",")]:
            lines.append(
                f"{argument}: a config group takes one of its options, and null is none. Fix: {key}=<an option> "
                f"(python -m pilot --help lists them), or ~{key} to leave the group out"
            )
        elif key in groups and (problem := group_value_problem(argument, conf_dir)):
            lines.append(problem)
    for name in LAUNCHER_VARIABLES:
        value = environ.get(name)
        if value is not None and not (value.strip().isdigit()):
            lines.append(
                f"{name}={value!r} in the environment: torchrun sets it to an integer >= 0 for each process it "
                f"starts. Fix: unset {name} (one process), or start the run with torchrun"
            )
    if lines:
        print("\n".join(f"pilot: {line}" for line in lines), file=sys.stderr)
        raise SystemExit(2)


def _spaced_setting(arguments: list[str], at: int) -> str | None:
    """``optim.lr = 1e-4``, ``optim.lr =1e-4`` or ``optim.lr= 1e-4``: a setting the shell split at a space around
    its '=' (Hydra's lexer lines, or 'no key before =', before); the setting written whole."""
    argument, before = arguments[at], arguments[at - 1] if at else ""
    after = arguments[at + 1] if at + 1 < len(arguments) else ""
    if (
        re.fullmatch(r"[+~]{0,2}[A-Za-z_][\w@/.-]*=", argument)
        and after
        and not after.startswith("-")
        and "=" not in after
    ):
        return f"{argument} {after}: a space after '=' split the setting. Fix: {argument}{after} (no space around '=')"
    if not argument.startswith("=") or not re.fullmatch(r"[+~]{0,2}[A-Za-z_][\w@/.-]*", before):
        return None
    value = argument[1:] or (arguments[at + 1] if at + 1 < len(arguments) and "=" not in arguments[at + 1] else "")
    typed = " ".join(arguments[at - 1 : at + (2 if argument == "=" and value else 1)])
    return f"{typed}: a space around '=' split the setting. Fix: {before}={value or '<value>'} (no space around '=')"


EXITING_FLAGS = ("-h", "--help", "--hydra-help", "--version")  # argparse prints and exits: left to Hydra


def refuse_unreadable_flags(arguments: list[str]) -> None:
    """A flag Hydra's own argument parser refuses (``--cfg jobb``, ``-help``, ``--info hydra.run.dir=x``):
    argparse printed its whole usage block and ``__main__.py: error: ...`` with no fix. One line, exit 2."""
    if any(argument in EXITING_FLAGS for argument in arguments):
        return
    if flags := other_trainers_flags(arguments):
        print("\n".join(f"pilot: {line}" for line in flags), file=sys.stderr)
        raise SystemExit(2)
    from hydra._internal.utils import get_args_parser  # the parser Hydra's main reads sys.argv with

    parser = get_args_parser()

    def refuse(message: str) -> None:
        print(
            f"pilot: {message}. Fix: python -m pilot --help lists the flags (--cfg job, --info config, -m); "
            "settings are written key=value, without dashes",
            file=sys.stderr,
        )
        raise SystemExit(2)

    parser.error = refuse  # type: ignore[method-assign]
    parsed = parser.parse_args(arguments)
    for problem in _flag_problems(parsed):  # Hydra's ValueError and traceback, after its start-up
        refuse(problem)
    for problem in _config_flag_problems(parsed) + _sweep_without_m(parsed):  # Hydra's lines, no fix of pilot's
        print(f"pilot: {problem}", file=sys.stderr)
        raise SystemExit(2)


def _config_flag_problems(parsed: Any) -> list[str]:
    """``--config-dir`` naming no directory, ``--config-name`` naming no primary config there or in pilot's."""
    problems = []
    extra = parsed.config_dir
    if extra is not None and not os.path.isdir(extra):
        problems.append(
            f"--config-dir {extra}: no such directory. Fix: a folder of your YAML configs (searched beside pilot's "
            "conf/), or hydra.searchpath=[file://<folder>] for option files of config groups"
        )
    name = parsed.config_name
    if name is not None and extra is None and parsed.config_path is None:
        if not (CONF_DIR / f"{name.removesuffix('.yaml')}.yaml").is_file():
            problems.append(
                f"--config-name {name}: no such primary config in pilot's conf/ (it has one: config). Fix: leave "
                "out --config-name (an experiment is +experiment=<name>), or add --config-dir <your folder> "
                f"holding {name.removesuffix('.yaml')}.yaml"
            )
    return problems


def _sweep_without_m(parsed: Any) -> list[str]:
    """``optim.lr=1e-3,3e-3`` without -m: Hydra's "Ambiguous value" in four lines, naming no key's fix."""
    if parsed.multirun or parsed.cfg or parsed.info is not None or parsed.shell_completion:
        return []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    problems = []
    for argument in parsed.overrides:
        try:
            (override,) = OverridesParser.create().parse_overrides([argument])
        except Exception:  # noqa: BLE001 - a line Hydra cannot parse is said elsewhere (suggest.unreadable_arguments)
            continue
        if override.is_sweep_override() and (variable := environment_variable(override.key_or_group, argument)):
            problems.append(variable)  # CUDA_VISIBLE_DEVICES=0,1 after the command: no sweep, no decimal comma
        elif override.is_sweep_override():
            problems.append(_one_job_meant(parsed.overrides, argument, override))
    return problems


def _one_job_meant(arguments: list[str], argument: str, override: Any) -> str:
    """The readings of ``key=a,b`` the setting can take: a sweep (with -m), a decimal comma, a thousands
    separator, one list, one text; each offered only where the setting's type takes it (seed=0,1 is no
    number 0.1, no list); the sweep alone where the setting takes none of them."""
    key, value = argument.partition("=")[::2]  # +rental.catalog.x.price_per_hour: its '+' kept in the fixes
    each = [*override.sweep_iterator()] if "(" not in value else []  # range(1,4), choice(...): a sweep alone
    readings = {  # in the order said: a thousands separator (10,000) is likelier meant than a sweep
        "thousands": [int(value.replace(",", ""))] if re.fullmatch(r"-?\d{1,3}(,\d{3})+", value) else None,
        "decimal": [float(value.replace(",", "."))] if re.fullmatch(r"-?\d+,\d+(e-?\d+)?", value) else None,
        "sweep": each,
        "list": [each] if each else None,
        "text": [value] if each else None,
    }  # 1,5e-3: a decimal comma, one number meant; 10,000: one integer
    readings = {name: values for name, values in readings.items() if values is not None}
    fit = readings_that_fit(str(CONF_DIR), arguments, key.lstrip("+"), readings) if each else None
    fit = [name for name in readings if name != "thousands"] if fit is None else fit or ["sweep"]
    said = {
        "sweep": f"python -m pilot -m {argument} ... (one job per value)",
        "decimal": f"a decimal comma meant: {key}={value.replace(',', '.')}",
        "thousands": f"one number meant: {key}={value.replace(',', '')}",
        "list": f"{key}=[{value}] for one list value",
        "text": f"{key}='{value}' for one text",
    }
    fixes = "; or ".join(said[name] for name in fit)
    if "sweep" not in fit:  # optim.betas=0.9,0.99: no value of the sweep is a value of the setting
        return f"{argument}: {key} takes none of {value} alone (a sweep, one job per each). Fix: {fixes}"
    if fit[0] != "sweep":  # budget.value=10,000
        return f"{argument}: a comma in a value makes a sweep (one job per value, with -m). Fix: {fixes}"
    return f"{argument}: a sweep over {value} (one job per value) runs with -m. Fix: {fixes}"


def _flag_problems(parsed: Any) -> list[str]:
    """What Hydra refuses of flags argparse read (``-m --cfg job``, ``--resolve`` alone, a rerun file that
    is not there, ``--shell-completion`` without its one subcommand), in its words."""
    commands = [name for name, given in (("--run", parsed.run), ("-m", parsed.multirun), ("--cfg", parsed.cfg),
                ("--info", parsed.info is not None), ("--shell-completion", parsed.shell_completion)) if given]  # fmt: skip
    problems = []
    if len(commands) > 1:
        problems.append(f"{' with '.join(commands)}: Hydra takes one of --run, -m, --cfg, --info, --shell-completion")
    if parsed.resolve and not parsed.cfg:
        problems.append("--resolve: it goes with --cfg (--cfg job --resolve prints the config resolved)")
    if parsed.experimental_rerun is not None and not os.path.isfile(parsed.experimental_rerun):
        problems.append(
            f"--experimental-rerun {parsed.experimental_rerun}: no such file (a run's .hydra/config.pickle)"
        )
    subcommands = [o for o in parsed.overrides if o.partition("=")[0] in ("install", "uninstall", "query")]
    if parsed.shell_completion and len(subcommands) != 1:
        problems.append("--shell-completion: it takes one of install=SHELL, uninstall=SHELL, query=SHELL")
    return problems
