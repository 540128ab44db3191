"""``python -m pilot.env_check <pilot run dir> [--smoke]`` (see the package docstring)."""

import sys


def _cannot_import(error: ImportError) -> int:
    """pilot itself does not import here (a dependency missing or broken): the first difference, said as
    one, exit 1 (the campaign cannot run here), not a traceback."""
    name = error.name or str(error)
    print(
        f"DIFF  pilot's own dependency {name}: pilot imports, here does not import ({type(error).__name__}: "
        f"{error}) — pilot cannot run here. Fix: install pilot with its dependencies in this environment "
        "(pip install -e . from the pilot's checkout), then run env_check again"
    )
    print("env_check: fail — this machine cannot run the campaign; nothing else was compared")
    return 1


if __name__ == "__main__":
    try:
        from pilot.env_check.cli import main
    except ImportError as error:
        sys.exit(_cannot_import(error))
    sys.exit(main())
