"""The interpreter's thread switch interval while the collectors take their first readings: short,
then Python's own again.

While gpuwatch starts, its main thread runs Python without a pause (imports, then Textual's
compose, layout and paint) and holds the GIL, while the collector threads take their baselines
and first samples: hundreds of /proc reads and NVML calls, each of which lets go of the GIL and
must then wait for it. A thread that waits asks for the GIL only after a whole switch interval
(5 ms by default), so each read cost up to 5 ms of waiting: on the CPU VM, the proc thread's
probes and first samples, ~12 ms of its CPU, took 62-424 ms (median 76) beside a busy main thread
against ~20 alone; at 0.1 ms, 27-64 ms (median 37, one outlier at 251). The H200's proc readers
came at 0.72-0.77 s, 0.5 s after they started for a 0.3 s window (bench/results run 29).

:func:`shorten` is called by Watch.prestart, and :func:`restore` once the first round is in (the
first frame's readings): after that the collectors read once a tick and the main thread is
mostly idle, so the steady state keeps Python's interval.
"""

from __future__ import annotations

import sys

STARTUP_SWITCH_S = 0.0001
"""The switch interval until the first readings are in (Python's default is 0.005)."""

_saved: float | None = None


def shorten() -> None:
    """Switch threads every STARTUP_SWITCH_S until :func:`restore` (once; nested calls do nothing)."""
    global _saved
    if _saved is None:
        _saved = sys.getswitchinterval()
        sys.setswitchinterval(min(_saved, STARTUP_SWITCH_S))


def restore() -> None:
    """Back to the interval :func:`shorten` found. Does nothing unless it shortened it."""
    global _saved
    if _saved is not None:
        sys.setswitchinterval(_saved)
        _saved = None
