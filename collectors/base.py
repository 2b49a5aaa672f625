"""The contract every collector follows."""

from __future__ import annotations

import abc
import time
from typing import ClassVar, Protocol, runtime_checkable

from gpuwatch.model.values import Unsupported


class Collector(abc.ABC):
    """Reads one part of the world on its own cadence.

    ``sample()`` is blocking and always runs on the collector's own worker thread, never on the
    event loop. It returns the sample (the type its frame field holds) or an :class:`Unsupported`
    with the reason; it may raise, and the engine turns that into an Unsupported for the frame.
    """

    field: ClassVar[str]
    """The :class:`~gpuwatch.model.frame.Frame` field this collector fills."""

    interval: float = 1.0
    """Seconds between the starts of two ``sample()`` calls."""

    timeout: float = 5.0
    """A ``sample()`` call that takes longer is abandoned and the frame says so."""

    def probe(self) -> Unsupported | None:
        """Check once, at attach, that this collector can work. None when it can."""
        return None

    @abc.abstractmethod
    def sample(self) -> object:
        """Read one sample (blocking)."""

    def close(self) -> None:
        """Release what ``probe``/``sample`` acquired (handles, subprocesses)."""


@runtime_checkable
class Paced(Protocol):
    """A collector whose sampling rate follows the verdict (gpuwatch/pace.py): the stack collector
    (its dump rates), the GPU collector (how often it reads the utilization buffer), the PCIe
    collector (how often it reads the replay counter), the host
    collector (how often it scans the processes outside the job), the disk collector (how many
    processes' open files it lists a tick)."""

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """Scale the rates: ``main`` for the training processes, ``workers`` for their workers."""


@runtime_checkable
class Merges(Protocol):
    """A collector whose samples two ticks may fall between: the engine merges a sample that no frame
    has shown yet into the next one instead of dropping it (gpuwatch/engine.py)."""

    def merge(self, older: object, newer: object) -> object:
        """One sample holding both."""


FIRST_WINDOW_S = 0.3
"""A rate collector's first sample measures over this window from its baseline (there is no
previous tick to diff against)."""


class FirstWindow:
    """When a rate collector took its baseline. Its probe takes the baseline, and the first sample
    waits only for the rest of the window: collectors that share a thread (gpuwatch/engine.py)
    then wait out their first windows together instead of one after the other."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.done = False

    def open(self) -> None:
        self.start = time.monotonic()

    def wait(self) -> None:
        """Sleep out the rest of the window, the first time only."""
        if not self.done and self.start is not None:
            time.sleep(max(0.0, self.start + FIRST_WINDOW_S - time.monotonic()))
        self.done = True
