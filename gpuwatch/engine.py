"""The live watch: every collector on its own cadence, a frame per tick.

Blocking reads never run on the event loop: each group of collectors (THREADS) has a one-thread
executor, so a hung NVML or py-spy call stalls only its group (its calls queue behind the hung one
instead of piling up threads), and the frame marks those fields as stalled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from gpuwatch.collectors.base import Collector, Merges, Paced
from gpuwatch.collectors.target import Target, TargetGone
from gpuwatch.model.frame import Frame, TargetInfo
from gpuwatch.model.field_words import words
from gpuwatch.model.values import JOB_EXITED, PENDING, Unsupported, job_exited, known
from gpuwatch.startup_switch import restore, shorten
from gpuwatch.threadname import name_this_thread

FIELDS = ("gpus", "pcie", "disk", "procs", "host", "stacks")
FIRST_FRAME_S = 0.6
"""Longest wait for the first frame: enough for the rate collectors' first window (0.3 s)."""
STOP_WAIT_S = 2.0
"""How long closing waits for the collector loops to end before leaving them to finish alone."""
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
(:func:`aligned_start`): room for the event loop's and the thread hand-off's jitter (milliseconds
to tens of them on a loaded host). A read that still ends after the tick is carried by the next
frame, a tick late, never lost."""
LEAD_DECAY = 0.8
"""How fast a collector's expected read time forgets a slow read: the lead is the longest recent
read, shrinking by this factor a tick, so one slow py-spy dump or NVML call does not leave every
later read ending early, and a read that grows longer is followed at once."""


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
        self._executors: dict[str, ThreadPoolExecutor] = {}
        self._seq = 0
        self._stopping = False
        self._shown: set[str] = set()
        """Fields whose latest value a frame has carried."""
        self._early: dict[str, tuple[Future, Future]] = {}
        """Collector field -> (probe, first sample) started by prestart()."""
        self.cpu_seconds = 0.0
        self._next_tick: float | None = None
        """When the next frame goes out (set once ticks have started): the collectors time their
        reads to end just before it."""
        self._lead: dict[str, float] = {}
        """Collector field -> how long its reads take (LEAD_DECAY), queueing on its thread included."""
        self._all_in: asyncio.Future | None = None
        """Done once every collector has reported (a sample, or why it has none): the first
        frame's wait ends then (made in frames(), on its event loop)."""

    async def frames(self, duration: float | None = None) -> AsyncIterator[Frame]:
        loop = asyncio.get_running_loop()
        self._all_in = loop.create_future()
        tasks = []
        for c in self.collectors:
            if c.field not in self._early:
                self._latest[c.field] = PENDING
            self._executor(c)
            tasks.append(asyncio.create_task(self._run(c), name=f"collect:{c.field}"))
        start = self.clock()
        try:
            # The first frame goes out as soon as every collector has reported once, or after
            # FIRST_FRAME_S at most (the stack collector spreads its dumps over a whole tick, so it
            # may still say "no sample yet"): the screen fills within about a second of attaching.
            await self._first_round(start + min(self.interval, FIRST_FRAME_S))
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
                alive = await loop.run_in_executor(self._named_executor("target"), self.target.alive)
                frame = self._frame(now, alive)
                yield frame
                if not alive:
                    return
                if duration is not None and now - start >= duration - 1e-6:
                    return
        finally:
            # A flag as well as cancel(): on Python < 3.12, asyncio.wait_for can swallow a
            # cancellation that arrives just as its inner future completes (CPython gh-86296),
            # and a collector loop that missed it would keep this gather waiting forever (seen:
            # a headless watch that did not exit at --duration, about 1 run in 15).
            self._stopping = True
            restore()  # ended before its first round (a stop at start-up)
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=STOP_WAIT_S)
            for c in self.collectors:
                try:
                    c.close()
                except Exception:  # noqa: BLE001 - closing must never mask the real exit
                    pass
            for ex in self._executors.values():
                ex.shutdown(wait=False, cancel_futures=True)

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
        todo = [c for c in self.collectors if c.field not in self._early]
        # Every probe before any first sample: collectors that share a thread then take their
        # baselines together and wait out one first window, not one each (collectors/base.py).
        probes = {c.field: self._executor(c).submit(c.probe) for c in todo}
        for c in todo:
            self._latest[c.field] = PENDING
            probe = probes[c.field]
            self._early[c.field] = (probe, self._executor(c).submit(_sample_if_probe_ok, c, probe))

    def _executor(self, c: Collector) -> ThreadPoolExecutor:
        return self._named_executor(THREADS.get(c.field, c.field))

    def _named_executor(self, what: str) -> ThreadPoolExecutor:
        """The one thread that runs ``what``'s blocking reads, named ``gw-<what>`` for ``top -H``."""
        if what not in self._executors:
            name = f"gw-{what}"
            self._executors[what] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name,
                                                       initializer=name_this_thread, initargs=(name,))
        return self._executors[what]

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

    def _frame(self, now: float, alive: bool) -> Frame:
        self._seq += 1
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

    async def _run(self, c: Collector) -> None:
        loop = asyncio.get_running_loop()
        ex = self._executor(c)
        early = self._early.pop(c.field, None)
        try:
            # A prestarted probe or first sample that has already finished is taken as it is: each
            # await on it would cost turns of an event loop that is busy laying out the TUI, and
            # the first frame would miss the first paint that it could have made.
            if early is not None and early[0].done():
                problem = early[0].result()
            else:
                started_probe = asyncio.wrap_future(early[0]) if early else loop.run_in_executor(ex, c.probe)
                problem = await asyncio.wait_for(started_probe, timeout=c.timeout + 10)
        except Exception as e:  # noqa: BLE001 - a broken probe disables one panel, not the app
            problem = Unsupported(f"{words(c.field)} could not start: {e}")
        if problem is not None:
            self._latest[c.field] = problem
            self._reported()
            return
        failures = 0
        while not self._stopping:
            started = self.clock()
            first, early = early, None
            try:
                if first is not None and first[1].done():
                    value = first[1].result()
                else:
                    pending = asyncio.wrap_future(first[1]) if first else loop.run_in_executor(ex, c.sample)
                    value = await asyncio.wait_for(pending, timeout=c.timeout)
                failures = 0
            except asyncio.TimeoutError:
                value = Unsupported(f"{words(c.field)}: a read took longer than {c.timeout:.0f} s")
                failures += 1
            except asyncio.CancelledError:
                raise
            except TargetGone as e:  # the job ended between two reads: said as such, not as an error
                value = Unsupported(f"{words(c.field)}: {job_exited(str(e))}")
                failures += 1
            except Exception as e:  # noqa: BLE001 - one failing collector never stalls the others
                value = Unsupported(f"{words(c.field)}: {type(e).__name__}: {e}")
                failures += 1
            if self._stopping:
                return
            self._store(c, value)
            done = self._stamp[c.field] = self.clock()
            self._reported()
            lead = self._lead[c.field] = max(done - started, LEAD_DECAY * self._lead.get(c.field, 0.0))
            if c.field == "procs":
                self._last_cmdline = self.target.cmdline()
            # Back off on repeated failures so a broken source costs little.
            pause = c.interval * (1 if failures < 3 else min(10, failures))
            wake = started + pause
            if failures < 3 and self._next_tick is not None and abs(c.interval - self.interval) < 1e-9:
                wake = aligned_start(self.clock(), started, self._next_tick, self.interval, lead)
            await asyncio.sleep(max(0.0, wake - self.clock()))


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


def _sample_if_probe_ok(c: Collector, probe: Future) -> object:
    """The first sample of a prestarted collector, taken only if its probe passed (the probe's
    outcome itself is reported by Watch._run)."""
    try:
        problem = probe.result()
    except Exception:  # noqa: BLE001 - reported from the probe's own future
        return None
    return c.sample() if problem is None else None
