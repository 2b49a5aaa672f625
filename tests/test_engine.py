"""The engine: collectors on their own threads; a slow, failing or hung one never stalls the rest."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.target import Target, TargetGone
from gpuwatch.engine import Watch
from gpuwatch.model.values import Unsupported


class Counting(Collector):
    field = "host"
    interval = 0.1

    def __init__(self):
        self.calls = 0
        self.threads = set()

    def sample(self):
        self.calls += 1
        self.threads.add(threading.current_thread().name)
        return Unsupported(f"call {self.calls}")  # any value will do: the engine only carries it


class Failing(Collector):
    field = "disk"
    interval = 0.1

    def sample(self):
        raise OSError("disk went away")


class Exiting(Collector):
    field = "pcie"
    interval = 0.1

    def sample(self):
        raise TargetGone("process no longer exists (pid=1)")


class Hung(Collector):
    field = "stacks"
    interval = 0.1
    timeout = 0.3

    def __init__(self):
        self.release = threading.Event()

    def sample(self):
        self.release.wait(20)
        return Unsupported("late")


class Refusing(Collector):
    field = "gpus"

    def probe(self):
        return Unsupported("NVML unavailable: no driver")

    def sample(self):  # pragma: no cover - never called after a failed probe
        raise AssertionError("sample after failed probe")


@pytest.fixture
def sleeper():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield p
    p.kill()
    p.wait()


async def _collect(watch, n):
    out = []
    async for f in watch.frames(duration=n * watch.interval):
        out.append(f)
    return out


def test_one_bad_collector_does_not_stall_the_others(sleeper):
    counting, hung = Counting(), Hung()
    watch = Watch(Target(sleeper.pid), [counting, Failing(), hung, Refusing(), Exiting()], interval=0.25)
    t0 = time.monotonic()
    frames = asyncio.run(_collect(watch, 8))
    hung.release.set()
    elapsed = time.monotonic() - t0
    assert len(frames) == 8
    assert elapsed < 6, "a hung collector held up the frames"
    assert counting.calls >= 8, "the healthy collector was starved"
    assert all(name.startswith("gw-proc") for name in counting.threads), "sample() ran off its group's thread"
    last = frames[-1]
    assert isinstance(last.disk, Unsupported) and "disk went away" in last.disk.reason
    assert last.gpus == Unsupported("NVML unavailable: no driver")
    assert last.pcie == Unsupported("PCIe link and traffic: the job exited (process 1)")  # plain words: no class name, nor psutil's
    assert isinstance(last.stacks, Unsupported) and ("longer than" in last.stacks.reason or "stalled" in last.stacks.reason)
    assert [f.seq for f in frames] == list(range(1, 9))


def test_frames_keep_the_tick_even_when_collectors_are_slow(sleeper):
    class Slow(Collector):
        field = "procs"
        interval = 0.1

        def sample(self):
            time.sleep(0.6)
            return Unsupported("slow")

    watch = Watch(Target(sleeper.pid), [Slow()], interval=0.2)
    frames = asyncio.run(_collect(watch, 6))
    gaps = [b.t - a.t for a, b in zip(frames, frames[1:])]
    assert max(gaps) < 0.6, gaps


def test_prestart_takes_the_first_readings_before_the_loop_runs(sleeper):
    """prestart() probes and samples on the collectors' own threads at once; frames() uses those
    readings instead of taking them again, and a refused probe still disables only its field."""

    class SlowFirst(Collector):
        field = "procs"
        interval = 1.0

        def __init__(self):
            self.calls = []

        def sample(self):
            self.calls.append(time.monotonic())
            if len(self.calls) == 1:
                time.sleep(0.5)  # a first reading with a baseline window, like the /proc collectors
            return Unsupported(f"call {len(self.calls)}")

    slow = SlowFirst()
    watch = Watch(Target(sleeper.pid), [slow, Refusing(), Failing()], interval=1.0)
    t0 = time.monotonic()
    watch.prestart()
    time.sleep(0.6)  # the TUI importing and starting meanwhile
    assert len(slow.calls) == 1 and slow.calls[0] - t0 < 0.2, "the first sample did not start at once"

    async def first():
        async for f in watch.frames(duration=0.0):
            return f, time.monotonic()

    frame, at = asyncio.run(first())
    assert at - t0 < 0.9, "the first frame waited for a second first reading"
    assert frame.procs == Unsupported("call 1") and len(slow.calls) <= 2
    assert frame.gpus == Unsupported("NVML unavailable: no driver")
    assert isinstance(frame.disk, Unsupported) and "disk went away" in frame.disk.reason


def test_the_proc_readers_sharing_a_thread_all_make_the_first_frame(sleeper):
    """disk, procs and host run back to back on one thread (engine.THREADS), each with a 0.3 s first
    window: their probes take the baselines together, so the first frame, 0.6 s at most after the
    start, carries all three instead of "no sample yet" for the last two."""
    from gpuwatch.collectors.disk import DiskCollector
    from gpuwatch.collectors.host import HostCollector
    from gpuwatch.collectors.procs import ProcsCollector
    from gpuwatch.engine import THREADS
    from gpuwatch.model.values import known

    assert THREADS["disk"] == THREADS["procs"] == THREADS["host"]
    target = Target(sleeper.pid)
    watch = Watch(target, [DiskCollector(target), ProcsCollector(target), HostCollector(target)], interval=1.0)
    watch.prestart()

    async def first():
        async for f in watch.frames(duration=0.0):
            return f

    frame = asyncio.run(first())
    assert known(frame.disk) and known(frame.procs) and known(frame.host), (frame.disk, frame.procs, frame.host)
    assert [p.pid for p in frame.procs.processes] == [sleeper.pid]


def test_samples_between_two_frames_are_merged_not_lost(sleeper):
    """A collector whose samples end at their own phase can finish twice between two ticks; with a
    ``merge`` (the stack collector) the frame carries both, so no dump is lost."""
    from gpuwatch.collectors.stacks import StackCollector
    from gpuwatch.model.stacks import DumpResult, StackSample

    class Fast(Collector):
        field = "stacks"
        interval = 0.1
        merge = staticmethod(StackCollector.merge)

        def __init__(self):
            self.n = 0

        def sample(self):
            self.n += 1
            return StackSample(t=time.monotonic(), threads=(), dumps=(DumpResult(pid=self.n, ok=True, ms=1.0, error=None),))

    fast = Fast()
    watch = Watch(Target(sleeper.pid), [fast], interval=0.5)
    frames = asyncio.run(_collect(watch, 5))
    fast_n = fast.n
    seen = [d.pid for f in frames for d in f.stacks.dumps]
    assert len(seen) == len(set(seen)), "a sample was shown by two frames"
    assert seen == sorted(seen) and seen[0] == 1
    # every sample up to the last frame's is in some frame (the loop may have run one more)
    assert set(seen) == set(range(1, seen[-1] + 1)) and seen[-1] >= fast_n - 2
    assert max(len(f.stacks.dumps) for f in frames) >= 3  # several samples per 0.5 s tick, merged


def test_reads_are_timed_to_end_just_before_the_frame_that_carries_them():
    from gpuwatch.engine import ALIGN_MARGIN, aligned_start

    # Ticks at 10, 11, 12 ...; a read that takes 0.3 s started at 9.65 and ended at 9.95.
    start = aligned_start(now=9.95, started=9.65, next_tick=10.0, interval=1.0, lead=0.3)
    assert start == pytest.approx(11.0 - 0.3 - ALIGN_MARGIN)  # ends ALIGN_MARGIN of a tick before 11
    # A free-running read out of phase (ended 0.45 s after a tick) moves into phase at once ...
    start = aligned_start(now=10.45, started=10.3, next_tick=11.0, interval=1.0, lead=0.02)
    assert start == pytest.approx(11.0 - 0.02 - ALIGN_MARGIN)
    # ... but never two reads in half a tick: a read that ends too late for the next tick waits for
    # the one after it.
    start = aligned_start(now=10.9, started=10.5, next_tick=11.0, interval=1.0, lead=0.4)
    assert start == pytest.approx(12.0 - 0.4 - ALIGN_MARGIN)
    # A read longer than the tick starts as soon as it may, one read a tick at most.
    start = aligned_start(now=12.5, started=11.0, next_tick=13.0, interval=1.0, lead=1.5)
    assert start >= 12.5 and start - 11.0 >= 0.5



def test_prestarted_readings_make_the_first_frame_within_a_few_turns_of_a_busy_loop(sleeper):
    """The TUI's event loop is busy laying out its first screen while the first frame is waited
    for: each turn of it runs a long callback. Readings that prestart() already has are taken as
    they are, and the last report wakes the wait, so the first frame comes after a few turns
    instead of the many that awaiting each finished reading and polling took."""
    watch = Watch(Target(sleeper.pid), [Counting(), Refusing(), Failing()], interval=1.0)
    watch.prestart()
    deadline = time.monotonic() + 5
    while len(watch._inbox) < 3 and time.monotonic() < deadline:  # a sample, a refused probe, a failed read
        time.sleep(0.01)
    turns = []

    async def main():
        async def busy():  # a layout pass a turn
            while True:
                time.sleep(0.01)
                turns.append(1)
                await asyncio.sleep(0)

        hog = asyncio.create_task(busy())
        async for f in watch.frames(duration=0.0):
            hog.cancel()
            return f

    frame = asyncio.run(main())
    assert frame.host == Unsupported("call 1")
    assert len(turns) <= 6, f"the first frame waited {len(turns)} turns of the loop"


def test_threads_switch_often_only_until_the_first_readings_are_in(sleeper):
    """prestart() shortens the switch interval (the collectors' reads wait less for the GIL that the
    importing main thread holds); the first frame's round puts Python's own back."""
    import sys

    from gpuwatch.startup_switch import STARTUP_SWITCH_S

    before = sys.getswitchinterval()
    watch = Watch(Target(sleeper.pid), [Counting()], interval=1.0)
    watch.prestart()
    assert sys.getswitchinterval() == pytest.approx(min(before, STARTUP_SWITCH_S))

    async def first():
        async for f in watch.frames(duration=0.0):
            return f

    asyncio.run(first())
    assert sys.getswitchinterval() == pytest.approx(before)


def test_the_switch_interval_comes_back_when_the_watch_stops_before_its_first_frame(monkeypatch, request):
    """A stop signal during start-up can end the run before Watch.frames is ever entered (Pipeline's
    `until` does not ask for a frame once stop is set): the command puts Python's interval back."""
    import argparse
    import sys

    from gpuwatch import commands, headless
    from gpuwatch.startup_switch import STARTUP_SWITCH_S, restore, shorten

    request.addfinalizer(restore)  # the rest of the session at Python's interval, whatever happens here

    class Stub:
        watch = type("W", (), {"prestart": staticmethod(shorten)})()

    before = sys.getswitchinterval()
    monkeypatch.setattr(commands, "live_source", lambda *a: Stub())
    monkeypatch.setattr(commands.WatchOptions, "from_args", staticmethod(lambda ns: None))
    monkeypatch.setattr(commands, "release", lambda: None)
    seen = []
    monkeypatch.setattr(headless, "run_headless", lambda *a: seen.append(sys.getswitchinterval()) or 130)
    ns = argparse.Namespace(json=True, pid=1, duration=None, record=None, prometheus=None)
    assert commands.watch(ns) == 130
    assert seen == [pytest.approx(min(before, STARTUP_SWITCH_S))]
    assert sys.getswitchinterval() == pytest.approx(before)


