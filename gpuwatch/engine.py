"""The live watch: every collector on its own cadence, a frame per tick.

The collectors' blocking reads never run on the event loop: each group of collectors (THREADS) has a thread of its
own (gpuwatch/read_thread.py) that times its reads and leaves each round's results for the next
frame to take, so a hung NVML or py-spy call stalls only its group (its reads wait behind the hung
one instead of piling up threads), and the frame says those fields' reads are late, then stalled.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence

from gpuwatch.collectors.base import Collector, Merges, Paced
from gpuwatch.collectors.target import Target
from gpuwatch.model.field_words import words
from gpuwatch.model.frame import Frame, TargetInfo
from gpuwatch.model.values import JOB_EXITED, PENDING, Unsupported, known
from gpuwatch.read_thread import ReadThread, Report, late
from gpuwatch.startup_switch import restore, shorten

FIELDS = ("gpus", "pcie", "disk", "procs", "host", "stacks")
FIRST_FRAME_S = 0.6
"""Longest wait for the first frame: enough for the rate collectors' first window (0.3 s)."""
THREADS = {"gpus": "nvml", "pcie": "nvml", "procs": "proc", "host": "proc", "disk": "proc", "stacks": "stacks"}
"""The thread each collector's reads run on. Collectors that share a thread run back to back
instead of side by side: on the H200, with a thread each, the /proc readers and the PCIe collector
cost 3 to 9 times their CPU measured alone (procs 0.70 % of a core against 0.24, PCIe 0.35 against
0.04), most likely because six threads woke together each tick and handed the GIL to each other at
every system call (each /proc read releases it), on cold caches; on these three threads they cost
1.5-1.7 % of a core in all, against 2.9 (bench/results/HISTORY.md, runs 17-18). The NVML pair
shares one lock anyway (collectors/nvml_session.py), the /proc readers cannot hang on one another's
account in any way they could not alone, and the stack collector keeps its own thread (it sleeps
between the dumps it spreads over a tick)."""
STALE_AFTER = 3.0
"""A sample older than this many of its collector's intervals (and the tick) is shown as stalled."""
ALIGN_MARGIN = 0.1
"""Share of the tick by which a collector's read is timed to end before the frame that carries it
(:func:`aligned_start`): room for the threads' wake-up and the hand-off's jitter (milliseconds
to tens of them on a loaded host). A read that still ends after the tick is carried by the next
frame, a tick late, never lost."""
INBOX_WAKE = 60
"""Reports left for the frames beyond which a collector thread wakes the event loop to take them
(one a read: about ten ticks' worth of six collectors): a consumer that stops asking for frames
must not make them pile up."""


