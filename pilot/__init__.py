"""pilot: one complete step before a thousand experiments."""

__version__ = "0.1.0"

import os as _os

# MKL may use fewer threads than asked when the machine is busy (MKL_DYNAMIC defaults to true),
# which changes the order of float reductions between two processes; the resume and reload checks
# compare a child process's results bit for bit. Set before torch loads MKL; yours wins if set.
_os.environ.setdefault("MKL_DYNAMIC", "FALSE")
