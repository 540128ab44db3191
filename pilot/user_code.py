"""Which Python files are your own code: not pilot's, not the standard library's, not an installed
package's (their versions say what ran). ``reached_modules``: the modules of your code a set of
modules uses — a model class imported from another package of yours, a helper module — found by
following each module's names to the modules that define them."""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import site
import sys
import sysconfig
import types
from collections.abc import Iterable
from pathlib import Path

PILOT_DIR = Path(__file__).resolve().parent
PILOT_DIRS = (PILOT_DIR, PILOT_DIR.parent / "hydra_plugins" / "pilot_sweeper")  # pilot's code, its sweeper too


@functools.cache
def _installed_roots() -> frozenset[Path]:
    """The standard library's and installed packages' folders (site-packages, dist-packages; a venv's and
    the ones it sees), not the whole prefix: a project in the folder of its own venv is your code."""
    paths = sysconfig.get_paths()
    roots = [paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    roots += [entry for entry in sys.path if Path(entry).name in ("site-packages", "dist-packages")]
    with contextlib.suppress(AttributeError):  # a virtualenv's old site module has none
        roots += [*site.getsitepackages(), site.getusersitepackages()]
    return frozenset(Path(root).resolve() for root in roots if root)


def installed_file(path: Path) -> bool:
    """``path`` lies in the standard library or an installed package's folder."""
    path = Path(path).resolve()
    return any(root == path or root in path.parents for root in _installed_roots())


def is_user_file(path: Path) -> bool:
    """``path`` (resolved) is a file of your own code: outside pilot, the standard library and every
    installed package's folder."""
    return not (any(path == own or own in path.parents for own in PILOT_DIRS) or installed_file(path))


def own_top_level(name: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of the top-level module or package of ``name`` (``pkg.models.Net``: ``pkg``) when it is code
    of yours, a namespace package's folders too; None when it is not, or is not found. Nothing is imported."""
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    places = [spec.origin] if spec.origin and spec.has_location else list(spec.submodule_search_locations or [])
    return spec if any(is_user_file(Path(place).resolve()) for place in places) else None


def file_of(module: object) -> str | None:
    """The module's ``__file__``, None when it has none (or is an object whose attributes run code)."""
    try:
        file = getattr(module, "__file__", None)
    except Exception:  # noqa: BLE001 - an object in sys.modules whose attributes run code
        return None
    return file if isinstance(file, str) else None


def module_file(module: types.ModuleType) -> Path | None:
    """The module's ``.py`` file, resolved, when it is one of your own; else None."""
    file = file_of(module)
    if file is None or not file.endswith(".py"):
        return None
    path = Path(file).resolve()
    return path if is_user_file(path) and path.is_file() else None


def reached_modules(names: list[str]) -> list[str]:
    """Your own modules that the modules ``names`` (already imported) use, theirs included: each module's
    global names followed to the module that defines them (``from other.layers import Block``:
    ``other.layers``; ``import other.data as d``: ``other.data``), and on through those, never into
    pilot or an installed package. The same in every process that imported them."""
    found: list[str] = []
    queue = [sys.modules[name] for name in names if name in sys.modules]
    seen: set[str] = set()
    while queue:
        module = queue.pop()
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        if module_file(module) is None:
            continue
        found.append(module.__name__)
        for value in list(vars(module).values()):
            used = value if isinstance(value, types.ModuleType) else sys.modules.get(_defined_in(value) or "")
            if used is not None and used.__name__ not in seen:
                queue.append(used)
    return sorted(found)


def _defined_in(value: object) -> str | None:
    try:
        name = getattr(value, "__module__", None)
    except Exception:  # a lazy object whose attributes run code
        return None
    return name if isinstance(name, str) else None


def target_files(targets: Iterable[str]) -> list[Path]:
    """The ``.py`` file of each of your modules that ``targets`` (``_target_`` paths: ``my_task.make_task``,
    ``pkg.models.Net.build``) name, found without importing them; pilot's and installed packages' are not yours."""
    files: set[Path] = set()
    for target in targets:
        if own_top_level(target) is None:
            continue
        parts = target.split(".")
        for end in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
            try:
                spec = importlib.util.find_spec(".".join(parts[:end]))
            except (ImportError, ValueError, AttributeError):
                continue
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                path = Path(spec.origin).resolve()
                if is_user_file(path) and path.is_file():
                    files.add(path)
                break
    return sorted(files)


def code_fingerprint(targets: Iterable[str]) -> dict[str, str]:
    """{file: sha256} of the files of your modules ``targets`` name (``target_files``): a resume compares them."""
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in target_files(targets)}


def imported_packages(path: Path, own: str) -> list[str]:
    """The top-level packages a module's source imports, at any depth of its code (imports inside
    functions too: transformers' in pilot's model builder), not the standard library's nor its own."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    tops = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return sorted(t for t in tops if t != own and t not in sys.stdlib_module_names and t != "__future__")
