"""``python -m pilot.env_check <pilot run dir> [--smoke]`` (see the package docstring)."""

import sys

from pilot.env_check.cli import main

if __name__ == "__main__":
    sys.exit(main())
