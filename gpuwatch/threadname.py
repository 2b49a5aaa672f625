"""OS-level names for gpuwatch's threads, so ``top -H``, ``ps -L`` and ``py-spy dump`` show which
collectors a thread runs (``gw-nvml``, ``gw-proc``, ``gw-stacks``: gpuwatch/engine.py), and
bench/self.py can split gpuwatch's CPU by thread exactly instead of by sampling.

Python before 3.14 names its threads only inside Python: the kernel's ``comm`` stays the
interpreter's name. prctl(PR_SET_NAME) is called through ctypes because no library in the
dependency list wraps it (psutil reads thread names but does not set them).
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_NAME = 15
"""prctl option (linux/prctl.h): set the calling thread's name, at most 15 bytes."""

_prctl = None
if sys.platform.startswith("linux"):
    # The C library is already loaded in the process: CDLL(None) finds prctl among its symbols.
    # ctypes.util.find_library("c") ran `ldconfig -p` in a subprocess, on the main thread while
    # gpuwatch started (about 10 ms of wall time on the 2-core VM, plus importing ctypes.util).
    try:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # a libc without prctl: names stay as they are
        _prctl = None


def name_this_thread(name: str) -> None:
    """Give the calling thread an OS name (cut to 15 bytes); does nothing where that is impossible."""
    if _prctl is not None:
        _prctl(PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8", "replace")[:15]), 0, 0, 0)
