"""The job's epoch structure over the last minute: worker re-creation, first-batch waits,
validation passes and checkpoint saves, each with its count, share of the time and period.

- respawn: new DataLoader worker processes replaced earlier ones (worker_births.py says how a
  re-creation is told: by the births of new worker PIDs, one or two ticks a re-creation):
  ``persistent_workers=False`` re-creates them for every pass over a loader (PyTorch DataLoader
  internals), and a validation loader brings its own.
- epoch_start: after new workers appear (or while the main thread sits in the DataLoader's
  worker start-up), the ticks in which the main thread waits for data most of its samples, up to
  the first batch (a main-thread sample out of the wait): the wait for the first batches, which a
  fresh set of workers must build from scratch. Not when the main thread goes on waiting through
  most of the set's life: then it is the input's steady pace (a decode-bound set), not a start-up
  cost (the CPU demo's decode phase, one worker for 20 s, read "~19.2 s for its first batches").
- validation: ticks in which most main-thread samples are inside an evaluation pass
  (gpuwatch/model/evaluation.py).
- checkpoint: main-thread samples in torch.save & co. (stack_labels.CHECKPOINTS); where no stack
  sample covers a tick, a write burst of the main process (CHECKPOINT_WRITE_BPS) stands in, unless
  a sampled tick shows the process writing that fast while its main thread does not save.

A tick is found in a phase by most of its main-thread samples, but it counts for the share of its
samples in the phase (its waiting samples for a first-batch wait, its evaluation samples for a
validation pass), not as a whole tick: at two samples a tick, a 0.1 s pass that one sample landed
in would otherwise count 1 s. Run 25 on the H200, against what each job timed of itself: the
ImageFolder jobs' validation share 19/48/42 % counted by whole ticks, 15/36/32 % by samples, 15/33/32 %
timed; the Lightning job's first-batch waits 40 % by whole ticks (above its whole data wait of
32 %), 20 % by samples, 19 % timed (its whole fetch time).

What the ticks cannot tell is said as such: a phase lasting under PHASE_MIN_TICKS ticks on average
in ticks it only partly filled gets no duration or period (``each_s`` and ``period_s`` None: a pass shorter than a tick is seen only in the
ticks one of whose samples landed in it, so the ticks that caught one say neither how long it is
nor how often it comes: Lightning's 36 validation passes in 25 s read "~1.0 s every ~4.0 s"), and
workers re-created at about every tick (a median period under 1.5 ticks: no tick is without one)
get no period (``period_s`` None with two or more starts), their count being then a lower bound:
at most one re-creation a tick is seen (Lightning's 72 sets in 25 s read "every ~1.0 s, 24 times").
Nor is a period said where the starts do not cover the span it would be said over (``sparse``:
bunched late in the minute, or too few for their interval; _covers): "every ~5.0 s (2 times in
44 s)" cannot both hold, so the count alone is said.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from statistics import median

from gpuwatch.diagnosis.thresholds import (
    ALIGNED_WAIT,
    CHECKPOINT_WRITE_BPS,
    EVERY_TICK,
    PERIOD_COVER,
    PERIOD_SPREAD,
    PHASE_MIN_SHARE,
    PHASE_MIN_TICKS,
    PHASE_WINDOW_S,
    PILED_SETS,
)
from gpuwatch.diagnosis.timeline import Tick
from gpuwatch.diagnosis.worker_births import recreations
from gpuwatch.diagnosis.worker_sets import split_by_start
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import CHECKPOINT, EPOCH_START, LEFT_ALIVE, RESPAWN, VALIDATION, Phase


def phases(ticks: Sequence[Tick]) -> tuple[Phase, ...]:
    if len(ticks) < 2:
        return ()
    span = sum(t.dt for t in ticks[1:])
    if span <= 0:
        return ()
    out: list[Phase] = []
    tick = median(t.dt for t in ticks[1:])
    recs = recreations([t.workers for t in ticks])
    if recs:
        times = [ticks[r[0]].t for r in recs]
        # a set of workers lives a tick or more, so each is seen: gaps in turn are two loaders' sets
        period, uneven, missed = _period(times, tick, all_seen=True)
        sparse = False
        if period is not None and period < EVERY_TICK * tick:
            period = None  # about every tick: the true pace may be faster (see the module's note)
        elif period is not None and not _covers(times, period, span, ticks[0].t):
            period, sparse = None, True
        out.append(Phase(RESPAWN, len(recs), None, period, None, span, uneven, sparse,
                         missed if period is not None else 0))
    runs = _epoch_starts(ticks, recs)
    if _steady_wait(ticks, runs):
        runs = []  # it waits as much mid-epoch: the first batches are no special cost, just the input
    out += _from_runs(EPOCH_START, ticks, runs, span, tick, _wait_outside_validation)
    out += _from_runs(VALIDATION, ticks, _runs(ticks, in_validation, _unsampled), span, tick,
                      lambda t: t.validation / t.n_main if t.n_main else 0.0)
    bursts = not _writes_without_saving(ticks)
    ckpt = _runs(ticks, lambda t: _saving(t, bursts))
    share = _checkpoint_share(ticks, span, bursts)
    saves = _from_runs(CHECKPOINT, ticks, ckpt, span, tick, None, share)
    if saves and all(ticks[k].stacks for a, b in ckpt for k in range(a, b + 1)) and all(
            sum(ticks[k].main[lb.CHECKPOINT] for k in range(a, b + 1)) <= 1 for a, b in ckpt):
        # One stack sample a save: it lasted anything under about two of the samples' spacings, so
        # no duration is said (trial 27: a 0.05 s save read "~0.5 s", half its tick's two samples).
        saves = [replace(p, each_s=None) for p in saves]
    out += saves
    left = sets_left_alive(ticks, recs)
    if left is not None:
        out.append(Phase(LEFT_ALIVE, left[0], None, None, None, left[2]))
    return tuple(p for p in out if p.kind in (RESPAWN, LEFT_ALIVE) or (p.share or 0.0) >= PHASE_MIN_SHARE)


def find(ps: Sequence[Phase], kind: str) -> Phase | None:
    return next((p for p in ps if p.kind == kind), None)


def every_tick(phases: Sequence[Phase]) -> bool:
    """Sets of workers re-created about every tick or more often (a RESPAWN phase with two or more
    starts and no period, neither uneven nor sparse): its count is a floor, at most one a tick seen."""
    p = find(phases, RESPAWN)
    return p is not None and p.period_s is None and p.count >= 2 and not p.uneven and not p.sparse


def saves_missed(p: Phase | None) -> bool:
    """Where the period says more passes or saves came than the stack samples caught (Phase.missed),
    the share counts only those caught: a floor. "Saves take 7 % of the time (~0.5 s every ~4.6 s)"
    did not add up (0.5 / 4.6 is 11 %; the job's clock said 16 %; trial 32)."""
    return p is not None and bool(p.missed) and p.period_s is not None


def worker_sets(ticks: Sequence[Tick], at: int | None = None) -> tuple[int, ...]:
    """Sizes of the sets of DataLoader workers alive together at tick ``at`` (default: the latest
    tick with workers), one set a loader, oldest first (_sets says how a set is told)."""
    live = ticks[at].workers if at is not None else next((t.workers for t in reversed(ticks) if t.workers), frozenset())
    return tuple(n for n in (len(g & live) for g in _sets(ticks)) if n)


def sets_left_alive(ticks: Sequence[Tick], recs: list[tuple[int, ...]] | None = None
                    ) -> tuple[int, tuple[int, ...], float] | None:
    """(new sets still alive, the sets alive at the end, seconds) where new sets of workers kept
    starting beside the earlier ones, which lived on: PILED_SETS - 1 or more started after the first
    tick with workers and are alive at the end, with three or more sets alive then; where other sets
    were replaced (worker_births.recreations: crashed iterators, epochs), PILED_SETS or more. A validation
    loader with persistent_workers=True adds one set, once; sets that keep piling up are iterators
    the job made anew while something still holds the old ones (a kept exception's traceback holds
    its iterator's frames: tests/data/cpu_field/retry_loader.jsonl.gz). None otherwise. ``recs``:
    the ticks' re-creations where the caller has them already (phases)."""
    with_workers = [i for i, t in enumerate(ticks) if t.workers]
    if not with_workers:
        return None
    at_first, live = ticks[with_workers[0]].workers, ticks[with_workers[-1]].workers
    # none of it alive at the first tick with workers, some of it at the last
    kept = [g for g in _sets(ticks) if not g & at_first and g & live]
    alive = worker_sets(ticks)
    # A replaced set is new too: beside replacements the job's own loaders may show one more
    if recs is None:
        recs = recreations([t.workers for t in ticks])
    need = PILED_SETS if recs else PILED_SETS - 1
    if len(kept) < need or len(alive) < 3:
        return None
    return len(kept), alive, ticks[with_workers[-1]].t - ticks[with_workers[0]].t


def largest_set(ticks: Sequence[Tick]) -> int:
    """The most workers one set had: one loader's num_workers (0 without workers). Where loaders
    re-create their workers, the window's mean count mixes a new set with none alive (run 25's
    ImageFolder job, 14 workers a set, read 10)."""
    return max((len(g) for g in _sets(ticks)), default=0)


def pid_sets(ticks: Sequence[Tick]) -> tuple[frozenset[int], ...]:
    """The worker PIDs of each set seen over ``ticks``, oldest first (_sets)."""
    return _sets(ticks)


def _sets(ticks: Sequence[Tick]) -> tuple[frozenset[int], ...]:
    """The worker PIDs of each set seen, oldest first. A DataLoader forks all its workers at once
    when its iterator is made, so a set is the workers first seen in one tick, or in two ticks in a
    row while the first part lives on (a procs sample can land while the set is being forked: run
    25's ImageFolder job saw its 14 workers as 4 + 10, 1 + 13, 7 + 7). A set that joins the live ones later, while they live on, is
    another loader's: a validation loader with persistent_workers=True keeps its own (run 25:
    2 + 2, 14 + 14). Two loaders whose sets start a tick apart read as one set (Lightning's 2 + 2
    read 4). Where the workers' start times are known (forked workers: Tick.worker_started), a set
    whose workers started more than SET_GAP_S apart is split there: the sets alive before the watch
    began are all first seen in its first tick, and sets started within a second of each other in
    one tick or two (a job whose crashed iterators stayed alive: 26 workers in sets of 2 read as
    2 + 4 + 2 + 2 + 2 + 4 + 4 + 4 + 2). The count may miss a split (sets started within
    SET_GAP_S), and splits one loader's workers only where a fork took longer than that."""
    key = tuple(ticks)
    if key == _LAST_SETS[0]:  # compared item by item, by identity first: a few microseconds
        return _LAST_SETS[1]
    out = _find_sets(ticks)
    _LAST_SETS[:] = [key, out]
    return out


_LAST_SETS: list = [(), ()]
"""The last ticks _sets read and its answer. A tick's diagnosis asks for the sets of the same
minute about eighteen times (worker_sets and largest_set in each input stage's facts, each
decision), and the answer depends on the ticks' values only, so equal ticks may share it."""


def _find_sets(ticks: Sequence[Tick]) -> tuple[frozenset[int], ...]:
    first: dict[int, int] = {}
    for i, t in enumerate(ticks):
        for pid in t.workers:
            first.setdefault(pid, i)
    by_tick: dict[int, set[int]] = {}
    for pid, i in first.items():
        by_tick.setdefault(i, set()).add(pid)
    out: list[tuple[int, set[int]]] = []
    for start in sorted(by_tick):
        # The rest of a set forked across a sample: one tick after its first part, which still
        # lives (a set spans two ticks at most; sets that come and go within a tick stay apart).
        if out and out[-1][0] == start - 1 and out[-1][1] <= ticks[start].workers:
            out[-1][1].update(by_tick[start])
            out[-1] = (start + 1, out[-1][1])  # closed: nothing more joins it
        else:
            out.append((start, by_tick[start]))
    started = {pid: at for t in ticks for pid, at in t.worker_started}
    return tuple(part for _, g in out for part in split_by_start(g, started))


def workers_survive_epochs(ps: Sequence[Phase]) -> bool:
    """A validation pass was seen and no set of workers was replaced: the workers lived through an
    epoch boundary, so they are kept already (persistent_workers=True, or one loader that never
    ends); advice to keep them would not apply."""
    return find(ps, VALIDATION) is not None and find(ps, RESPAWN) is None


def workers_outlive_window(ticks: Sequence[Tick]) -> bool:
    """Every worker of the first tick lived through to the last, over a whole minute
    (PHASE_WINDOW_S, less a tenth for the ticks' spacing) and with none added: kept workers, or a
    loader whose epochs are longer than a minute, where a restart's first batches are a small
    share of an epoch. Advice to keep the workers would point at no cost that was seen (trial 26:
    "persistent_workers=True, if the job's epochs re-create its workers" to jobs that set it)."""
    if len(ticks) < 2 or not ticks[0].workers or ticks[-1].t - ticks[0].t < 0.9 * PHASE_WINDOW_S:
        return False
    return all(t.workers == ticks[0].workers for t in ticks)


def periodic(p: Phase | None) -> bool:
    """Seen at least twice: a recurring part of the job, not a one-off."""
    return p is not None and p.count >= 2


def _epoch_starts(ticks: Sequence[Tick], recs: list[tuple[int, ...]]) -> list[tuple[int, int]]:
    """(first, last) tick of each first-batch wait: from a tick new workers showed in (or a tick in
    the workers' start-up) on, while the main thread waits most of its samples, until its first
    batch comes: the first tick after the one the new workers showed in with a main-thread sample
    out of the data wait (it got a batch and trains) is the wait's last. A wait whose workers go on
    to keep the main thread waiting most of their later ticks is no first-batch wait: they are busy
    producing batches the main thread waits for all along (a decode-bound set), so the first batch
    is no special cost.

    Each tick of a re-creation (``recs``, worker_births.recreations) is a begin: in one spread over
    two ticks each brings a set that builds its first batches (Lightning's validation pair, then the
    next epoch's training pair, whose first batch the main thread waits for in the second tick). A
    wait is ended by the next re-creation (or start-up tick), not by the second tick of its own."""
    group = {i: k for k, rec in enumerate(recs) for i in rec}
    begins = sorted(set(group) | {i for i, t in enumerate(ticks) if t.starting})
    out: list[tuple[int, int]] = []
    for k, b in enumerate(begins):
        if out and b <= out[-1][1] + 1:
            continue
        # The next start ends this one: the next begin outside this one's re-creation.
        mine = group.get(b)
        stop = next((x for x in begins[k + 1:] if mine is None or group.get(x) != mine), len(ticks))
        # The tick before the new workers show may already be the wait (they start mid-tick).
        first = b - 1 if b > 0 and _waiting(ticks[b - 1]) and not ticks[b - 1].workers else b
        j = first
        while j < stop and (_waiting(ticks[j]) or (j == b and ticks[j].starting)):
            j += 1
            # In the tick the workers showed in, a sample out of the wait may predate them.
            if j - 1 > b and _served(ticks[j - 1]):
                break
        if j > first and not _waits_on(ticks, b, j, stop):
            out.append((first, j - 1))
    return out


def _served(t: Tick) -> bool:
    """A main-thread sample of the tick is out of the data wait: a batch came."""
    return t.stacks and (t.wait or 0.0) < 1.0


def _waits_on(ticks: Sequence[Tick], begin: int, end: int, stop: int) -> bool:
    """The main thread waits in most sampled ticks the set of workers that appeared at ``begin``
    lives through after its first batch (from ``end`` to ``stop``); False when none is sampled."""
    own = next((t.workers for t in ticks[begin:stop] if t.workers), frozenset())
    later = [t for t in ticks[end:stop] if t.stacks and t.workers & own]
    return _mostly_waiting(later)


def _steady_wait(ticks: Sequence[Tick], runs: list[tuple[int, int]]) -> bool:
    """The main thread waits in most sampled ticks outside the first-batch waits too."""
    inside = {k for a, b in runs for k in range(a, b + 1)}
    return _mostly_waiting([t for k, t in enumerate(ticks) if k not in inside and t.stacks])


def _mostly_waiting(ts: Sequence[Tick]) -> bool:
    return bool(ts) and sum(_waiting(t) for t in ts) * 2 >= len(ts)


def _waiting(t: Tick) -> bool:
    return t.stacks and (t.wait or 0.0) >= ALIGNED_WAIT


def in_validation(t: Tick) -> bool:
    """Most of the tick's main-thread samples are inside an evaluation pass."""
    return t.stacks and t.validation * 2 >= t.n_main > 0


def _saving(t: Tick, bursts: bool = True) -> bool:
    if t.stacks:
        return t.main[lb.CHECKPOINT] > 0
    return bursts and (t.main_write_bps or 0.0) >= CHECKPOINT_WRITE_BPS


def _writes_without_saving(ticks: Sequence[Tick]) -> bool:
    """A tick whose stack samples show the main thread not saving while the process writes at a
    save's rate: its writes are another thread's (a logger, an uploader), so a write burst in a tick
    no sample covers is no sign of a save (trial 25: a TensorBoard-like writer thread at 80-100 MB/s
    read "a checkpoint save (~1.0 s) was seen once" in a job that saved none)."""
    return any(t.stacks and t.n_main and not t.main[lb.CHECKPOINT]
               and (t.main_write_bps or 0.0) >= CHECKPOINT_WRITE_BPS for t in ticks)


def _checkpoint_share(ticks: Sequence[Tick], span: float, bursts: bool = True) -> float:
    """Seconds saving: each tick's share of main samples in a save (or the whole tick of a write
    burst where no stack sample covers it, unless ``bursts`` is off: _writes_without_saving), over
    the span."""
    total = 0.0
    for t in ticks[1:]:
        if t.stacks:
            total += t.dt * (t.share(lb.CHECKPOINT) or 0.0)
        elif bursts and (t.main_write_bps or 0.0) >= CHECKPOINT_WRITE_BPS:
            total += t.dt
    return total / span


def _runs(ticks: Sequence[Tick], inside, bridge=None) -> list[tuple[int, int]]:
    """Runs of consecutive ticks ``inside`` the phase; ``bridge``: ticks that say nothing either way
    (no stack sample came in them) and join a run to the next inside tick after them."""
    out: list[tuple[int, int]] = []
    gap = 0
    for i, t in enumerate(ticks):
        if not inside(t):
            gap = (gap + 1 if bridge is not None and bridge(t) and out and out[-1][1] == i - 1 - gap
                   and gap < BRIDGE_TICKS else 0)
            continue
        if out and out[-1][1] >= i - 1 - gap:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
        gap = 0
    return out


BRIDGE_TICKS = 2
"""Unsampled ticks a run is carried over, at most: the relaxed stack pace leaves two ticks between
main-thread dumps. A longer blackout may hide the end of one pass and the start of the next (two
~2 s passes read as one ~4.5 s pass across 12 unsampled ticks in a review's edited recording)."""


def _unsampled(t: Tick) -> bool:
    """A tick no main-thread stack sample came in (py-spy missed it on a busy host): it does not end
    a validation pass (trial 35: one pass of ~55 s read as three, "~18.0 s every ~24.5 s")."""
    return not t.stacks or not t.n_main


def _from_runs(kind: str, ticks: Sequence[Tick], runs: list[tuple[int, int]], span: float, tick: float,
               weight, share: float | None = None) -> list[Phase]:
    """One Phase from the runs of ticks found in it: each tick counts ``weight(tick)`` of its time
    (its samples' share in the phase; the checkpoint's ``share`` is read that way already)."""
    if not runs:
        return []
    if share is None:
        secs = [sum(ticks[k].dt * weight(ticks[k]) for k in range(a, b + 1)) for a, b in runs]
        share = sum(secs) / span
        each: float | None = sum(secs) / len(secs)
    else:
        secs = [sum(ticks[k].dt for k in range(a, b + 1)) for a, b in runs]
        each = min(sum(secs) / len(secs), share * span / len(runs))
    times = [ticks[a].t for a, _ in runs]
    period, uneven, missed = _period(times, tick)
    sparse = period is not None and not _covers(times, period, span, ticks[0].t)
    if sparse:
        period = None  # bunched in part of the span: the count and each's duration only (_covers)
    partial = any(weight(ticks[k]) < 1.0 for a, b in runs for k in range(a, b + 1)) if weight else False
    if kind != CHECKPOINT and each < PHASE_MIN_TICKS * tick and partial:
        # About a tick or less each, in ticks it only partly filled: neither is measured (see the
        # module's note). Passes that fill whole ticks are timed to the tick.
        each = period = None
        uneven = sparse = False
    return [Phase(kind, len(runs), min(1.0, share), period, each, span, uneven, sparse,
                  missed if period is not None else 0)]


def _wait_outside_validation(t: Tick) -> float:
    """A tick's share of main-thread samples waiting for a batch outside any evaluation pass: the
    first-batch waits of a validation loader's new workers fall inside its passes, whose share counts
    them already (trial 34: first batches 19 % beside validation 25 %, the two adding to more than the
    job's clock gave them together: 4 % + 31 %)."""
    if not t.n_main:
        return 0.0
    return max(0.0, (t.wait or 0.0) - t.validation_wait / t.n_main)


def _covers(times: list[float], period: float, span: float, begin: float) -> bool:
    """The starts at ``times`` cover the span they are said over (``span`` seconds from ``begin``),
    so a period may be said beside their count: the first falls in the span's first part (at most
    1 - PERIOD_COVER of it before the first start), and they number at least PERIOD_COVER of
    span / period. A period from starts bunched in part of the span contradicts the count said with
    it: the Lightning job whose re-creations the old rule caught twice, 5 s apart and 33 s into the
    span, read "every ~5.0 s (2 times in 44 s)". Where the pattern began late (a loader switched on
    mid-minute) or a phase was seen in only part of the minute, the count alone is said.

    The first start may come several periods in: a job watched from its start runs a longer first
    epoch (run 21's ImageFolder job: first re-creation at 5 s, then every ~2.5 s, 11 in 31 s), so
    "within a period (and a tick) of the beginning" would drop periods that fit their counts. No test
    at the span's end: a job that exited leaves ticks without workers there, and its epochs were
    periodic while it ran."""
    return times[0] - begin <= (1 - PERIOD_COVER) * span and len(times) >= PERIOD_COVER * span / period


def _period(times: list[float], tick: float, all_seen: bool = False) -> tuple[float | None, bool, int]:
    """(the interval between starts, False) where every interval lies near their median or a whole
    number of it (PERIOD_SPREAD): the mean over the periods they span,
    (None, True) where they are uneven, (None, False) under two starts; with the starts the gaps say
    no sample caught (a gap of several periods). ``all_seen``: every start is seen (sets of workers,
    read from every tick's processes), so gaps in turn (_in_turn) are two things, not missed starts."""
    if len(times) < 2:
        return None, False, 0
    gaps = [b - a for a, b in zip(times, times[1:])]
    if all_seen and _in_turn(gaps):
        return None, True, 0
    mid = float(median(gaps))
    # A start is seen in the tick it fell in, so each gap reads up to a tick off either way; and a
    # start no sample caught leaves a gap of two periods (or three), which is the period still. A
    # gap well short of the median is what no missed start explains: two things restarting apart.
    slack = PERIOD_SPREAD * mid + tick
    if any(abs(g - max(1, round(g / mid)) * mid) > slack for g in gaps):
        return None, True, 0
    # The gaps' mean per period, not their median: starts seen at whole ticks make gaps of 2, 3 and
    # 4 ticks for a pace of 2.5 s, whose median said "every ~2.0 s (23 times in 59 s)" beside its
    # own count (trial 29). A gap spans several periods (starts no sample caught: a checkpoint
    # every 3 s seen 6 s apart) only where it does less a tick of reading error, half-way down.
    periods = [max(1, math.floor((g - tick) / mid + 0.5 - 1e-9)) for g in gaps]
    return sum(gaps) / sum(periods), False, sum(periods) - len(gaps)


def _in_turn(gaps: list[float]) -> bool:
    """Gaps that alternate short and long, every short one under half every long one: where every
    start is seen, two things starting in turn (a training loader's workers, then a validation
    loader's, each epoch), not one pace with starts missed (checkpoint saves seen 8 and 16 s apart,
    read from stack samples, may be one every 8 s with one missed). Trial 36's Lightning job
    re-created its two loaders' sets 2 and 8-9 s apart in turn: their median (5 s) took 2 s and 8 s
    for one and two periods, and it read "every ~4.1 s (at least 11 times in 59 s)" beside the
    headline's "at uneven intervals (10 times)"."""
    if len(gaps) < 3:
        return False
    a, b = gaps[0::2], gaps[1::2]
    return 2 * max(a) <= min(b) or 2 * max(b) <= min(a)


def recurring_wait(ticks: Sequence[Tick], ps: Sequence[Phase]) -> float | None:
    """The main thread's data-wait share over the minute, for a job whose waits recur with its
    epochs (first-batch waits seen twice or more); None otherwise. Such a job alternates a few
    seconds of waiting with a few of training: any short window sees one or the other, while the
    cost to the job is the wait's share of whole epochs.

    A share of the minute's main-thread samples (Epochs.samples counts them), as the warnings say it
    ("6 % of the latest 39 samples"): weighted by tick, ticks of one sample and of four counting
    alike, it was no whole number of them (the Lightning job of lightning_two_loaders.jsonl.gz)."""
    if not periodic(find(ps, EPOCH_START)):
        return None
    n = sum(t.n_main for t in ticks)
    return sum(t.n_main * (t.wait or 0.0) for t in ticks) / n if n else None
