"""What Hydra's override grammar cannot read (``optim.lr=1e-3,``, ``seed=range(0,2``, a pasted '‐'), said
with how to write what the argument probably means."""

from __future__ import annotations

import os
import re
import shlex
import unicodedata

from hydra.core.override_parser.overrides_parser import OverridesParser

from pilot.config.values import override_argument


def unreadable_arguments(parser: OverridesParser, arguments: list[str]) -> list[str]:
    """Each argument Hydra's override grammar cannot read, with how to write what it probably means."""
    lines = []
    for argument in arguments:
        if "=" not in argument:
            continue
        try:
            parser.parse_overrides([argument])
        except Exception:  # noqa: BLE001 - this one is unreadable
            shown = argument.replace("\r", "\\r")  # a carriage return printed would overwrite the line's start
            lines.append(f"{shown}: Hydra's override grammar cannot read it. Fix: {_grammar_fix(argument)}")
    return lines


KEY = r"[+~]{0,2}[A-Za-z_][\w@/-]*(\.[\w@-]+)*"  # optim.lr, +experiment, hydra/launcher, model@x


# what a document or a chat pastes for ASCII: dashes, quotes, spaces (NFKC mends full-width digits and letters)
PASTED = str.maketrans({**dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
                        **dict.fromkeys("\u201c\u201d\u201e", '"'), **dict.fromkeys("\u2018\u2019", "'"),
                        **dict.fromkeys("\u00a0\u202f", " "),
                        **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff", None)})  # fmt: skip  # zero-width: nothing


def _pasted_fix(argument: str) -> str | None:
    """A pasted look-alike of ASCII (U+2010 for '-', a full-width digit), named, with the line typed in ASCII;
    None when there is none (a path's 'é' is meant: quoting it is the fix)."""
    odd = sorted({c for c in argument if ord(c) > 127})
    mended = unicodedata.normalize("NFKC", argument.translate(PASTED))
    if not odd or not mended.isascii():
        return None
    named = ", ".join(f"'{c}' (U+{ord(c):04X} {unicodedata.name(c, 'unnamed')})" for c in odd)
    return f"type it in ASCII: {mended} (it holds {named}, look-alikes of ASCII: pasted from a document?)"


def _character_fix(argument: str) -> str | None:
    """A comment inside the quotes, a carriage return (a script saved with Windows line ends: it ends the last
    argument) or a pasted look-alike of ASCII in ``argument``, said with it typed without; None when none."""
    key, _, value = argument.partition("=")
    if re.search(r"\s#", value):  # 'optim.lr=1e-3 # peak': a comment inside the quotes reaches the program
        return f"drop the comment: {key}={value.split('#', 1)[0].strip()} (inside quotes '#' is no comment)"
    if "\r" in argument:
        return (
            f"drop the carriage return (\\r) at its end: {argument.replace(chr(13), '')} (a script saved with Windows "
            "line ends, CRLF: save it with LF ends, e.g. dos2unix <script>)"
        )
    return _pasted_fix(argument)


def _grammar_fix(argument: str) -> str:
    key, value = argument.split("=", 1)
    quoted = override_argument(key, value)
    if (odd := _character_fix(argument)) is not None:
        return odd
    if not re.fullmatch(KEY, key):  # optim..lr=1e-3, 'optim.lr =1', .optim.lr=1: the key is written wrong
        mended = re.sub(r"[.\s]+", ".", key.strip()).strip(".")
        fix = f"{mended}={value.strip()}" if re.fullmatch(KEY, mended) else "a dotted name such as optim.lr=1e-3"
        return f"the key '{key}' is no setting's name (a doubled or stray '.', a space). {fix}"
    if value.startswith("="):  # optim.lr==1e-3
        return (
            f"one '=' between key and value: {key}={value.lstrip('=')}, or quote a value that starts with '=': {quoted}"
        )
    if re.fullmatch(r"\s*(choice|range|interval|glob)\(\s*\)\s*", value):
        name = value.strip()[:-2].strip()
        return f"give {name}() its values ({key}={name}(a,b) with -m): an empty one sweeps nothing"
    if ",," in value:
        return (
            f"remove the doubled comma ({key}={re.sub(',+', ',', value)}): a comma separates the values of a sweep (-m)"
        )
    if value.endswith(";") and ";" not in value.rstrip(";"):  # 'optim.lr=1e-4;': a statement's end, pasted
        return f"drop the ';' ({key}={value.rstrip(';')}): the shell or a script's line ends the setting"
    if ";" in value and not value.startswith(("'", '"')):
        return (
            f"separate a sweep's values with commas ({key}={value.replace(';', ',')}, with -m), or quote a value "
            f"that holds ';': {quoted}"
        )
    if value.endswith(","):
        return (
            f"drop the trailing comma ({key}={value.rstrip(',')}): a comma separates the values of a sweep "
            f"(-m), or quote a value that holds one: {quoted}"
        )
    if value.startswith("~"):  # the shell expands ~ only at a word's start, never after key=
        home = os.path.expanduser(value.split("/", 1)[0])
        rest = value.split("/", 1)[1] if "/" in value else ""
        written = f"{home}/{rest}" if rest else home
        return (
            f"write the home directory out: {key}={written} (the shell expands '~' only at the start of a word, "
            "not after key=; pilot takes a path as written, so a quoted '~' would name a directory called '~')"
        )
    if re.search(r"\s[+~]?[A-Za-z_][\w.]*=", value):  # 'optim.lr=1e-3 budget.value=2': two settings in one word
        parts = [f"{key}={value.split()[0]}", *value.split()[1:]]
        return f"give each setting its own argument: {' '.join(parts)} (the quotes made them one word)"
    if "=" in value:
        return f"quote a value that holds '=': {quoted} (the outer quotes are for the shell)"
    if listed := _list_fix(key, value):
        return listed
    if value.count("[") != value.count("]") or value.count("{") != value.count("}"):
        return f"close the bracket ({key}=[a,b] is a list), or quote a value that holds one: {quoted}"
    if value.count("(") != value.count(")"):
        call = value if value.count("(") > value.count(")") else value.replace(")", "", 1)
        return f"close the parenthesis: {key}={call}{')' * max(0, call.count('(') - call.count(')'))}"
    for mark in ("'", '"'):
        if value.count(mark) % 2:  # a stray quote: its pair is missing
            return f"drop the stray {mark} ({key}={value.replace(mark, '')}), or close the quote around the whole value"
    return (
        f"quote the value: {quoted} (characters such as spaces, '=', ',', brackets, braces, quotes "
        "or '$' need quotes; the outer quotes are for the shell)"
    )


ITEM = r"'[^']*'|\"[^\"]*\"|[^\s,'\"\[\]]+"  # a list's item: quoted, or a word without spaces


def _list_fix(key: str, value: str) -> str | None:
    """A list written as Python's tuple (``optim.betas=(0.9,0.999)``), with a comma before its closing bracket,
    or without its commas (``['q' 'v']``)."""
    if tuple_ := re.fullmatch(r"\(([^()]*,[^()]*)\)", value.strip()):
        items = "".join(tuple_[1].split()).rstrip(",")
        return f"a list is written in brackets: {_shell_word(f'{key}=[{items}]')}"
    if re.search(r",\s*[\]}]", value):  # [1,2,4,8,]: a trailing comma inside the list
        closed = re.sub(r",(\s*[\]}])", r"\1", value)
        return f"drop the comma before the closing bracket: {_shell_word(f'{key}={closed}')}"
    if items := _items_without_commas(value):
        listed = ",".join(items)
        return f"separate a list's items with commas: {_shell_word(f'{key}=[{listed}]')}"
    return None


def _shell_word(text: str) -> str:
    """``text`` as one shell word: in double quotes (brackets and '*' are the shell's patterns) unless it holds
    what they do not keep."""
    return f'"{text}"' if not re.search(r'["$`\\!]', text) else shlex.quote(text)


def _items_without_commas(value: str) -> list[str] | None:
    """The items of ``[a b]`` or ``['a' 'b']``, a list whose items only spaces separate; None otherwise."""
    inner = re.fullmatch(r"\s*\[(.*)\]\s*", value)
    if inner is None or "," in inner[1]:
        return None
    items = re.findall(ITEM, inner[1])
    rest = re.sub(ITEM, "", inner[1])
    return items if len(items) > 1 and not rest.strip() else None


def _open_brackets(text: str) -> int:
    return text.count("[") + text.count("{") - text.count("]") - text.count("}")


def split_lists(arguments: list[str]) -> tuple[list[str], set[int]]:
    """``rental.counts=[1, 2]`` unquoted: the shell made it ``rental.counts=[1,`` and ``2]`` (Hydra's lexer
    lines, then 'no = in 2]'). Each such setting said whole, without the spaces; the arguments it took."""
    lines, taken = [], set()
    for at, argument in enumerate(arguments):
        if at in taken or "=" not in argument or _open_brackets(argument.partition("=")[2]) <= 0:
            continue
        end, opened = at, _open_brackets(argument.partition("=")[2])
        while opened > 0 and end + 1 < len(arguments) and "=" not in arguments[end + 1].split("[")[0].split("{")[0]:
            end += 1
            opened += _open_brackets(arguments[end])
        if end > at and opened == 0:
            taken |= set(range(at, end + 1))
            typed = " ".join(arguments[at : end + 1])
            lines.append(
                f"{typed}: the shell split the value at its spaces. Fix: {_shell_word(''.join(arguments[at : end + 1]))}"
            )
    return lines, taken


def valueless_keys(arguments: list[str]) -> list[str]:
    """``optim.lr 1e-3``: a dotted key given without '=' (not a flag's value), with the value after it; a list
    the shell split at its spaces (``split_lists``)."""
    lines, taken = split_lists(arguments)
    arguments = [a if at not in taken else "x=x" for at, a in enumerate(arguments)]  # said: not words of their own
    for at, argument in enumerate(arguments):
        flag_value = at > 0 and arguments[at - 1].startswith("-")
        if "=" in argument or flag_value or not re.fullmatch(r"\+?[A-Za-z_]\w*(\.\w+)+", argument):
            continue
        value = arguments[at + 1] if at + 1 < len(arguments) and "=" not in arguments[at + 1] else "<value>"
        lines.append(f"{argument}: a setting without a value. Fix: {argument}={value} (no space around '=')")
    for at, argument in enumerate(arguments):
        if "=" not in argument and (colon := re.fullmatch(r"([+~]?[A-Za-z_][\w.]*):(.+)", argument)):
            key, value = colon.groups()  # optim.lr:1e-3 (YAML's colon for Hydra's '=')
            lines.append(f"{argument}: a setting is written key=value. Fix: {key}={value.strip()}")
        elif _bare_word(arguments, at) and (pasted := _pasted_fix(argument)) is not None:  # '–m', an en dash
            lines.append(f"{argument}: not a flag or a setting. Fix: {pasted}")
        elif _bare_word(arguments, at):
            before = arguments[at - 1] if at > 0 else ""
            lines.append(
                f"{argument}: no '=' in it, and a setting is key=value"
                + (
                    f"; the rest of {before} after a space the shell split it at? Fix: quote the setting: "
                    f"'{before} {argument}'"
                    if "=" in before and not before.startswith("-") and ("/" in argument or "." in argument)
                    else ". Fix: key=value (python -m pilot --cfg job lists the keys)"
                )
            )
    return lines


def _bare_word(arguments: list[str], at: int) -> bool:
    """A word with no '=' that is neither a flag, a flag's value, a deletion (``~optim``), a dotted key (said
    by ``valueless_keys``) nor a key with a colon."""
    argument, before = arguments[at], arguments[at - 1] if at > 0 else ""
    flag_value = before.startswith("-") and "=" not in before
    valueless = "=" not in before and re.fullmatch(r"[+~]?[A-Za-z_]\w*(\.\w+)+", before)  # its value: said with it
    return not (
        "=" in argument
        or flag_value
        or valueless
        or argument.startswith(("-", "~"))
        or ":" in argument
        or re.fullmatch(r"[+~]?[A-Za-z_]\w*(\.\w+)+", argument)
    )
