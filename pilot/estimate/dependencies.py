"""What an estimate read besides its config: recorded while it is computed, checked before a stored
one is used (``estimate.stored``).

The store's key names what an estimate is computed from before it runs (config, batches, the code the
config's targets name). Code can read more: a module of yours imported inside a function, a namespace
package, a ``presets/sizes.json`` opened by path, an environment variable, an installed package of
yours. ``Reads`` records, while the estimate is computed in this process:

- ``modules``: every module of your own code loaded in the process by its end (``user_code``), by
  name: where that name is found now, and its content (sha256);
- ``files``: every file opened for reading during it on behalf of your code (Python's ``open`` audit
  event, your code on the stack: your model's ``json.load``, a ``torch.load`` it calls) outside pilot,
  the standard library, installed packages and ``/proc``, ``/sys``, ``/dev``, and not written during
  it, by content (large files, and every file past ``MANY_FILES``, by size and time); a relative path
  stays relative: it is checked in the directory the next command runs in;
- ``environment``: every variable your code read during it (``os.environ``, ``os.getenv``; not those
  a library reads for itself, not ``os.environ.copy()``), with its value as first read (None: unset),
  unless your code set it (``os.environ.setdefault`` at a module's top level: its own state);
- since ``record_imports`` (``mode=estimate`` and its workers, before your code is imported), the
  files and variables your modules read at their top level while imported, and the variables your
  task read while built (``building``; its files are its data, whose batches are in the key);
- ``packages``: the version of every installed distribution a loaded module belongs to.

``changed`` tells, for a stored estimate's record, the first of them that is no longer so (None: all
hold). What this does not see: a file read by C code (not through Python's ``open``), a file only
tested for (``os.path.exists``, ``glob``), a variable found by listing ``os.environ``, one a library
reads for itself, an installed package rebuilt under the same version.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from pilot.user_code import file_of, installed_file, is_user_file, module_file

NOT_FILES = ("/proc/", "/sys/", "/dev/")
STANDARD_LIBRARY = Path(sysconfig.get_paths()["stdlib"]).resolve()
HASHED_BYTES = 1 << 24  # a file up to this size is read whole; a larger one by size and time
MANY_FILES = 256  # more files read than this (a task's examples): each by size and time

_recording: Reads | None = None  # the estimate being computed
_imports: Reads | None = None  # since ``record_imports``: what your modules read while being imported
_instrumented = False
_building = False  # a task being built (``building``)


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
    hundreds of variables torch reads when your model first calls it; never ``os.environ.copy()``, which
    reads every variable of the shell), the imports' when your module's top level is (a module-level
    ``os.environ["WIDTH"]``) or, for a variable, while your task is built (``building``)."""
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
        elif direct and frame.f_code.co_name == "copy" and filename.endswith(("os.py", "<frozen os>")):
            return []  # the whole environment copied (to pass on to a process): no one variable read
        frame = frame.f_back
    importing = importing or (_building and direct and yours)
    return [r for r, wanted in ((_recording, yours), (_imports, importing)) if r is not None and wanted]


def _note_open(args: tuple) -> None:
    for recorder in _recorders(sys._getframe(2)):  # noqa: SLF001 - who called open
        recorder.opened(*args[:3])


def _note_environment(key: str, value: str | None) -> None:
    for recorder in _recorders(sys._getframe(2), direct=True):  # noqa: SLF001 - who read it
        recorder.saw(key, value)


def _note_set(key: str) -> None:
    """A variable your code sets (``os.environ.setdefault("TOKENIZERS_PARALLELISM", ...)`` at a module's
    top level) is its own state, read or not before: not an input."""
    for recorder in _recorders(sys._getframe(2), direct=True):  # noqa: SLF001 - who set it
        recorder.set_here.add(key)


