"""What the GPU and PCIe collectors share: one NVML session, the GPU selection, the GPM window."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.gpm import GpmWindow
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.target import TargetGone
from gpuwatch.model.values import Unsupported

GPM_REUSE = 0.5
"""Fraction of a tick within which a GPM read reuses the window another collector just closed:
the GPU and PCIe collectors of one tick start together (the lock orders them a few ms apart),
while a tick later the window is a whole interval old."""

SLOW_TTL_S = 5.0
"""How long a rarely changing NVML value is reused (see NvmlCollector.slowly)."""


class NvmlCollector(Collector):
    """A collector that reads the GPUs the job uses (or ``gpus``) through a shared NvmlSession."""

    def __init__(
        self,
        target: Any,
        session: NvmlSession,
        gpus: Sequence[int] | None = None,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.session = session
        self.gpus = None if gpus is None else tuple(gpus)
        self.interval = interval
        self.clock = clock
        self._opened = False
        self._closed = False
        self._gpm = GpmWindow.shared(session, clock)
        self._slow: dict[tuple[int, str], tuple[float, Any]] = {}

    def probe(self) -> Unsupported | None:
        problem = self.session.open()
        self._opened = problem is None
        if problem is None and self.gpus is not None:
            sel = self.session.select((), self.gpus)
            if isinstance(sel, Unsupported):
                return sel
        return problem

    def slowly(self, index: int, what: str, read: Callable[[], Any], every: float = SLOW_TTL_S) -> Any:
        """``read()`` at most every ``every`` seconds (SLOW_TTL_S) for a value that changes rarely
        (a power limit, the link's trained width): each NVML call costs ~0.1-1 ms of CPU on the
        H200, most of it in the driver, and the frame shows the latest reading in between."""
        now = self.clock()
        hit = self._slow.get((index, what))
        if hit is not None and now - hit[0] < every:
            return hit[1]
        value = read()
        self._slow[(index, what)] = (now, value)
        return value

    def close(self) -> None:
        self._closed = True
        self._gpm.release()
        if self._opened:
            self._opened = False
            self.session.release()

    def selection(self) -> tuple[tuple[int, ...], list[tuple[int, bool]]] | Unsupported:
        """(the job's PIDs, [(GPU index, used by the job)]) for this tick, or why not; why not once
        closed: the watch does not wait for its threads, and a read that starts as it closes would
        initialize NVML again (session.probe), for good, with no user left to shut it down."""
        if self._closed:
            return Unsupported("NVML closed: the watch has ended")
        problem = self.session.probe()
        if problem is not None:
            return problem
        try:
            pids = self.target.tree().pids()
        except TargetGone:
            pids = ()  # the GPUs it used stay selected (see NvmlSession.select)
        sel = self.session.select(pids, self.gpus)
        if isinstance(sel, Unsupported):
            return sel
        return tuple(pids), list(sel)
