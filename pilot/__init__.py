"""pilot: one complete step before a thousand experiments."""

__version__ = "0.1.0"

import os as _os

# MKL may use fewer threads than asked when the machine is busy (MKL_DYNAMIC defaults to true),
# which changes the order of float reductions between two processes; the resume and reload checks
# compare a child process's results bit for bit. Set before torch loads MKL; yours wins if set.
_os.environ.setdefault("MKL_DYNAMIC", "FALSE")

from pilot import startup_signals as _startup_signals

# python -m pilot: until pilot.__main__.script() starts, a signal is one line, not an import
# traceback; a local_parallel job notes one that arrives before its run watches signals
_startup_signals.at_import()
