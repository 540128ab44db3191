"""Why torch refused a file: its pickles disassembled with ``pickletools``, nothing in them run.

A *complete* pickle that names code or builds objects of classes named in the file
(GLOBAL/STACK_GLOBAL of a global ``weights_only`` does not allow; INST, OBJ, EXT1/2/4 always)
could run code when unpickled: ``code_in_file`` lists those opcodes. A pickle that breaks off
(truncated, overwritten, garbage) cannot run: it lists nothing, and the file is merely corrupt.
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from pathlib import Path
from typing import IO, Any

from torch import _weights_only_unpickler as weights_only

STRING_OPCODES = frozenset(
    {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
)
GET_OPCODES = ("GET", "BINGET", "LONG_BINGET")
PUT_OPCODES = ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE")
GLOBAL_OPCODES = ("GLOBAL", "INST", "STACK_GLOBAL")
OBJECT_OPCODES = ("OBJ", "EXT1", "EXT2", "EXT4")  # build objects of classes named in the file
CALL_OPCODES = ("REDUCE", "NEWOBJ", "NEWOBJ_EX", "BUILD")  # call, or fill, what a refused global gave


def allowed_globals() -> set[str]:
    """The globals torch's ``weights_only`` unpickler accepts: its own and those the user allowed."""
    return set(weights_only._get_allowed_globals()) | set(weights_only._get_user_allowed_globals())


class _OnePickle:
    """The code-capable opcodes of one pickle, read opcode by opcode."""

    def __init__(self, allowed: set[str]):
        self.allowed = allowed
        self.found: list[str] = []
        self.strings: list[str | None] = []  # the strings pushed, for STACK_GLOBAL's module and name
        self.memo: dict[Any, str | None] = {}
        self.pushed: str | None = None  # the string the previous opcode pushed, if any

    def read(self, name: str, arg: Any) -> None:
        self._track_strings(name, arg)
        if name in GLOBAL_OPCODES:
            named = (
                ".".join(s or "?" for s in self.strings[-2:]) if name == "STACK_GLOBAL" else str(arg).replace(" ", ".")
            )
            if name == "INST" or named not in self.allowed:
                self.found.append(f"{name} {named}")
        elif name in OBJECT_OPCODES:
            self.found.append(name)
        elif name in CALL_OPCODES and self.found and name not in self.found:
            self.found.append(name)

    def _track_strings(self, name: str, arg: Any) -> None:
        """The string each opcode pushes, through the memo, so STACK_GLOBAL's names are known."""
        pushed_before, self.pushed = self.pushed, None
        if name in STRING_OPCODES:
            self.pushed = str(arg)
        elif name in GET_OPCODES:
            self.pushed = self.memo.get(arg)
        elif name in PUT_OPCODES:
            self.memo[len(self.memo) if name == "MEMOIZE" else arg] = self.pushed = pushed_before
        if self.pushed is not None and name not in PUT_OPCODES:
            self.strings.append(self.pushed)


def code_in_stream(stream: IO[bytes], allowed: set[str]) -> list[str]:
    """Code-capable opcodes of the complete pickles in ``stream``; a broken one ends the scan."""
    found: list[str] = []
    while stream.read(1):  # successive pickles (torch's legacy format writes several)
        stream.seek(-1, io.SEEK_CUR)
        scan = _OnePickle(allowed)
        try:
            for opcode, arg, _ in pickletools.genops(stream):  # one pickle, up to its STOP
                scan.read(opcode.name, arg)
        except Exception:  # truncated or garbage (mostly ValueError): it cannot run, it is corrupt
            return found
        found += scan.found
    return found


def code_in_file(path: Path) -> list[str]:
    """Code-capable opcodes of a file's pickles (``data.pkl`` inside torch's zip, or the raw
    file's successive pickles); empty when there are none or the file is unreadable."""
    allowed = allowed_globals()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                found = []
                for member in archive.namelist():
                    if member.endswith(".pkl"):
                        with archive.open(member) as stream:
                            found += code_in_stream(stream, allowed)
        else:
            with open(path, "rb") as handle:
                found = code_in_stream(handle, allowed)
    except (OSError, zipfile.BadZipFile, EOFError):
        found = []  # unreadable as well: corrupt
    return found
