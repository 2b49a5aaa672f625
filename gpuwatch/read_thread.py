"""One collector thread: its group's probes, first samples and reads, each on its own schedule
(gpuwatch/engine.py).

The thread sleeps until its next read is due, runs every read of its group that is due then back
to back, and posts each result as it ends (engine.Watch leaves them for the next frame). The event
loop takes no part in a read: an executor cost it a submit, a future to wrap, a timer for the
deadline and a task's sleep for every read, about a third of the --json main thread's CPU on the
CPU VM. A read's deadline is checked when a frame is made (engine.Watch._overdue), the only time
it can show.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.target import TargetGone
from gpuwatch.model.field_words import words
from gpuwatch.model.values import Unsupported, job_exited
from gpuwatch.threadname import name_this_thread

PROBE_GRACE_S = 10.0
"""A probe may take this much longer than its collector's read timeout (it opens handles, takes
baselines) before the collector is given up."""
LEAD_DECAY = 0.8
"""How fast a thread's expected round time forgets a slow round: the lead is the longest recent
round, shrinking by this factor a round, so one slow py-spy dump or NVML call does not leave every
later read ending early, and a round that grows longer is followed at once."""


class Report(NamedTuple):
    """What one read (or failed probe) gave, posted to the event loop."""

    collector: Collector
    value: object
    done: float
    """The clock when the read ended."""
    probe: bool
    """``value`` says why the probe failed: the collector is off for good."""


class Owed(NamedTuple):
    """A read (or probe) due since ``since``: past ``since + limit`` without a result it is late."""

    since: float
    limit: float
    probe: bool


def late(c: Collector, owed: Owed) -> Unsupported:
    """What a frame shows for a read or probe that took longer than it may."""
    if owed.probe:
        return Unsupported(f"{words(c.field)} could not start: its check took longer than {owed.limit:.0f} s")
    return Unsupported(f"{words(c.field)}: a read took longer than {owed.limit:.0f} s")


class ReadThread:
    """Runs ``collectors`` (one group of engine.THREADS) on one thread named ``name``.

    ``post(reports)`` is called on this thread with each read's report as it ends (the first
    frame waits for the first samples). ``schedule(now, started,
    lead, c, failures)`` says when ``c``'s next read is due (engine.Watch owns the tick). ``owed``
    says, for the event loop, since when each collector's read has been due and for how long it
    may take: a read that hangs holds only this thread, and the frame says so once it is late."""

    def __init__(self, name: str, collectors: Sequence[Collector], post: Callable[[list[Report]], None],
                 schedule: Callable[[float, float, float, Collector, int], float],
                 clock: Callable[[], float]) -> None:
        self.name = name
        self.collectors = list(collectors)
        self.owed: dict[str, Owed] = {}
        self._post = post
        self._schedule = schedule
        self._clock = clock
        self._stop = threading.Event()
        # A daemon: a read that never returns (a hung driver call) must not keep the process from
        # exiting, and a watch stopped before its frames ran has nobody to stop this thread.
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No read starts after this; a read under way ends on its own (or as its collector's
        close() cuts it short) and its result is dropped."""
        self._stop.set()

    def _main(self) -> None:
        name_this_thread(self.name)
        try:
            self._rounds()
        finally:
            # The watch's callbacks go with the thread: the watch, its target and their kept
            # /proc descriptors are then freed as soon as nothing else holds them, not at the next
            # garbage collection.
            del self._post, self._schedule

    def _rounds(self) -> None:
        on = self._probes()
        # The first samples at once, each posted as it ends: the first frame waits for every
        # collector's first report, and the last one ends that wait.
        due = dict.fromkeys((c.field for c in on), self._clock())
        failures = dict.fromkeys(due, 0)
        lead = 0.0
        while on and not self._stop.is_set():
            now = self._clock()
            batch = [c for c in on if due[c.field] <= now]
            if not batch:
                self._stop.wait(min(due.values()) - now)
                continue
            for c in batch:
                if self._stop.is_set():
                    return
                value, failed = self._read(c, Owed(due[c.field], c.timeout, False))
                failures[c.field] = failures[c.field] + 1 if failed else 0
                ended = self._clock()
                # Each result as it ends, and its next read owed an interval on until the round's
                # end times it: a thread-mate's read that hangs after this one in the round then
                # neither holds this reading back nor keeps its next one from being called late.
                self.owed[c.field] = Owed(ended + c.interval, c.timeout, False)
                self._post([Report(c, value, ended, False)])
            done = self._clock()
            lead = max(done - now, LEAD_DECAY * lead)
            for c in batch:
                due[c.field] = self._schedule(done, now, lead, c, failures[c.field])
                self.owed[c.field] = Owed(due[c.field], c.timeout, False)

    def _probes(self) -> list[Collector]:
        """Every probe before any first sample: collectors that share a thread then take their
        baselines together and wait out one first window, not one each (collectors/base.py)."""
        start = self._clock()
        for c in self.collectors:
            self.owed[c.field] = Owed(start, c.timeout + PROBE_GRACE_S, True)
        on = []
        for c in self.collectors:
            owed = self.owed[c.field]
            if self._stop.is_set():
                return []
            try:
                problem = c.probe()
            except Exception as e:  # noqa: BLE001 - a broken probe disables one panel, not the app
                problem = Unsupported(f"{words(c.field)} could not start: {e}")
            if self._clock() - owed.since > owed.limit:
                problem = late(c, owed)
            if problem is None:
                self.owed[c.field] = Owed(self._clock(), c.timeout, False)  # its first sample, next
                on.append(c)
            else:
                del self.owed[c.field]
                self._post([Report(c, problem, self._clock(), True)])
        return on

    def _read(self, c: Collector, owed: Owed) -> tuple[object, bool]:
        """One sample of ``c``: its value (or why there is none) and whether it failed. A read that
        ends past its deadline gives the late message: the frames already said it was late."""
        self.owed[c.field] = owed
        try:
            value, failed = c.sample(), False
        except TargetGone as e:  # the job ended between two reads: said as such, not as an error
            value, failed = Unsupported(f"{words(c.field)}: {job_exited(str(e))}"), True
        except Exception as e:  # noqa: BLE001 - one failing collector never stalls the others
            value, failed = Unsupported(f"{words(c.field)}: {type(e).__name__}: {e}"), True
        del self.owed[c.field]
        if self._clock() - owed.since > owed.limit:
            return late(c, owed), True
        return value, failed