def test_a_read_waiting_behind_a_hung_one_on_its_thread_is_late_too(sleeper):
    """Collectors that share a thread (engine.THREADS) wait behind a read that hangs: the frames say
    each one's read is late once past its own deadline, as the hung one's, while the frames keep
    their tick."""

    class HungProcs(Hung):
        field = "procs"

    hung, partner = HungProcs(), Counting()  # host: on the proc thread, behind procs
    partner.timeout = 0.3
    watch = Watch(Target(sleeper.pid), [hung, partner], interval=0.2)
    frames = asyncio.run(_collect(watch, 5))
    hung.release.set()
    assert len(frames) == 5
    for f in frames[3:]:
        assert isinstance(f.procs, Unsupported) and "a read took longer than" in f.procs.reason, f.procs
        assert isinstance(f.host, Unsupported) and "a read took longer than" in f.host.reason, f.host
    assert partner.calls == 0


def test_a_probe_that_hangs_is_said_and_the_others_go_on(sleeper):
    class HungProbe(Collector):
        """A probe that never returns (a driver call that hangs): the first frame does not wait for it,
        and the frames say why that field stays empty."""

        field = "gpus"
        timeout = 0.0

        def __init__(self):
            self.release = threading.Event()

        def probe(self):
            self.release.wait(20)

        def sample(self):  # pragma: no cover - never called after a late probe
            raise AssertionError("sample after a late probe")

    import gpuwatch.read_thread as rt

    hung, counting = HungProbe(), Counting()
    grace, rt.PROBE_GRACE_S = rt.PROBE_GRACE_S, 0.3
    try:
        frames = asyncio.run(_collect(Watch(Target(sleeper.pid), [hung, counting], interval=0.2), 4))
    finally:
        rt.PROBE_GRACE_S = grace
        hung.release.set()
    assert "could not start: its check took longer than" in frames[-1].gpus.reason
    assert frames[-1].host.reason.startswith("call")


