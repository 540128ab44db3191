"""``python -m pilot.closing <export dir>`` (see ``pilot.closing.cli``)."""

import sys

try:
    from pilot.closing.cli import main
except KeyboardInterrupt:  # Ctrl-C while torch imports: stopped, nothing checked, no traceback
    sys.exit(130)

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
