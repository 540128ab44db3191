"""The targets the reload never instantiates, whatever the reference or ``--allow-target`` say: callables
that run code, load pickles, touch files or reach the network, by name and by what they resolve to."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any

# Never instantiated from an exported config, even when allowed: they run code, load pickles,
# write or delete files, or reach the network. A name matches itself and everything under it;
# the object a target resolves to is checked too (``os.system`` is ``posix.system``).
CODE_RUNNING = (
    "builtins",
    "os",
    "posix",
    "nt",
    "posixpath",
    "ntpath",
    "subprocess",
    "_posixsubprocess",
    "pty",
    "sys",
    "importlib",
    "pkgutil",
    "zipimport",
    "runpy",
    "code",
    "codeop",
    "inspect",
    "types",
    "gc",
    "functools",
    "operator",
    "threading",
    "_thread",
    "multiprocessing",
    "asyncio",
    "signal",
    "ctypes",
    "_ctypes",
    "pickle",
    "_pickle",
    "copyreg",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "joblib",
    "shutil",
    "pathlib",
    "io",
    "_io",
    "tempfile",
    "zipfile",
    "tarfile",
    "sqlite3",
    "socket",
    "urllib",
    "http",
    "webbrowser",
    "pdb",
    "bdb",
    "timeit",
    "trace",
    "cProfile",
    "profile",
    "site",
    "yaml",
    "hydra",
    "omegaconf",
    "numpy.load",
    "numpy.save",
    "numpy.savez",
    "numpy.savetxt",
    "numpy.lib.npyio",
    "numpy.ctypeslib",
    "pandas.read_pickle",
    "torch.load",
    "torch.save",
    "torch.serialization",
    "torch.hub",
    "torch.jit",
    "torch.package",
    "torch.utils.cpp_extension",
    "torch.ops",
    "torch.classes",
    "torch.library",
    "torch._C",
    "torch.multiprocessing",
    "torch.distributed",
    "safetensors.torch.save_file",
    "pilot.closing",
    "pilot.checkpoint",
    "pilot.faults",  # fault injection: can kill the process
    "pilot.pickle_scan",
)


def blocked_under(name: str) -> str | None:
    """The entry of CODE_RUNNING that ``name`` is, or lies under."""
    return next((blocked for blocked in CODE_RUNNING if name == blocked or name.startswith(blocked + ".")), None)


def code_running(target: str) -> str | None:
    """Why a ``_target_`` string is refused by name alone: a blocked name, or a dunder or
    malformed part (``x.__globals__``, ``a..b``) that could reach one."""
    if any(not part.isidentifier() or part.startswith("__") for part in target.split(".")):
        return f"'{target}' (a private or malformed name)"
    return blocked_under(target)


def _home(obj: Any) -> str:
    """The dotted name an object lives under (``os.system`` -> ``posix.system``; a ``functools.partial``:
    what it calls, the only code calling it runs — its arguments come from the module, not the config)."""
    if isinstance(obj, functools.partial):
        return _home(obj.func)
    if isinstance(obj, ModuleType):
        return obj.__name__
    owner = getattr(obj, "__self__", None)
    if getattr(obj, "__module__", None) is None and owner is not None and not isinstance(owner, ModuleType):
        return _home(type(owner))
    return f"{getattr(obj, '__module__', None) or 'builtins'}.{getattr(obj, '__qualname__', '')}".rstrip(".")


def resolves_to_code(target: str) -> str | None:
    """Import ``target`` the way Hydra's ``_locate`` does, checking every object on the way;
    called only for targets already allowed."""
    parts = target.split(".")
    obj: Any = importlib.import_module(parts[0])
    homes = [_home(obj)]
    for index in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[index])
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: index + 1]))
        homes.append(_home(obj))
    return next((blocked for home in homes if (blocked := blocked_under(home))), None)