def test_the_collector_threads_end_with_the_watch(sleeper):
    """Each group's thread ends when the frames do: none is left reading for a watch that is over."""
    before = set(threading.enumerate())  # an earlier test's idle threads in this process (a TUI's gw-record)
    watch = Watch(Target(sleeper.pid), [Counting(), Failing(), Exiting()], interval=0.1)
    asyncio.run(_collect(watch, 3))

    def left() -> list[str]:
        return [t.name for t in threading.enumerate() if t not in before and t.name.startswith("gw-")]

    deadline = time.monotonic() + 3
    while left() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not left()


def test_a_read_before_a_hung_one_on_its_thread_is_shown_then_late(sleeper):
    """Collectors that share a thread read back to back: one whose read ended before a thread-mate's
    read hung has its reading carried by the next frame (not held until the hung read returns), and
    the frames say its next read is late once that is past its deadline, not only "stalled" later."""

    class HangsSecond(Hung):
        field = "procs"

        def __init__(self):
            super().__init__()
            self.calls = 0

        def sample(self):
            self.calls += 1
            if self.calls >= 2:
                self.release.wait(20)
            return Unsupported(f"procs call {self.calls}")

    partner, hung = Counting(), HangsSecond()  # host, then procs, on the proc thread
    partner.timeout = 0.3
    watch = Watch(Target(sleeper.pid), [partner, hung], interval=0.2)
    frames = asyncio.run(_collect(watch, 8))
    hung.release.set()
    assert partner.calls == 2 and hung.calls == 2
    hosts = [f.host.reason for f in frames]
    assert "call 2" in hosts, hosts
    late = [r for r in hosts[hosts.index("call 2"):] if "a read took longer than" in r]
    assert late, hosts


