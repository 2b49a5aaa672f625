"""The garbage collector while gpuwatch starts: off as the program loads its modules, then what was
loaded is frozen out of later collections.

Start-up builds a few hundred thousand objects that live for the whole run (modules, classes,
functions, Textual's widgets and styles) and next to no garbage, yet the collector walked them
again and again as they were made: on the 2-core CPU VM, 65 ms of the main thread's 0.72 s of CPU
to the TUI's first frame went to collections (medians of 6 starts), one full pass alone ~20 ms.
:func:`release` hands them to ``gc.freeze`` (the standard library's tool for this): they move to a
permanent generation that no later collection walks, so later full passes walk only what the run
made since (cheaper in the steady state too). Garbage cycles made during start-up stay with them:
a one-off of a few objects.

Only the program itself does this (the console script and ``python -m gpuwatch`` call :func:`hold`
first thing); gpuwatch used as a library in another process, e.g. the tests, leaves that process's
collector as it is.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Turn the collector off until :func:`release` (if it is on)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """Start-up is over (every module loaded): freeze what exists and turn the collector back on.
    Does nothing unless :func:`hold` turned it off."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
