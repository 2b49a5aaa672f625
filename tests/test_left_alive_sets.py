"""Worker sets told by the workers' start times, and sets a job leaves alive.

A job that keeps each worker exception (``errors.append(e)``) keeps its old iterator, whose workers
live on asleep beside each new loader's (tests/data/cpu_field/retry_loader.jsonl.gz: 2 workers at
the first tick, 26 in 13 sets of 2 at the last). Counted by the tick they were first seen in, sets
started within a second read as one ("2 + 4 + 2 + ...") and all the sets alive before the watch
began as one; the remedies told the job "The 4 workers already fill the 2 usable CPUs" and, with
no set replaced, "no set was re-created while gpuwatch watched".
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.phases import largest_set, sets_left_alive, worker_sets, workers_outlive_window
from gpuwatch.diagnosis.timeline import Tick, timeline
from gpuwatch.model.procs import ROLE_WORKER
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

RETRY = "tests/data/cpu_field/retry_loader.jsonl.gz"


def test_sets_are_told_by_start_time_in_a_real_recording():
    ticks = timeline(load_frames(RETRY), None)
    assert largest_set(ticks) == 2
    assert worker_sets(ticks) == (2,) * 13
    left = sets_left_alive(ticks)
    assert left is not None and left[0] == 12 and left[1] == (2,) * 13


def test_the_remedies_name_the_loader_num_workers_and_the_sets_left_alive():
    frames = load_frames(RETRY)
    a = Analysis()
    vs = [a.update(f) for f in frames]
    said = [r for v in vs for r in v.remedies]
    assert not any(re.search(r"The [3-9]\d* workers|num_workers (above|from) (?!2\b)\d+", r) for r in said), said
    # the first set alone until tick 10; from the third new set beside it (PILED_SETS - 1 with none
    # replaced: more than a job's own validation and test loaders add) the pile-up is said
    started = next(i for i, f in enumerate(frames) if len(worker_sets(timeline(frames[:i + 1], None))) > 1)
    assert started == 10
    piled = next(i for i in range(len(frames)) if sets_left_alive(timeline(frames[:i + 1], None)) is not None)
    assert piled - started < 10, (started, piled)
    assert not any("no set was re-created" in r for v in vs[piled:] for r in v.remedies)
    assert all(any(r.startswith("Release the DataLoader iterators") for r in v.remedies) for v in vs[piled:])
    last = vs[-1]
    assert any(r.startswith("Release the DataLoader iterators the job no longer uses: 12 new sets of workers")
               and "(26 workers in 13 sets of 2 now)" in r for r in last.remedies), last.remedies
    assert "26 DataLoader workers in 13 sets of 2" in last.sentence
    md = render_markdown(build_report(from_frames(frames), NOT_RECORDED, "replay", path=RETRY))
    assert "| WARN | DataLoader workers fit the CPUs" not in md and "lower num_workers" not in md
    assert "26 DataLoader workers in 13 sets of 2 (each forked together" in md


def _ticks(starts: list[list[tuple[int, float]]]) -> list[Tick]:
    return [Tick(t=float(i), dt=1.0, workers=frozenset(p for p, _ in live), worker_started=tuple(sorted(live)))
            for i, live in enumerate(starts)]


def test_workers_forked_together_are_one_set_and_sets_apart_are_two():
    one = [(10, 100.00), (11, 100.02), (12, 100.05), (13, 100.09)]  # one loop of forks
    other = [(20, 100.60), (21, 100.62)]  # a later iterator, 0.5 s on, seen in the same first tick
    ticks = _ticks([one + other, one + other])
    assert worker_sets(ticks) == (4, 2) and largest_set(ticks) == 4
    assert sets_left_alive(ticks) is None  # nothing started while watched


def test_without_start_times_the_first_tick_is_one_set():
    """Older recordings (no start times) and spawned workers keep the tick rule."""
    ticks = [replace(t, worker_started=()) for t in _ticks([[(10, 0.0), (11, 0.0), (20, 5.0), (21, 5.0)]] * 2)]
    assert worker_sets(ticks) == (4,)


def test_spawned_workers_are_not_split_by_start_time():
    """A spawned worker starts after its dataset pickles: seconds apart within one set."""
    frames = load_frames(RETRY)
    f = frames[-1]
    rows = tuple(replace(p, cmdline="python -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)")
                 if p.role == ROLE_WORKER else p for p in f.procs.processes)
    spawned = replace(f, procs=replace(f.procs, processes=rows))
    ticks = timeline([spawned], None)
    assert ticks[0].worker_started == () and worker_sets(ticks) == (26,)


def test_a_persistent_validation_set_is_not_sets_left_alive():
    train = [(10, 100.0), (11, 100.01)]
    val = [(20, 130.0), (21, 130.01)]
    ticks = _ticks([train, train, train + val, train + val])
    assert worker_sets(ticks) == (2, 2)
    assert sets_left_alive(ticks) is None


def test_workers_that_lived_through_the_minute_are_not_told_to_be_kept():
    """Trial 26: "persistent_workers=True, if the job's epochs re-create its workers" to jobs that set it.
    Workers alive through a whole minute with none added point at no restart cost."""
    live = [(10, 100.0), (11, 100.01)]
    minute = [replace(t, t=float(i)) for i, t in enumerate(_ticks([live] * 60))]
    assert workers_outlive_window(minute)
    assert not workers_outlive_window(minute[:30])  # half a minute: an epoch may still end
    joined = minute[:40] + [replace(t, workers=t.workers | {20}) for t in minute[40:]]
    assert not workers_outlive_window(joined)


def test_sets_piling_up_beside_a_few_replaced_ones_are_said_as_such():
    """Trial 26: a job kept every iterator (a new set of 2 each second) while a few crashed and were
    replaced. The epochs read only "re-created every ~2.0 s (18 times in 39 s)"; ~3 sets had died
    and ~36 lived on. A pile-up beside replaced sets needs PILED_SETS new sets alive (a job's own
    three persistent loaders add three, once), and the epochs name it with the replacements."""
    from gpuwatch.diagnosis.phases import find, phases
    from gpuwatch.diagnosis.sentence import epochs
    from gpuwatch.diagnosis.thresholds import PILED_SETS
    from gpuwatch.model.verdict import RESPAWN

    def sets(k: int) -> list[tuple[int, float]]:
        return [(100 + 2 * k, 10.0 * k), (101 + 2 * k, 10.0 * k + 0.01)]

    alive = sets(0) + sets(1)
    seq = [list(alive)]
    for k in range(2, 2 + PILED_SETS + 2):
        if k == 3:
            alive = [w for w in alive if w[0] not in (100, 101)]  # the first set crashed
        alive = alive + sets(k)
        seq.append(list(alive))
    ticks = _ticks(seq)
    left = sets_left_alive(ticks)
    assert left is not None and left[0] == PILED_SETS + 2
    ps = phases(ticks)
    assert find(ps, RESPAWN) is not None and find(ps, RESPAWN).count == 1
    said = epochs(ps)
    assert "new set of DataLoader workers replaced the last one (once in" in said, said
    assert f"{PILED_SETS + 2} new sets of DataLoader workers started in" in said and "stayed alive" in said, said
    # three loaders of the job's own, each joining once beside one replacement: no pile-up
    assert sets_left_alive(_ticks(seq[:4])) is None