def test_a_hung_nvml_call_does_not_hold_the_watch_closing(sleeper):
    """Closing the watch releases NVML (shutdown, GPM buffers) under the lock that every NVML call
    holds: with a call hung on the gw-nvml thread, the frames' end waited on it for good and
    gpuwatch could not exit (--duration, Ctrl-C, the job's exit). It waits CLOSE_WAIT_S at most."""
    from gpuwatch.collectors.gpu import GpuCollector
    from gpuwatch.collectors.nvml_session import NvmlSession
    from tests.fake_nvml import CAPTURE, FakeNvml

    fake = FakeNvml(CAPTURE)
    release, calls = threading.Event(), []
    power = fake.nvmlDeviceGetPowerUsage

    def hangs(h):  # the second tick's power read never returns
        calls.append(h)
        if len(calls) >= 2:
            release.wait(20)
        return power(h)

    fake.nvmlDeviceGetPowerUsage = hangs
    target = Target(sleeper.pid)
    watch = Watch(target, [GpuCollector(target, NvmlSession(nvml=fake, pid_map=lambda p: p), interval=0.2)],
                  interval=0.2)
    ended = threading.Event()
    threading.Thread(target=lambda: (asyncio.run(_collect(watch, 4)), ended.set()), daemon=True).start()
    try:
        assert ended.wait(6), "closing the watch waited for the hung NVML call"
    finally:
        release.set()
    assert len(calls) >= 2
