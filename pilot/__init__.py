"""pilot: one complete step before a thousand experiments."""

__version__ = "0.1.0"

import os as _os

# MKL may use fewer threads than asked when the machine is busy (MKL_DYNAMIC defaults to true),
# which changes the order of float reductions between two processes; the resume and reload checks
# compare a child process's results bit for bit. Set before torch loads MKL; yours wins if set.
_os.environ.setdefault("MKL_DYNAMIC", "FALSE")

import signal as _signal
import sys as _sys


def _interrupted_while_starting(signum, frame):
    """Ctrl-C during ``python -m pilot``'s imports (seconds: torch, Hydra): nothing read or written yet."""
    _sys.stderr.write("pilot: interrupted (SIGINT) while starting; nothing was written\n")
    _os._exit(130)


# python -m pilot only (not a library import, not pilot.recap): until pilot.__main__.script() starts,
# a Ctrl-C is one line, not an import traceback; an ignored SIGINT (a local_parallel job) stays ignored
if _sys.orig_argv[1:3] == ["-m", "pilot"] and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)
