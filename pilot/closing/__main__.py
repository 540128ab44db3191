"""``python -m pilot.closing <export dir>`` (see ``pilot.closing.cli``)."""

import sys

from pilot.closing.cli import main

if __name__ == "__main__":
    sys.exit(main())
