"""The tree stays easy to walk (STYLE.md rules 10-11, ARCHITECTURE.md): no module over 400 lines,
no function over 60, and no pilot import inside a function (the usual way to hide an import
circle). The import layers themselves are checked by ``lint-imports`` in ``.ci/run``."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pilot"
MODULE_LINES = 400
FUNCTION_LINES = 60


def oversized(source: str, name: str) -> list[str]:
    """Each module over MODULE_LINES and each function over FUNCTION_LINES lines, as a sentence."""
    found = []
    lines = source.count("\n")
    if lines > MODULE_LINES:
        found.append(f"{name}: {lines} lines (limit {MODULE_LINES}): split it by concern")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name}() is {length} lines (limit {FUNCTION_LINES})")
    return found


def imports_inside_functions(source: str, name: str) -> list[str]:
    """Each ``import pilot...`` / ``from pilot... import`` written inside a function body."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for inner in ast.walk(node):
            modules = []
            if isinstance(inner, ast.ImportFrom) and inner.module:
                modules = [inner.module]
            elif isinstance(inner, ast.Import):
                modules = [alias.name for alias in inner.names]
            found += [
                f"{name}:{inner.lineno} imports {m} inside {node.name}()" for m in modules if m.startswith("pilot")
            ]
    return found


def _sources():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.read_text(), str(path.relative_to(PACKAGE.parent))


def test_no_module_or_function_over_the_limits():
    found = [line for source, name in _sources() for line in oversized(source, name)]
    assert not found, "\n".join(found)


def test_no_pilot_import_inside_a_function():
    found = [line for source, name in _sources() for line in imports_inside_functions(source, name)]
    assert not found, "\n".join(found)


def test_the_checks_catch_what_they_look_for():
    long_function = "def f():\n" + "    x = 1\n" * FUNCTION_LINES + "\n"
    assert oversized(long_function, "m.py") == [f"m.py:1 f() is {FUNCTION_LINES + 1} lines (limit {FUNCTION_LINES})"]
    long_module = "x = 1\n" * (MODULE_LINES + 1)
    assert oversized(long_module, "m.py") == [
        f"m.py: {MODULE_LINES + 1} lines (limit {MODULE_LINES}): split it by concern"
    ]
    assert oversized("def f():\n    return 1\n", "m.py") == []
    hidden = "import os\n\ndef f():\n    from pilot.train import train\n    import os.path\n    return train\n"
    assert imports_inside_functions(hidden, "m.py") == ["m.py:4 imports pilot.train inside f()"]
