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
- ``environment``: every variable your code read during it (``os.environ``, ``os.getenv``; not those
  a library reads for itself), with its value as first read (None: unset), unless the process set it
  before reading it;
- and, since ``record_imports`` (``mode=estimate`` and its workers, before your code is imported), the
  files and variables your modules read at their top level while imported (an estimate computed after
  the import would not see those reads).
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
import sysconfig
from importlib import metadata
from pathlib import Path
from typing import Any

from pilot.user_code import installed_file, is_user_file, module_file

NOT_FILES = ("/proc/", "/sys/", "/dev/")
STANDARD_LIBRARY = Path(sysconfig.get_paths()["stdlib"]).resolve()
HASHED_BYTES = 1 << 24  # a file up to this size is read whole; a larger one by size and time

_recording: Reads | None = None  # the estimate being computed
_imports: Reads | None = None  # since ``record_imports``: what your modules read while being imported
_instrumented = False


def _instrument() -> None:
    """Once per process: the ``open`` audit hook and ``os.environ``'s reads and writes pass through
    ``_note`` (nothing is recorded while no recorder runs)."""
    global _instrumented
    if _instrumented:
        return
    _instrumented = True
    sys.addaudithook(lambda event, args: _note_open(args) if event == "open" else None)
    environ = os._Environ  # noqa: SLF001 - the class behind os.environ and os.getenv
    getitem, setitem, delitem = environ.__getitem__, environ.__setitem__, environ.__delitem__

    def read(self: Any, key: str) -> str:
        try:
            value = getitem(self, key)
        except KeyError:
            _note_environment(key, None)
            raise
        _note_environment(key, value)
        return value

    def write(self: Any, key: str, value: str) -> None:
        _note_set(key)
        setitem(self, key, value)

    def delete(self: Any, key: str) -> None:
        _note_set(key)
        delitem(self, key)

    environ.__getitem__, environ.__setitem__, environ.__delitem__ = read, write, delete


def _recorders(frame: Any, direct: bool = False) -> list[Reads]:
    """The recorders a read from ``frame`` goes to: the estimate's when your code is on the stack (with
    ``direct``, when it is the first code outside the standard library: your ``os.environ.get``, not the
    hundreds of variables torch reads when your model first calls it), the imports' when your module's
    top level is (a module-level ``os.environ["WIDTH"]``)."""
    if _recording is None and _imports is None:
        return []
    yours = importing = False
    while frame is not None and not importing:
        filename = frame.f_code.co_filename
        if _users_code_file(filename):
            yours = True
            importing = frame.f_code.co_name == "<module>"
        elif direct and not _standard_library_file(filename):
            break  # a library read it for itself
        frame = frame.f_back
    return [r for r, wanted in ((_recording, yours), (_imports, importing)) if r is not None and wanted]


def _note_open(args: tuple) -> None:
    for recorder in _recorders(sys._getframe(2)):  # noqa: SLF001 - who called open
        recorder.opened(*args[:3])


def _note_environment(key: str, value: str | None) -> None:
    for recorder in _recorders(sys._getframe(2), direct=True):  # noqa: SLF001 - who read it
        recorder.saw(key, value)


def _note_set(key: str) -> None:
    for recorder in (_recording, _imports):
        if recorder is not None and key not in recorder.environment:  # set before it was read: its own value
            recorder.set_here.add(key)


@functools.cache
def _users_code_file(filename: str) -> bool:
    return not filename.startswith("<") and is_user_file(Path(filename).resolve())


@functools.cache
def _standard_library_file(filename: str) -> bool:
    return filename.startswith("<frozen") or Path(filename).resolve().is_relative_to(STANDARD_LIBRARY)


def record_imports() -> None:
    """From now on in this process, record what your modules read while they are imported (a
    module-level environment variable or config file), for every estimate this process stores: an
    estimate computed after the import would not see it. ``mode=estimate`` and its workers call it
    before anything imports your code."""
    global _imports
    _instrument()
    if _imports is None:
        _imports = Reads()


class Reads:
    """What your code read: use as a context manager around an estimate, ``dependencies()`` afterwards
    (with what your modules read while imported, since ``record_imports``)."""

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

    def saw(self, key: str, value: str | None) -> None:
        if isinstance(key, str) and key not in self.environment and key not in self.set_here:
            self.environment[key] = value

    def __enter__(self) -> Reads:
        global _recording
        _instrument()
        _recording = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _recording
        _recording = None

    def dependencies(self) -> dict[str, Any]:
        parts = [self, *([_imports] if _imports is not None else [])]
        read = set().union(*(part.read for part in parts)) - set().union(*(part.written for part in parts))
        environment = {key: value for part in reversed(parts) for key, value in part.environment.items()}
        return {
            "modules": _module_hashes(),
            "files": {path: content_fingerprint(Path(path)) for path in sorted(read) if _a_users_file(path)},
            # as first read; a variable this process set before reading it is its own state, not an input
            "environment": dict(sorted(environment.items())),
            "packages": _loaded_packages(),
        }


def _a_users_file(path: str) -> bool:
    return not path.startswith(NOT_FILES) and os.path.isfile(path) and is_user_file(Path(path).resolve())


def content_fingerprint(path: Path) -> str:
    """sha256 of the file's bytes up to HASHED_BYTES; a larger one by size and modification time."""
    try:
        stat = path.stat()
        if stat.st_size <= HASHED_BYTES:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        return f"{stat.st_size} bytes, modified {stat.st_mtime_ns}"
    except OSError:
        return "<unreadable>"


def _module_hashes() -> dict[str, str]:
    paths = {path for module in list(sys.modules.values()) if (path := module_file(module)) is not None}
    return {str(path): content_fingerprint(path) for path in sorted(paths)}


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
    for kind in ("modules", "files"):
        for path, fingerprint in (recorded.get(kind) or {}).items():
            if content_fingerprint(Path(path)) != fingerprint:
                return f"{path} changed"
    for name, value in (recorded.get("environment") or {}).items():
        if os.environ.get(name) != value:
            return f"the environment variable {name} changed"
    for name, version in (recorded.get("packages") or {}).items():
        if _version(name) != version:
            return f"the package {name} is now {_version(name)}, not {version}"
    return None
