"""Replay recordings as a relaxed stack pace (gpuwatch/pace.py) would have sampled them, and
compare the verdicts tick by tick.

A recording holds the stack dumps that the live pace of its day took. Replayed here the way the
live pipeline runs (gpuwatch/pipeline.py: each frame through the analysis, then the pace from the
verdicts so far), every frame that follows a relaxed tick keeps only the dumps that the stack
collector (collectors/stacks.py) would take at the pace under test: its per-process credit, a
main process's rate times the rank budget times the pace factor a tick, and the same for the
workers. A dump comes out whole (its threads, its result, a torn read before its retry), so a
tick with no dump due is an empty sample, as the collector hands one out. The recording can only
give dumps it took: one that is due on a tick without one is taken at that process's next
recorded dump (late by a tick or so). ``phase`` is the credit the processes start from: each
of the ticks a relaxed dump can fall on is tried, as the recording's own dumps fell on some.

    python -m bench.relaxed_stacks [--main 0.25 --workers 0.125] [RECORDING ...]

prints, for each recording (by default every H200 recording in bench/results and tests/data/h200)
and each phase, the ticks whose stage, confidence, stall, candidate or pace differ from the replay
of the recording as taken, the dumps kept and dropped, and where bench.accuracy's phase markers lie
beside it, each phase's switch latency and ticks named right (bench.rescore's score).
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.accuracy import Tick, score, verdict_stage  # noqa: E402
from gpuwatch.analysis import Analysis  # noqa: E402
from gpuwatch.collectors.stacks import DEFAULT_RATE, DEFAULT_WORKER_RATE, MAX_DUMPS_PER_S  # noqa: E402
from gpuwatch.model.frame import Frame  # noqa: E402
from gpuwatch.model.procs import ROLE_MAIN, ROLE_WORKER as PROC_WORKER  # noqa: E402
from gpuwatch.model.stacks import ROLE_MAIN_THREAD, ROLE_WORKER, DumpResult, StackSample, ThreadStack  # noqa: E402
from gpuwatch.model.values import known  # noqa: E402
from gpuwatch.model.verdict import Verdict  # noqa: E402
from gpuwatch.pace import FULL, RELAXED, Pace, stack_pace  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H200_RECORDINGS = ("bench/results/2026-1[12]-0*-h200/**/*.jsonl.gz", "tests/data/h200/*.jsonl.gz")
LONGEST_RELAXED = (
    "bench/results/2026-12-03-h200/run11/self2/rec/tui.jsonl.gz",
    "bench/results/2026-12-03-h200/run11/self2/rec/json.jsonl.gz",
    "bench/results/2026-12-03-h200/run9/acc_switch/switch.jsonl.gz",
    "bench/results/2026-12-04-h200/run31/accuracy/switch.jsonl.gz",
    "bench/results/2026-12-02-h200/run3/acc_long/healthy.jsonl.gz",
    "tests/data/h200/field_tokenize_workers.jsonl.gz",
)
"""The H200 recordings that run relaxed longest: the steady benchmark job (relaxed 79 of 90 ticks),
two switch runs, two minutes of a healthy job and the tokenize job. The replay tests of what the
relaxed pace reads less often run on these in CI, and on every recording from their ``main()``."""


@dataclass(frozen=True, slots=True)
class Dump:
    """One py-spy dump out of a stack sample: its results (a torn read, then the retry) and threads."""

    pid: int
    results: tuple[DumpResult, ...]
    threads: tuple[ThreadStack, ...]


@dataclass(frozen=True, slots=True)
class TickOutcome:
    """What a replayed tick decided: the parts of the verdict a pace must leave alone, and the pace."""

    wall: float
    stage: str
    confidence: float
    stall: object
    candidate: str | None
    relaxed: bool
    """The pace after this tick (the next tick's dumps follow it)."""

    def verdict(self) -> tuple:
        return self.stage, self.confidence, self.stall, self.candidate


def dumps_of(sample: StackSample) -> list[Dump]:
    """The sample's dumps in the order taken. The collector appends each dump's threads in turn,
    so a dump's threads are the next run of its process's threads; a run ends where a thread id
    comes again (two dumps of one process in a row). A failed read has no threads and goes with
    the next dump of its process (the collector's retry of a torn read)."""
    out: list[Dump] = []
    threads = list(sample.threads)
    k = 0
    pending: list[DumpResult] = []
    for r in sample.dumps:
        if not r.ok:
            pending.append(r)
            continue
        mine: list[ThreadStack] = []
        tids: set[int] = set()
        while k < len(threads) and threads[k].pid == r.pid and threads[k].tid not in tids:
            tids.add(threads[k].tid)
            mine.append(threads[k])
            k += 1
        same = [p for p in pending if p.pid == r.pid]
        pending = [p for p in pending if p.pid != r.pid]
        out.append(Dump(r.pid, (*same, r), tuple(mine)))
    out.extend(Dump(p.pid, (p,), ()) for p in pending)  # given up on: a dump of its own
    if k < len(threads):  # threads no result accounts for (not written by today's collector): keep them
        out.append(Dump(threads[k].pid, (), tuple(threads[k:])))
    return out


class Thinner:
    """The stack collector's credit at ``pace``, spent on the dumps a recording holds."""

    def __init__(self, pace: Pace, phase: float = 0.0) -> None:
        self.pace = pace
        self.phase = phase
        self._main: dict[int, float] = {}
        self._workers: dict[int, float] = {}
        self.kept = 0
        self.dropped = 0

    def sample(self, frame: Frame, relaxed: bool) -> object:
        """The frame's stack sample as taken at ``pace`` (relaxed) or as recorded (full pace)."""
        s = frame.stacks
        if not isinstance(s, StackSample):
            return s
        dumps = dumps_of(s)
        mains, main_of = _tree(frame, dumps)
        with_workers = set(main_of.values())
        want = len(mains) * DEFAULT_RATE + len(with_workers) * DEFAULT_WORKER_RATE
        budget = min(1.0, MAX_DUMPS_PER_S / want) if want > 0 else 0.0
        pace = self.pace if relaxed else FULL
        due_main = {m: self._add(self._main, m, DEFAULT_RATE * frame.interval * budget * pace.main) for m in mains}
        due_workers = {m: self._add(self._workers, m, DEFAULT_WORKER_RATE * frame.interval * budget * pace.workers)
                       for m in with_workers}
        if not relaxed:  # as recorded; the credit keeps the fraction the collector's would
            for credit, due in ((self._main, due_main), (self._workers, due_workers)):
                for pid, n in due.items():
                    credit[pid] -= n
            return s
        keep: list[Dump] = []
        for d in dumps:
            if d.pid in mains:
                credit, due = self._main, due_main
                owner = d.pid
            else:
                credit, due = self._workers, due_workers
                owner = main_of.get(d.pid, d.pid)
            if due.get(owner, 0) > 0:
                due[owner] -= 1
                credit[owner] -= 1
                keep.append(d)
                self.kept += 1
            else:
                self.dropped += 1
        for credit in (self._main, self._workers):  # due, but the recording had none: the next one it has
            for pid in credit:
                credit[pid] = min(credit[pid], 1.0)
        return dataclasses.replace(s, threads=tuple(t for d in keep for t in d.threads),
                                   dumps=tuple(r for d in keep for r in d.results))

    def _add(self, credit: dict[int, float], pid: int, add: float) -> int:
        c = credit.get(pid, self.phase) + add
        credit[pid] = c
        return int(c + 1e-9)


def _tree(frame: Frame, dumps: Sequence[Dump]) -> tuple[set[int], dict[int, int]]:
    """The main processes and each worker's main: from the process table, else from the threads' roles."""
    mains: set[int] = set()
    main_of: dict[int, int] = {}
    if known(frame.procs):
        for p in frame.procs.processes:  # type: ignore[union-attr]
            if p.role == ROLE_MAIN:
                mains.add(p.pid)
            elif p.role == PROC_WORKER and p.main_pid is not None:
                main_of[p.pid] = p.main_pid
    for d in dumps:
        if any(t.role == ROLE_MAIN_THREAD for t in d.threads):
            mains.add(d.pid)
    for d in dumps:  # a worker the process table does not show: the first main's
        if d.pid not in mains and d.pid not in main_of and any(t.role == ROLE_WORKER for t in d.threads):
            main_of[d.pid] = min(mains) if mains else d.pid
    return mains, main_of


def paced_replay(frames: Iterable[Frame], rewrite: Callable[[Frame, bool], Frame] | None = None,
                 lag: int = 1) -> Iterator[tuple[Frame, Verdict, bool]]:
    """Each frame through the analysis and the stack pace as the live pipeline runs them:
    ``(frame as analysed, its verdict, relaxed after it)``. ``rewrite(frame, relaxed)`` first turns a
    recorded frame into what the collectors would read at the pace ``lag`` ticks back (1: the pace
    set after the previous tick's verdict). The replay tests of what the relaxed pace reads less
    often all run on this."""
    analysis = Analysis()
    paces = [False] * lag
    for f in frames:
        if rewrite is not None:
            f = rewrite(f, paces[-lag])
        v = analysis.update(f)
        relaxed = stack_pace(analysis.verdicts, analysis.frames) != FULL
        paces.append(relaxed)
        yield f, v, relaxed


def per_sample(field: str, read: Callable[[object, bool], object]) -> Callable[[Frame, bool], Frame]:
    """A ``paced_replay`` rewrite of the GPU or PCIe samples (``field``: "gpus" or "pcie"): each
    sample turned by ``read(sample, relaxed)`` once, as a frame may show a sample again."""
    seen: dict[tuple[int, float], object] = {}

    def rewrite(f: Frame, relaxed: bool) -> Frame:
        samples = getattr(f, field)
        if not isinstance(samples, tuple):
            return f
        out = []
        for s in samples:
            key = (s.index, s.t)
            if key not in seen:
                seen[key] = read(s, relaxed)
            out.append(seen[key])
        return dataclasses.replace(f, **{field: tuple(out)})

    return rewrite


def verdicts(frames: Iterable[Frame], rewrite: Callable[[Frame, bool], Frame] | None = None) -> list[tuple]:
    """The whole verdict but its time (outcome, sentence, evidence, secondary stages, remedies,
    levels) per frame of a ``paced_replay``: what the replay tests of a relaxed read compare."""
    return [(outcome(v, relaxed), v.sentence, v.evidence, v.secondary, v.remedies, v.levels)
            for _, v, relaxed in paced_replay(frames, rewrite)]


def before_after(path: str, rewrite: Callable[[Frame, bool], Frame]) -> tuple[list[tuple], list[tuple]]:
    """A recording's ``verdicts`` (``path`` under the repository) as recorded and with ``rewrite``."""
    from gpuwatch.replay import load_frames  # noqa: PLC0415 - as main() does

    frames = list(load_frames(os.path.join(ROOT, path)))
    return verdicts(frames), verdicts(frames, rewrite)


def outcome(v: Verdict, relaxed: bool) -> tuple:
    """(stage, confidence, stall, candidate, relaxed after the tick): what the replay tests compare."""
    return v.stage, round(v.confidence, 3), v.stall, v.candidate, relaxed


def replay(frames: Iterable[Frame], pace: Pace | None, phase: float = 0.0,
           lag: int = 1) -> tuple[list[TickOutcome], Thinner | None]:
    """Each frame's outcome, the stacks thinned to ``pace`` (None: as recorded) after a relaxed
    tick. ``lag``: the frame whose stacks the pace after a verdict first sets, counted from that
    verdict's frame. 1: the next, as a relaxed stack read (a dump or none, milliseconds) starts just
    before its tick (engine.aligned_start), after the verdict; 2: the one after, should the read
    have started before the verdict."""
    thinner = Thinner(pace, phase) if pace is not None else None
    seen: dict[float, object] = {}

    def thin(f: Frame, relaxed: bool) -> Frame:
        s = f.stacks
        if thinner is None or not isinstance(s, StackSample):
            return f
        if s.t not in seen:  # a frame may carry a sample again: thin it once
            seen[s.t] = thinner.sample(f, relaxed)
        return dataclasses.replace(f, stacks=seen[s.t])

    out = [TickOutcome(f.wall, *outcome(v, relaxed)) for f, v, relaxed in paced_replay(frames, thin, lag)]
    return out, thinner


def phases(pace: Pace) -> list[float]:
    """The credits a main process can start relaxing from, one for each tick a dump can fall on."""
    n = max(1, round(1 / (DEFAULT_RATE * pace.main)))
    return [k / n for k in range(n)]


def scored(outcomes: Sequence[TickOutcome], markers: list[dict]) -> dict:
    """bench.accuracy's score of the replayed verdicts against a run's phase markers."""
    return score(markers, [Tick(o.wall, verdict_stage({"stage": o.stage, "confidence": o.confidence}), o.confidence,
                                o.candidate) for o in outcomes])


def recordings(patterns: Sequence[str] = H200_RECORDINGS) -> list[str]:
    """The recordings under the repository that ``patterns`` name (start-up traces left out)."""
    found = {os.path.relpath(p, ROOT) for pat in patterns for p in glob.glob(os.path.join(ROOT, pat), recursive=True)}
    return sorted(p for p in found if not os.path.basename(p).startswith("marks"))


def markers_of(path: str) -> list[dict] | None:
    """The phase markers bench.accuracy saved beside a recording (accuracy.json), if any."""
    saved = os.path.join(ROOT, os.path.dirname(path), "accuracy.json")
    scenario = os.path.basename(path).split(".")[0]
    if not os.path.exists(saved):
        return None
    with open(saved) as f:
        results = json.load(f).get("results", [])
    return next((r.get("markers_seen") for r in results if r.get("scenario") == scenario), None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", help="recordings (default: every H200 recording)")
    p.add_argument("--main", type=float, default=RELAXED.main, help="the main processes' pace factor (default: RELAXED's)")
    p.add_argument("--workers", type=float, default=RELAXED.workers, help="the workers' pace factor (default: RELAXED's)")
    p.add_argument("--lag", type=int, default=1, help="frames from a verdict to the first stacks its pace sets (default 1)")
    ns = p.parse_args(argv)
    pace = Pace(ns.main, ns.workers)
    from gpuwatch.replay import load_frames  # noqa: PLC0415

    ticks = differ = 0
    for path in ns.paths or recordings():
        frames = list(load_frames(os.path.join(ROOT, path)))
        recorded, _ = replay(frames, None)
        markers = markers_of(path)
        for phase in phases(pace):
            got, thinner = replay(frames, pace, phase, ns.lag)
            assert thinner is not None
            diff = [(k, a, b) for k, (a, b) in enumerate(zip(recorded, got)) if (a.verdict(), a.relaxed) != (b.verdict(), b.relaxed)]
            ticks += len(got)
            differ += len(diff)
            line = (f"{path} phase {phase:.2f}: {len(got)} ticks, relaxed {sum(o.relaxed for o in recorded)} -> "
                    f"{sum(o.relaxed for o in got)}, dumps kept {thinner.kept} dropped {thinner.dropped}, {len(diff)} ticks differ")
            if markers:
                before, after = scored(recorded, markers), scored(got, markers)
                line += (f"; latency {[m['latency_s'] for m in before['markers']]} -> {[m['latency_s'] for m in after['markers']]}"
                         f", right {[m['right'] for m in before['markers']]} -> {[m['right'] for m in after['markers']]}")
            print(line)
            for k, a, b in diff:
                print(f"  tick {k}: {a.verdict()} relaxed={a.relaxed} -> {b.verdict()} relaxed={b.relaxed}")
    print(f"{differ} of {ticks} replayed ticks differ from the verdicts on the recording as taken")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
