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

After start-up the youngest generation is collected every :data:`STEADY_GEN0` allocations rather
than Python's 700. A frame of the TUI allocates a few thousand container objects (strips, segments,
tuples of the charts' cells), nearly all freed by reference counting within the frame; at 700 the
collector ran about once a frame and walked whatever of them was alive at that moment, and promoted
it to older generations that later passes walk again. On the 2-core CPU VM that was 0.6-0.8 ms of
the main thread's ~7 ms a frame at 200x60 (bench.draw_cost on run 11b's recording, collections timed
by gc.callbacks after a freeze); at 10,000, 0.14-0.19 ms. Garbage cycles live a little longer (at
most that many allocations): the TUI makes few, and the memory they hold is small.

Only the program itself does this (the console script and ``python -m gpuwatch`` call :func:`hold`
first thing); gpuwatch used as a library in another process, e.g. the tests, leaves that process's
collector as it is.
"""

from __future__ import annotations

import gc

_held = False

STEADY_GEN0 = 10_000
"""Allocations between collections of the youngest generation once start-up is over (Python's
default is 700); the older generations' thresholds stay as they are."""


def hold() -> None:
    """Turn the collector off until :func:`release` (if it is on)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """Start-up is over (every module loaded): freeze what exists, collect the youngest generation
    every :data:`STEADY_GEN0` allocations, and turn the collector back on. Does nothing unless
    :func:`hold` turned it off."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.set_threshold(STEADY_GEN0, *gc.get_threshold()[1:])
        gc.enable()
