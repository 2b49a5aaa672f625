"""The contract every collector follows."""

from __future__ import annotations

import abc
from typing import ClassVar

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