class Watch:
    """Runs collectors against a target and yields one :class:`Frame` per ``interval``."""

    def __init__(
        self,
        target: Target,
        collectors: Sequence[Collector],
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.collectors = list(collectors)
        # Which collectors take a pace or merge their samples, asked once: isinstance against a
        # runtime-checkable Protocol walks the class's attributes, 30-40 us for each collector that
        # is not one, and the pace is set and a sample stored for every collector every tick.
        self._paced = [c for c in self.collectors if isinstance(c, Paced)]
        self._merges = {c.field for c in self.collectors if isinstance(c, Merges)}
        self.interval = interval
        self.clock = clock
        self._latest: dict[str, object] = {f: Unsupported("no collector") for f in FIELDS}
        self._stamp: dict[str, float] = {}
        self._threads: dict[str, ReadThread] = {}
        """Thread name (THREADS) -> the thread that runs that group's reads (started by _start)."""
        self._thread_of: dict[str, ReadThread] = {}
        self._late: dict[str, float] = {}
        """Collector field -> since when the read that the frames last called late was due."""
        self._seq = 0
        self._stopping = False
        self._shown: set[str] = set()
        """Fields whose latest value a frame has carried."""
        self._inbox: deque[list[Report]] = deque()
        """What the collector threads have read and no frame has taken yet."""
        self._loop: asyncio.AbstractEventLoop | None = None
        """frames()'s event loop, once it runs."""
        self._waiting = False
        """Whether the first frame waits for the collectors' first reports: each one wakes it."""
        self.cpu_seconds = 0.0
        self._next_tick: float | None = None
        """When the next frame goes out (set once ticks have started): the collectors time their
        reads to end just before it."""
        self._all_in: asyncio.Future | None = None
        """Done once every collector has reported (a sample, or why it has none): the first
        frame's wait ends then (made in frames(), on its event loop)."""

    async def frames(self, duration: float | None = None) -> AsyncIterator[Frame]:
        loop = asyncio.get_running_loop()
        self._all_in = loop.create_future()
        self._start()
        self._waiting = True
        self._loop = loop
        self._take()  # what prestart's reads gave already, at once: no turn of the loop each
        start = self.clock()
        try:
            # The first frame goes out as soon as every collector has reported once, or after
            # FIRST_FRAME_S at most (the stack collector spreads its dumps over a whole tick, so it
            # may still say "no sample yet"): the screen fills within about a second of attaching.
            await self._first_round(start + min(self.interval, FIRST_FRAME_S))
            self._waiting = False  # from now on the frames take the reports, with no turn of the loop each
            restore()  # the first readings are in: Python's switch interval again (prestart shortened it)
            next_tick = self.clock()
            end = None if duration is None else start + duration
            while True:
                # --duration wins over --interval: the last frame comes at the end of the duration
                # (a 60 s interval with a 0.5 s duration ran 61 s).
                wake = next_tick if end is None else min(next_tick, end)
                if wake > self.clock():  # the first frame is due at once: no turn of the loop for it
                    await asyncio.sleep(wake - self.clock())
                next_tick += self.interval
                now = self.clock()
                if now > next_tick:  # we fell behind (suspended laptop, overloaded host): skip ticks
                    next_tick = now + self.interval
                self._next_tick = next_tick
                # On the loop: one pread of the job's stat line through a kept descriptor (the frame
                # reads it again for the command line): less than a hand-off to a thread and back costs.
                alive = self.target.alive()
                frame = self._frame(now, alive)
                yield frame
                if not alive:
                    return
                if duration is not None and now - start >= duration - 1e-6:
                    return
        finally:
            # No read starts after this, and what a read under way gives is dropped (_take). The
            # threads are not waited for: a hung read would hold the exit.
            self._stopping = True
            self._loop = None
            restore()  # ended before its first round (a stop at start-up)
            for t in self._threads.values():
                t.stop()
            for c in self.collectors:
                try:
                    c.close()
                except Exception:  # noqa: BLE001 - closing must never mask the real exit
                    pass

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """Pass a sampling pace (gpuwatch/pace.py) to the collectors that adapt to one."""
        for c in self._paced:
            c.set_pace(main, workers)

    def prestart(self) -> None:
        """Start every collector's probe and first sample now, on its own thread, before an event
        loop runs: the TUI imports and starts Textual meanwhile (about half a second), so its first
        frame is not the sum of both. ``frames`` picks the results up. The threads switch more
        often meanwhile (gpuwatch/startup_switch.py): the main thread, importing, holds the GIL
        that each of the collectors' reads gives up."""
        shorten()
        self._start()

    def _start(self) -> None:
        """Start each group's thread (once): its probes, first samples, then its reads."""
        if self._threads:
            return
        for c in self.collectors:
            self._latest[c.field] = PENDING
            name = THREADS.get(c.field, c.field)
            if name not in self._threads:
                self._threads[name] = ReadThread(f"gw-{name}", [], self._post, self._due, self.clock)
            self._threads[name].collectors.append(c)
            self._thread_of[c.field] = self._threads[name]
        for t in self._threads.values():
            t.start()

    async def _first_round(self, deadline: float) -> None:
        """Wait until every collector has reported once, or until ``deadline``. The last report
        ends the wait (a plain future and a timer: one turn of the event loop, where a poll or
        asyncio.wait_for take several, each a layout pass long while the TUI starts)."""
        fut = self._all_in
        assert fut is not None
        if self._all_reported():
            return
        timer = asyncio.get_running_loop().call_later(max(0.0, deadline - self.clock()), _finish, fut)
        try:
            await fut
        finally:
            timer.cancel()

    def _all_reported(self) -> bool:
        return all(c.field in self._stamp or self._latest[c.field] is not PENDING for c in self.collectors)

    def _reported(self) -> None:
        """A collector has just reported: wake the first frame's wait if it was the last one."""
        if self._all_in is not None and not self._all_in.done() and self._all_reported():
            self._all_in.set_result(None)

    def _post(self, reports: list[Report]) -> None:
        """On a collector thread: leave ``reports`` for the next frame to take. Only the first
        frame's wait is woken for them: after it, a report wakes nothing, and each read costs the
        event loop no turn of its own (an executor's hand-off, a deadline timer and a sleep each
        were about a third of the --json main thread's CPU on the CPU VM)."""
        self._inbox.append(reports)
        loop = self._loop  # read after the append: frames() sets it before it first takes the inbox
        if loop is not None and (self._waiting or len(self._inbox) > INBOX_WAKE):
            try:
                loop.call_soon_threadsafe(self._take)
            except RuntimeError:  # the loop has closed without closing frames(): the watch is over
                self._stopping = True
                for t in self._threads.values():
                    t.stop()

    def _take(self) -> None:
        """On the event loop: keep what the collector threads have read, oldest first."""
        while self._inbox:
            reports = self._inbox.popleft()
            if self._stopping:
                continue
            for c, value, done, probe in reports:
                if probe:
                    self._latest[c.field] = value
                    continue
                self._store(c, value)
                self._stamp[c.field] = done
                if c.field == "procs":
                    self._last_cmdline = self.target.cmdline()
        self._reported()

    def _due(self, now: float, started: float, lead: float, c: Collector, failures: int) -> float:
        """When ``c``'s next read is due, its last round having started at ``started`` and taken
        about ``lead`` (on its thread, at ``now``)."""
        # Back off on repeated failures so a broken source costs little.
        if failures < 3 and self._next_tick is not None and abs(c.interval - self.interval) < 1e-9:
            return aligned_start(now, started, self._next_tick, self.interval, lead)
        return started + c.interval * (1 if failures < 3 else min(10, failures))

    def _store(self, c: Collector, value: object) -> None:
        """Keep ``value`` as the field's latest. A collector that :class:`Merges` (the stack collector) does
        not lose a sample that no frame has shown yet: its samples end at a phase of their own,
        and two can land between two ticks (seen on the H200: every sample that held a worker dump
        finished just after a tick and was replaced before the next, so the frames never had one)."""
        prev = self._latest.get(c.field)
        if c.field in self._merges and c.field not in self._shown and known(prev) and known(value):
            value = c.merge(prev, value)
        self._latest[c.field] = value
        self._shown.discard(c.field)

    def _overdue(self, now: float) -> None:
        """Say so, once, for each read or probe that is past its deadline and still under way (or
        waiting behind one that is): its thread is held, the frame is not."""
        for c in self.collectors:
            owed = self._thread_of[c.field].owed.get(c.field)
            if owed is None or now - owed.since <= owed.limit or self._late.get(c.field) == owed.since:
                continue
            self._late[c.field] = owed.since
            if owed.probe:
                self._latest[c.field] = late(c, owed)
            else:
                self._store(c, late(c, owed))
                self._stamp[c.field] = owed.since + owed.limit

    def _frame(self, now: float, alive: bool) -> Frame:
        self._seq += 1
        self._take()
        self._overdue(now)
        self._shown.update(FIELDS)
        fields = {}
        for f in FIELDS:
            value = self._latest[f]
            stamp = self._stamp.get(f)
            c = next((c for c in self.collectors if c.field == f), None)
            if stamp is not None and c is not None:
                limit = STALE_AFTER * max(c.interval, self.interval) + c.timeout
                if now - stamp > limit:
                    value = Unsupported(f"no new reading of {words(f)} for {now - stamp:.0f} s (its collector is stalled)")
            fields[f] = value
        info = TargetInfo(
            pid=self.target.pid,
            cmdline=self.target.cmdline() if alive else self._cmdline_cache(),
            alive=alive,
            exit_reason=None if alive else (self.target.exit_reason or JOB_EXITED),
        )
        return Frame(seq=self._seq, t=now, wall=time.time(), interval=self.interval, target=info, **fields)

    def _cmdline_cache(self) -> str:
        return getattr(self, "_last_cmdline", "")


def aligned_start(now: float, started: float, next_tick: float, interval: float, lead: float) -> float:
    """When a collector that reads once a tick should start its next read: ``lead`` seconds (its
    read time) plus ALIGN_MARGIN of a tick before a tick, so the frame carries a reading that ends
    just before it. Collectors and ticks each kept a cadence of their own: on the H200 the frames
    carried GPU readings 0.26-0.51 s old and stack samples 0.5-1.0 s old (the first frame's wait
    set the phase), all of it added to the time a switch takes to show. Never sooner than half a
    tick after the last read began (``started``): one read a tick, as before."""
    ahead = lead + ALIGN_MARGIN * interval
    earliest = max(now, started + interval / 2)
    tick = next_tick
    while tick - ahead < earliest:
        tick += interval
    return tick - ahead


def _finish(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)
