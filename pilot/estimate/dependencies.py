"""What an estimate read besides its config: recorded while it is computed, checked before a stored
one is used (``estimate.stored``).

The store's key names what an estimate is computed from before it runs (config, batches, the code the
config's targets name). Code can read more: a module of yours imported inside a function, a namespace
package, a ``presets/sizes.json`` opened by path, an environment variable, an installed package of
yours. ``Reads`` records, while the estimate is computed in this process:

- ``modules``: every module of your own code loaded in the process by its end (``user_code``), by
  content (sha256);
- ``files``: every file opened for reading during it on behalf of your code (Python's ``open`` audit
  event, your code on the stack: your model's ``json.load``, a ``torch.load`` it calls) outside pilot,
  the standard library, installed packages and ``/proc``, ``/sys``, ``/dev``, and not written during
  it, by content (large files by size and time);
- ``environment``: every variable read during it on behalf of your code (``os.environ``,
  ``os.getenv``) and not set during it, with its value (None: unset);
- ``packages``: the version of every installed distribution a loaded module belongs to.

``changed`` tells, for a stored estimate's record, the first of them that is no longer so (None: all
hold). What this does not see: a file read by C code (not through Python's ``open``), an installed
package rebuilt under the same version.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from pilot.user_code import installed_file, is_user_file, module_file

NOT_FILES = ("/proc/", "/sys/", "/dev/")
HASHED_BYTES = 1 << 24  # a file up to this size is read whole; a larger one by size and time

_recording: Reads | None = None
_hooked = False


def _audit(event: str, args: tuple) -> None:
    if _recording is not None and event == "open" and _for_your_code(sys._getframe(1)):  # noqa: SLF001
        _recording.opened(*args[:3])


def _for_your_code(frame: Any) -> bool:
    """Whether your code is on the stack: a read on its behalf (``torch.load`` of your file, called by
    your model), not one pilot or a library makes for itself."""
    while frame is not None:
        if _users_code_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


@functools.cache
def _users_code_file(filename: str) -> bool:
    return not filename.startswith("<") and is_user_file(Path(filename).resolve())


class Reads:
    """Use as a context manager around an estimate; ``dependencies()`` afterwards."""

    def __init__(self) -> None:
        self.read: set[str] = set()
        self.written: set[str] = set()
        self.environment: dict[str, str | None] = {}
        self.set_here: set[str] = set()

    def opened(self, path: Any, mode: Any, flags: Any) -> None:
        if not isinstance(path, (str, bytes, os.PathLike)) or isinstance(path, int):
            return
        path = os.fsdecode(path)
        if isinstance(mode, str):
            writes = any(c in mode for c in "wax+")
        else:
            writes = isinstance(flags, int) and flags & os.O_ACCMODE != os.O_RDONLY
        (self.written if writes else self.read).add(os.path.abspath(path))

    def __enter__(self) -> Reads:
        global _recording, _hooked
        if not _hooked:
            sys.addaudithook(_audit)  # for the process's life: it does nothing while no estimate records
            _hooked = True
        self._getitem, self._setitem, self._delitem = (
            os._Environ.__getitem__,  # noqa: SLF001 - the class behind os.environ and os.getenv
            os._Environ.__setitem__,  # noqa: SLF001
            os._Environ.__delitem__,  # noqa: SLF001
        )
        reads, getitem, setitem, delitem = self, self._getitem, self._setitem, self._delitem

        def read(environ: Any, key: str) -> str:
            try:
                value = getitem(environ, key)
            except KeyError:
                reads._saw(key, None)
                raise
            reads._saw(key, value)
            return value

        def write(environ: Any, key: str, value: str) -> None:
            reads.set_here.add(key)
            setitem(environ, key, value)

        def delete(environ: Any, key: str) -> None:
            reads.set_here.add(key)
            delitem(environ, key)

        os._Environ.__getitem__, os._Environ.__setitem__, os._Environ.__delitem__ = read, write, delete  # noqa: SLF001
        _recording = self
        return self

    def _saw(self, key: str, value: str | None) -> None:
        if isinstance(key, str) and key not in self.environment and _for_your_code(sys._getframe(2)):  # noqa: SLF001
            self.environment[key] = value

    def __exit__(self, *exc: object) -> None:
        global _recording
        _recording = None
        os._Environ.__getitem__, os._Environ.__setitem__, os._Environ.__delitem__ = (  # noqa: SLF001
            self._getitem,
            self._setitem,
            self._delitem,
        )

    def dependencies(self) -> dict[str, Any]:
        files = sorted(path for path in self.read - self.written if _a_users_file(path))
        return {
            "modules": _module_hashes(),
            "files": {path: _fingerprint(Path(path)) for path in files},
            # a variable set while it ran is its own state, not an input
            "environment": {key: value for key, value in sorted(self.environment.items()) if key not in self.set_here},
            "packages": _loaded_packages(),
        }


def _a_users_file(path: str) -> bool:
    return not path.startswith(NOT_FILES) and os.path.isfile(path) and is_user_file(Path(path).resolve())


def _fingerprint(path: Path) -> str:
    try:
        stat = path.stat()
        if stat.st_size <= HASHED_BYTES:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        return f"{stat.st_size} bytes, modified {stat.st_mtime_ns}"
    except OSError:
        return "<unreadable>"


def _module_hashes() -> dict[str, str]:
    paths = {path for module in list(sys.modules.values()) if (path := module_file(module)) is not None}
    return {str(path): _fingerprint(path) for path in sorted(paths)}


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _loaded_packages() -> dict[str, str | None]:
    tops = {
        name.partition(".")[0]
        for name, module in list(sys.modules.items())
        if isinstance(getattr(module, "__file__", None), str) and installed_file(Path(module.__file__))
    }
    names = {dist for top in tops for dist in _distributions().get(top, [])}
    return {name: _version(name) for name in sorted(names)}


@functools.cache  # a process sees one install: six stored estimates of the 7B, 20 packages each
def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def changed(recorded: dict[str, Any]) -> str | None:
    """The first thing ``recorded`` (``Reads.dependencies``) holds that is not so now, in words; None
    when every one holds (an older record without it: nothing is known to hold, "no record")."""
    if not isinstance(recorded, dict):
        return "no record of what it read"
    for kind, now in (("modules", _fingerprint), ("files", _fingerprint)):
        for path, fingerprint in (recorded.get(kind) or {}).items():
            if now(Path(path)) != fingerprint:
                return f"{path} changed"
    for name, value in (recorded.get("environment") or {}).items():
        if os.environ.get(name) != value:
            return f"the environment variable {name} changed"
    for name, version in (recorded.get("packages") or {}).items():
        if _version(name) != version:
            return f"the package {name} is now {_version(name)}, not {version}"
    return None