@contextlib.contextmanager
def building() -> Iterator[None]:
    """While your task is built (``make_task``): the variables your code reads count for every estimate
    (a variable that sets how its ``forward`` runs); its files are its data, whose batches are keyed."""
    global _building
    before, _building = _building, True
    try:
        yield
    finally:
        _building = before


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
        path = os.path.normpath(os.fsdecode(path))  # a relative path stays relative: checked where the run is
        if isinstance(mode, str):
            writes = any(c in mode for c in "wax+")
        else:
            writes = isinstance(flags, int) and flags & os.O_ACCMODE != os.O_RDONLY
        (self.written if writes else self.read).add(path)

    def saw(self, key: Any, value: Any) -> None:
        key, value = (
            (os.fsdecode(key), None if value is None else os.fsdecode(value))
            if isinstance(key, bytes)
            else (key, value)
        )
        if isinstance(key, str) and key not in self.environment:
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
        files = sorted(path for path in read if _a_users_file(path))
        fingerprint = content_fingerprint if len(files) <= MANY_FILES else stat_fingerprint
        environment = {key: value for part in reversed(parts) for key, value in part.environment.items()}
        set_here = set().union(*(part.set_here for part in parts))
        return {
            "modules": _modules(),
            "files": {path: fingerprint(Path(path)) for path in files},
            # as first read; a variable your code set is its own state, not an input
            "environment": {key: value for key, value in sorted(environment.items()) if key not in set_here},
            "packages": _loaded_packages(),
        }


def _a_users_file(path: str) -> bool:
    return not path.startswith(NOT_FILES) and os.path.isfile(path) and is_user_file(Path(path).resolve())


def content_fingerprint(path: Path) -> str:
    """sha256 of the file's bytes up to HASHED_BYTES; a larger one by size and modification time."""
    try:
        if path.stat().st_size <= HASHED_BYTES:
            return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "<unreadable>"
    return stat_fingerprint(path)


def stat_fingerprint(path: Path) -> str:
    """Size and modification time (what ``make`` reads): thousands of a task's files in milliseconds."""
    try:
        stat = path.stat()
    except OSError:
        return "<unreadable>"
    return f"{stat.st_size} bytes, modified {stat.st_mtime_ns}"


def _same(path: Path, fingerprint: str) -> bool:
    now = stat_fingerprint(path) if " bytes, modified " in fingerprint else content_fingerprint(path)
    return now == fingerprint


def _modules() -> dict[str, list[str]]:
    """Each module of yours loaded: name -> [its file, content_fingerprint] (where the name is found
    matters too: a helper found in the working directory is another one elsewhere)."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("__") and (path := module_file(module)) is not None:
            found[name] = [str(path), content_fingerprint(path)]
    return dict(sorted(found.items()))


def _found_at(name: str, recorded: str) -> str:
    """Where ``name`` is imported from now (``recorded`` when that cannot be told)."""
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # noqa: BLE001 - a parent package that fails to import, a name no longer valid
        return recorded
    if spec is None or not spec.origin or not spec.has_location:
        return "<not found>" if spec is None else recorded
    return str(Path(spec.origin).resolve())


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _loaded_packages() -> dict[str, str | None]:
    tops = {
        name.partition(".")[0]
        for name, module in list(sys.modules.items())
        if (file := file_of(module)) is not None and installed_file(Path(file))
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
    for name, (file, fingerprint) in (recorded.get("modules") or {}).items():
        if (now := _found_at(name, file)) != file:
            return f"the module {name} is now found at {now}, not {file}"
        if not _same(Path(file), fingerprint):
            return f"{file} changed"
    for path, fingerprint in (recorded.get("files") or {}).items():
        if not _same(Path(path), fingerprint):
            return f"{path} changed"
    for name, value in (recorded.get("environment") or {}).items():
        if os.environ.get(name) != value:
            return f"the environment variable {name} changed"
    for name, version in (recorded.get("packages") or {}).items():
        if _version(name) != version:
            return f"the package {name} is now {_version(name)}, not {version}"
    return None
