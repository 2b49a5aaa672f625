"""What each proposed fix is expected to gain: the figure beside each remedy, from what was seen.

The verdict's ``speedup`` (speedup.py) is the ceiling: the job with the stage's whole cost gone. A
fix removes only its own part of that cost (measured on the H200: persistent workers gave a
torchvision job 1.03x where its data wait promised 16x), so each fix gets its own estimate:

- persistent workers: what keeping the workers removes is the DataLoader starting and stopping a
  set of worker processes at every pass over a loader: the main thread's samples inside that
  start-up and shutdown (``_MultiProcessingDataLoaderIter.__init__`` / ``_shutdown_workers``) over
  the last minute, share ``r``: 1 / (1 - r). Kept workers do not build a pass's first batches any
  sooner (they begin them when the pass's iterator is made, PyTorch's ``_MultiProcessingDataLoaderIter._reset``),
  so the first-batch wait itself stays out of it (the torchvision job waited 1.74 s for its first
  batches without, 1.97 s with). But a new worker may also warm up on its first items (a lazy load
  of a table, files it opens), which kept workers do once (a CPU trial job whose workers each
  loaded a 200 MB table: 6.4x measured), and no sampled signal tells that apart from the pipeline
  filling up: while the job waits for data (WAIT_MODERATE or more) the figure is said as what was
  measured, with more possible where the workers warm up, never as "little or no gain". Where the
  waits are mostly the sets' start-up (the "starting workers" form), the most kept workers can give
  is every wait of the minute gone, said beside the figure as "up to" (``FixGain.upper``): spawned
  workers import the script and torch again before their first item, which makes their first
  batches mostly start-up.
- more workers: the input side gets k times the workers that build batches, where k is the worker
  count the remedy suggests (one per usable core beside the training process, fewer where the
  cores are not free: each new decoding worker takes the CPU a worker takes now) over the count now.
  In a loader-fed loop each batch costs the longer of the step and the input, and the input was the
  limit, so the loop's time outside untouched phases goes from (step + wait) to
  max(step, (step + wait) / k): bounded by the wait share and by the cores. The words also give
  the count that would keep up with the step, n * (step + wait) / step, so the user sees whether
  the suggested count ends the wait or only shortens it.
- cheaper transform: the share ``d`` of the workers' working samples inside an image decoder
  (timeline.DECODER_WORDS). With decoding free a worker builds a batch in (1 - d) of the time, so
  k = 1 / (1 - d) in the same formula: the most a faster decoder (or decoding once, offline) gives.
- pinned memory: speedup.py's pageable-copy estimate (PAGEABLE_GAIN, the H200's pinned/pageable
  bandwidth ratio): pinning is what that figure is about.

Phases a fix does not touch bound every gain: validation passes and checkpoint saves seen over the
minute are kept at their share (a validation pass waits for its first batches, which one worker
builds whole whatever the worker count; a save is not input). Where the evidence is too thin for a
figure (no stacks, too few samples, a wait with no cause seen) the basis says so and the factor is
None: no number without positive evidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gpuwatch.diagnosis.evidence import count, fmt
from gpuwatch.diagnosis.phases import (
    find,
    in_validation,
    workers_outlive_window,
    workers_survive_epochs,
)
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.speedup import pageable_share, speedup
from gpuwatch.diagnosis.stages import INPUT_UNMEASURED, StageResult
from gpuwatch.diagnosis.thresholds import (CG_THROTTLED, IDLE_FOR_WORKER, MAX_SPEEDUP, MIN_GAIN, MIN_STACK_SAMPLES,
                                           PAGEABLE_GAIN, PHASE_WINDOW_S, UNEVEN_WORKERS, WAIT_MODERATE)
from gpuwatch.diagnosis.timeline import Tick
from gpuwatch.diagnosis.validation_loader import validation_loads
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import (
    CHECKPOINT,
    CHEAPER_TRANSFORM,
    DECODE,
    EPOCH_START,
    GPU_BOUND,
    H2D,
    IO,
    LEFT_ALIVE,
    MORE_CPUS,
    MORE_WORKERS,
    PERSISTENT_WORKERS,
    PINNED_MEMORY,
    RESPAWN,
    VALIDATION,
    FixGain,
    times,
)

WORKING = (lb.W_BUSY, lb.W_IO)
"""Worker samples building a batch (computing, or reading its files): the time a batch costs a worker."""


def loader_workers(f) -> int:
    """One loader's num_workers: the most workers one set had over the minute (phases.largest_set:
    a validation loader's persistent workers are not the training loader's, and a loader between
    two sets has none), else the workers alive (the window's mean, rounded)."""
    return int(f.get("loader_workers") or 0) or round(f.get("workers") or 0.0)


def worker_target(usable: float | None, mains: int = 1) -> int | None:
    """The num_workers to suggest: one per usable core left after the training processes (PyTorch
    warns above the CPUs the process may use). The remedies and the report's workers check suggest
    the same."""
    return None if not usable else max(1, int(usable) - mains)


def idle_cores(s: Signals, spare: float) -> float:
    """The CPU a waiting training process leaves idle for one more worker (``spare``, from
    unused_cores), or 0 where the trainer uses half a core or more (it does not wait for batches)."""
    if s.job.main_cpu is None or s.job.main_cpu >= 0.5:
        return 0.0
    return spare


def unused_cores(s: Signals, usable: float) -> float:
    """The CPU the job and the outside processes left unused, where it can be read, else 0: the job
    may use every CPU of the host (a taskset's few CPUs share the host's idle time with no reading
    of their own), no cgroup quota may throttle it, and the idle time is the least of the host's own
    idle reading and the CPUs neither the job nor the outside processes used (review: two medians
    alone read 0.52 core idle on a host 94 % busy)."""
    job, host = s.job, s.host
    if job.job_cpu is None:
        return 0.0
    if host.cpu_count is None or usable < host.cpu_count or host.cpu is None:
        return 0.0
    if (host.cg_throttled or 0.0) >= CG_THROTTLED:
        return 0.0
    cap = min(float(usable), host.cg_quota) if host.cg_quota else float(usable)
    unused = cap - job.job_cpu - (host.others_cpu or 0.0)
    host_idle = host.cpu_count * (1.0 - host.cpu)  # host.cpu: the busy share, 0..1
    return max(0.0, min(unused, host_idle))


def proposed_workers(f: Mapping[str, object], s: Signals) -> int | None:
    """The num_workers the CPU-prep remedy proposes (remedies._decode), one rule for its words and
    for the figure beside it: a worker per usable core beside the training process (worker_target);
    else, beside a training process that waits, one per core it leaves idle (trial 23); else one
    more where a core's worth sat idle and the workers' work is even. None where none is proposed
    (the demo's "Raise num_workers from 1 toward 2" had carried no figure and no reason)."""
    usable, n = f.get("usable"), loader_workers(f)
    if not usable or f.get("cpu_short"):
        return None
    target = worker_target(usable)  # type: ignore[arg-type]
    if target and n < target:
        return target
    spare = unused_cores(s, float(usable))  # type: ignore[arg-type]
    idle = idle_cores(s, spare)
    if n < usable and idle >= IDLE_FOR_WORKER:  # type: ignore[operator]
        return min(int(usable), n + max(1, int(idle + 0.5)))  # type: ignore[call-overload]
    top, least = f.get("worker_cpu_top"), f.get("worker_cpu_least")
    uneven = top is not None and least is not None and n >= 2 and top - least >= UNEVEN_WORKERS  # type: ignore[operator]
    if n < usable and spare >= IDLE_FOR_WORKER and not uneven:  # type: ignore[operator]
        return n + 1
    return None


def gains(stage: str, r: StageResult | None, s: Signals) -> tuple[FixGain, ...]:
    """The fixes the remedies propose for ``stage``, each with its own estimate."""
    if r is None or not r.fires:
        return ()
    out: list[FixGain | None] = []
    # Not where sets pile up beside the old ones: the remedy is to release the old iterators, and
    # no set was replaced to time a restart by. Nor for a loop that transforms its own batches: what
    # it costs is that work, and its remedies move it (remedies._loop_prep), not keep the workers.
    # And only where a re-creation was seen (or the wait is the workers' start-up), as the remedy is
    # (remedies._workers_keep): a gain for a fix no remedy proposed stood in the stream's gains.
    recreated = find(s.phases, RESPAWN) is not None or bool(s.job.worker_respawns) or r.sub == "starting"
    if (stage in (IO, DECODE, INPUT_UNMEASURED) and r.sub not in ("checkpoint", "loop", "sampler") and not workers_survive_epochs(s.phases)
            and find(s.phases, LEFT_ALIVE) is None and not workers_outlive_window(s.epoch_ticks) and recreated):
        out.append(persistent_workers(s, starting=r.sub == "starting"))
    if stage == GPU_BOUND and restarts_idle_gpu(r.facts, s):
        # No more than the GPU's idle time: kept workers can at most fill it, so a figure at that
        # bound is no longer "maybe more".
        g = persistent_workers(s)
        busy = r.facts.get("busy")
        top = round(1.0 / busy, 2) if busy else None
        if top is not None and g.factor is not None and g.factor >= top:
            g = replace(g, factor=top, partial=False, more="", upper=None, bound=True,
                        basis=f"the GPU's idle time ({fmt(1.0 - busy)}) made busy is the most it can give ({g.basis})")
        out.append(g)
    if stage == DECODE and r.sub in ("workers", "helpers"):
        out.append(more_cpus(r, s))
    if stage == DECODE and r.sub == "workers":
        # A cheaper decode is proposed (remedies.py) only where the workers may decode images.
        out += [more_workers(r, s)] + ([cheaper_transform(s, r.facts.get("wait"))]  # type: ignore[arg-type]
                                       if decoding_seen(s) is not False else [])
    elif stage == DECODE and r.sub == "inline" and not validation_loads(r.facts):
        # (the validation loader's own loading: workers for the training loader would not touch it)
        out.append(workers_for_inline(r, s))
    elif stage in (IO, INPUT_UNMEASURED) and r.sub in ("workers", "inline"):
        # Waits off the CPU (reads, a remote service): more workers overlap more of them only until
        # the storage or the service is saturated, which nothing seen here tells in advance.
        net = r.facts.get("inline_net_reads" if r.sub == "inline" else "net_reads")
        on = "a server" if net else "storage"
        why = f"the workers wait on {on}" if stage == IO else "the cause of the wait is not measured"
        what = "the server or the link" if net else "it"
        out.append(FixGain(MORE_WORKERS, None, f"{why}, and more workers overlap more waits only until "
                           f"{what} is saturated, which gpuwatch cannot see in advance"))
    if stage == H2D and r.sub == "pageable":
        out.append(pinned_memory(stage, r, s))
    # No fix gains more than the stage costs: the ceiling (read over the verdict's window, where a
    # fix's parts may come from the minute) bounds each figure.
    ceiling = speedup(stage, r, s)
    return tuple(_capped(g, ceiling) for g in out if g is not None)


def _capped(g: FixGain, ceiling: float | None) -> FixGain:
    if ceiling is None:
        return g
    if g.factor is not None and g.factor > ceiling:
        g = replace(g, factor=ceiling)
    if g.upper is not None and g.upper > ceiling:
        g = replace(g, upper=ceiling)
    if g.upper is not None and g.factor is not None and g.upper < g.factor * MIN_GAIN:
        # The window's ceiling cut the bound down onto the figure ("about 1.30x ..., up to about
        # 1.30x where all of the waiting (30 % of the last minute) ..." whose premise gives 1.43x):
        # no bound is said, only that more may come where no signal shows (review).
        g = replace(g, upper=None)
    return g


def restarts_idle_gpu(facts: Mapping[str, object], s: Signals) -> bool:
    """A GPU-bound job whose GPU idles enough for a fix to gain (1 / busy at least MIN_GAIN) while
    its DataLoader re-creates its workers as a pattern (two or more sets) and the main thread waits
    for each new set's first batches: keeping the workers is a fix for time that was seen lost, even
    under the GPU-bound verdict (H100 run 47: Lightning's default loaders, 16-21 % waits, the GPU
    busy 80-87 %, "saturated" on some ticks as the verdict holds; its persistent twin ran 1.17x
    faster)."""
    p, first = find(s.phases, RESPAWN), find(s.phases, EPOCH_START)
    busy = facts.get("busy")
    # Each side must be worth a fix: the GPU's idle time and the first-batch waits (a 1 % wait gave
    # "about 1.0x" beside a remedy placed before the kernel advice: review).
    floor = 1.0 - 1.0 / MIN_GAIN
    return (isinstance(busy, float) and 0 < busy and 1.0 / busy >= MIN_GAIN and p is not None and p.count >= 2
            and first is not None and (first.share or 0.0) >= floor)


def split(s: Signals, wait_said: float | None = None) -> tuple[float, float, float] | None:
    """(untouched, wait, step): the shares of the job's time in phases no input fix touches
    (validation passes, checkpoint saves), waiting for data outside them, and training outside them.

    Read over the minute where such a phase was seen (their shares are the minute's), else the
    window's data wait and no untouched phase: ``wait_said``, the wait the verdict's sentence says
    where given (the stage in force reads its stack shares over a longer window than ``s``; the
    remedy's "data wait of 100 %" stood under the sentence's "75 % (6 of its last 8 samples)").
    None without a measured wait."""
    ticks = [t for t in s.epoch_ticks[1:] if t.stacks and t.n_main]
    ckpt = find(s.phases, CHECKPOINT)
    if (find(s.phases, VALIDATION) is not None or ckpt is not None) and ticks:
        span = sum(t.dt for t in ticks)
        val = sum(t.dt for t in ticks if in_validation(t)) / span
        wait = sum(t.dt * (t.wait or 0.0) for t in ticks if not in_validation(t)) / span
        untouched = min(1.0, val + ((ckpt.share or 0.0) if ckpt is not None else 0.0))
    else:
        wait_now = wait_said if wait_said is not None else s.input_wait
        if wait_now is None:
            return None
        untouched, wait = 0.0, wait_now
    wait = min(wait, 1.0 - untouched)
    return untouched, wait, max(0.0, 1.0 - untouched - wait)


def faster_input(parts: tuple[float, float, float], k: float) -> float:
    """The job's speed-up when the input side builds batches k times faster (see the module's note)."""
    untouched, wait, step = parts
    after = untouched + max(step, (step + wait) / k)
    return min(MAX_SPEEDUP, 1.0 / max(after, 1.0 / MAX_SPEEDUP))


def restart_share(ticks: Sequence[Tick]) -> tuple[float, int] | None:
    """Share of the main thread's sampled time inside the DataLoader's worker start-up or shutdown,
    and the samples it was read from."""
    sampled = [t for t in ticks[1:] if t.stacks and t.n_main]
    span = sum(t.dt for t in sampled)
    if span <= 0:
        return None
    return sum(t.dt * t.starting / t.n_main for t in sampled) / span, sum(t.n_main for t in sampled)


def last_minute(span_s: float) -> str:
    """The span the epoch figures are read over (a phase's span_s), in words: "the last minute", or
    its seconds where the run so far is shorter ("21 % of the last minute" in a 21 s run, review 44;
    "of the 19 s watched" beside "Over the whole run (21 s)", review 45)."""
    return "the last minute" if span_s >= 0.9 * PHASE_WINDOW_S else f"the last {span_s:.0f} s"


def minute_wait(ticks: Sequence[Tick]) -> float | None:
    """The main thread's data-wait share over the last minute (worker start-up and shutdown included)."""
    sampled = [t for t in ticks[1:] if t.stacks and t.n_main and t.wait is not None]
    span = sum(t.dt for t in sampled)
    return sum(t.dt * (t.wait or 0.0) for t in sampled) / span if span > 0 else None


def persistent_workers(s: Signals, starting: bool = False) -> FixGain:
    if find(s.phases, RESPAWN) is None:
        return FixGain(PERSISTENT_WORKERS, None, "no set of workers was re-created over the last minute, so no "
                       "restart cost was seen")
    got = restart_share(s.epoch_ticks)
    if got is None or got[1] < MIN_STACK_SAMPLES:
        return FixGain(PERSISTENT_WORKERS, None, "too few stack samples of the main thread over the last minute "
                       "to tell how long it spends starting and stopping workers")
    share, n = got
    x = 1.0 / max(1.0 - share, 1.0 / MAX_SPEEDUP)
    minute = last_minute(find(s.phases, RESPAWN).span_s)  # type: ignore[union-attr]  # the re-creations' own span
    basis = (f"the main thread spent {fmt(share)} of {minute} starting and stopping DataLoader "
             f"workers ({count(n, 'stack sample')}); kept workers still build each epoch's first batches when it starts")
    wait = s.input_wait
    whole = minute_wait(s.epoch_ticks) if starting else None
    if whole is not None and whole >= WAIT_MODERATE:
        # The waits are mostly the sets' start-up (the "starting workers" form): the most keeping the
        # workers can give is every wait gone, restarts and first batches alike. Spawned workers
        # import the script and torch again before their first item, which makes a set's first
        # batches mostly start-up (trial 26: 1.30x measured in the restarts alone, ~3x by the job's
        # clock, 79 % of the minute waiting).
        top = 1.0 / max(1.0 - whole, 1.0 / MAX_SPEEDUP)
        if top >= x * MIN_GAIN:
            why = (": spawned workers import the training script and its libraries again before their first "
                   "item" if s.job.spawned_workers else "")
            return FixGain(PERSISTENT_WORKERS, round(x, 2), basis, partial=True, upper=round(top, 2),
                           more=f"where all of the main thread's waiting for data "
                                f"({fmt(whole)} of {minute}) is each new set's start-up, which kept "
                                f"workers do once{why}")
    if wait is not None and wait >= WAIT_MODERATE:
        # A new worker may warm up on its first items (a lazy table load, opened files, caches): kept
        # workers do that once. No sampled signal tells such a warm-up from the pipeline filling up,
        # which kept workers do not shorten (the H200 torchvision job: 1.03x measured), while a job
        # whose workers each loaded a 200 MB table ran 6.4x faster with them kept (field15 trial).
        # The first-batch waits after each new set, where the epoch structure measured them, bound
        # it: trial 29's worker_init_fn job read "about 1.02x" from the restarts alone beside its
        # own "first batches 28 % of the time", and ran 1.40-1.54x faster with the workers kept.
        first = find(s.phases, EPOCH_START)
        top = (1.0 / max(1.0 - first.share, 1.0 / MAX_SPEEDUP)
               if first is not None and first.share is not None and first.share >= WAIT_MODERATE else None)
        if top is not None and top >= x * MIN_GAIN:
            return FixGain(PERSISTENT_WORKERS, round(x, 2), basis, partial=True, upper=round(top, 2),
                           more=f"where each new set's first-batch waits ({fmt(first.share)} of the time) are "
                                "its start-up and warm-up (worker_init_fn, a lazy load, files it opens), which "
                                "kept workers do once; no signal tells them from the pipeline filling up, "
                                "which kept workers do not shorten")
        return FixGain(PERSISTENT_WORKERS, round(x, 2), basis, partial=True,
                       more=f"where each new worker warms up on its first items (a lazy load, files it opens), "
                            f"which kept workers do once and no signal shows: the main thread waited for data "
                            f"{fmt(wait)} of the time")
    return FixGain(PERSISTENT_WORKERS, round(x, 2), basis)


def makers(f: Mapping[str, object], sub: str) -> tuple[int, float | None]:
    """(the processes making the batches, their CPU together in cores): the DataLoader workers (the
    sets at work's, as loader_workers counts them; every worker's where several sets all work), or
    the job's own pool (input_stages.helpers_computing)."""
    if sub == "helpers":
        n = int(f.get("helpers") or 0)  # type: ignore[call-overload]
        return n, (f.get("helper_cpu") or 0.0) * n  # type: ignore[operator]
    n = loader_workers(f)
    several = len(f.get("sets") or ()) >= 2 and not f.get("idle_out")  # type: ignore[arg-type]
    if f.get("worker_cpu") is None or several:
        return n, f.get("workers_cpu")  # type: ignore[return-value]
    return n, f["worker_cpu"] * n  # type: ignore[operator]


def mask_full(s: Signals, usable: int | None) -> bool:
    """The CPUs the job's mask allows are full: the workers fill them (Signals.cpu_short), or the job's
    own CPU leaves under IDLE_FOR_WORKER of them. Not unused_cores, which reads a mask narrower than
    the host as full whatever the job uses (review 42: 2 workers on a mask of 8 read "which its 2
    workers fill" beside "5 usable CPUs are free")."""
    if not usable:
        return False
    return s.cpu_short or (s.job.job_cpu or 0.0) >= usable - IDLE_FOR_WORKER


def mask_room(s: Signals, usable: int | None, procs: int) -> float | None:
    """Cores of the host idle outside the job's affinity mask where more CPUs would help: the mask
    (taskset, a cpuset) allows fewer CPUs than the host has, ``procs`` processes (2 or more) make
    the batches, the job fills those CPUs (mask_full), and the host has IDLE_FOR_WORKER or more idle.
    None otherwise: where the mask's own CPUs have room, more workers come first; one process gains
    nothing from a second CPU (review 41)."""
    host_n = (s.host.cpu_count or 0) if s.host.seen else 0
    if host_n <= (usable or 0) or s.host.cpu is None or procs < 2 or not mask_full(s, usable):
        return None
    # the host's idle time, at most the CPUs outside the mask (the mask's own are full)
    free = min(host_n * (1.0 - s.host.cpu), float(host_n - usable))
    return free if free >= IDLE_FOR_WORKER else None


def wider_room(f: Mapping[str, object], sub: str, s: Signals) -> tuple[int, float, float] | None:
    """(batch makers, their CPU, idle cores outside the mask) where a wider affinity mask would help:
    mask_room, and the makers not at a core each already (single-threaded processes gain nothing from
    more CPUs then; review 42: 2 workers at 1.9 cores each read "about 0.53x")."""
    n, cpu = makers(f, sub)
    free = mask_room(s, f.get("usable"), n)  # type: ignore[arg-type]
    if free is None or not cpu or cpu >= n - IDLE_FOR_WORKER:
        return None
    return n, cpu, free


def more_cpus(r: StageResult, s: Signals) -> FixGain | None:
    """A wider affinity mask: the batch makers, each single-threaded (a core at most), get the idle
    cores outside it: they build batches at min(processes, CPU now + idle) / CPU now times the rate
    (trial 36: 3 workers at 0.96 core on 1 of 2 CPUs, 0.95 idle outside, read about 1.9x; without the
    pin the job ran 2.06x faster)."""
    usable = r.facts.get("usable")
    room = wider_room(r.facts, r.sub, s)
    if room is None:
        return None
    n, cpu, free = room
    parts = split(s, r.facts.get("wait"))  # type: ignore[arg-type]
    if parts is None:
        return FixGain(MORE_CPUS, None, "the data wait was not measured")
    after = min(float(n), cpu + free)
    x = round(faster_input(parts, max(1.0, after / cpu)), 2)
    return FixGain(MORE_CPUS, x, f"the {n} processes making batches use {fmt(cpu, 'cores')} of the "
                   f"{count(usable, 'CPU')} their mask allows, and {fmt(free, 'cores')} idle outside it would let them "
                   f"use {fmt(after, 'cores')}, one core each at most")


def more_workers(r: StageResult, s: Signals) -> FixGain | None:
    f = r.facts
    n = loader_workers(f)
    target = proposed_workers(f, s)
    if not n or not target or target <= n:
        return None  # the remedies do not propose more workers: they already fill the cores
    each = s.job.worker_cpu
    parts = split(s, f.get("wait"))  # type: ignore[arg-type]
    if each is None or each <= 0 or parts is None:
        return FixGain(MORE_WORKERS, None, "the workers' CPU or the data wait was not measured")
    # Cores a new worker can have: the usable ones the job and the host's other processes leave.
    used = (s.job.job_cpu or 0.0) + (s.host.others_cpu or 0.0)
    free = max(0.0, float(f.get("usable") or 0) - used)  # type: ignore[arg-type]
    added = min(target - n, free / each)
    k = (n + added) / n
    x = faster_input(parts, k)
    cores = (f", as many as the {fmt(free, 'cores')} left idle hold at the {fmt(each, 'cores')} a worker uses now"
             if added < target - n else "")
    # Whole ticks (split()): a validation tick's other samples are mostly the next pass's first
    # batch, which more workers do not shorten either; so the figure differs from the pass's own
    # share in the sentence, and says what it counts.
    what = " or ".join(w for k, w in ((VALIDATION, "a validation pass"), (CHECKPOINT, "a checkpoint save"))
                       if find(s.phases, k) is not None) or "an untouched phase"  # only those seen
    kept = f"; the ticks with {what} in them ({fmt(parts[0])} of the time) kept as they are" if parts[0] else ""
    # The workers that would keep up: n of them build a batch per (step + wait), the step needs one
    # per step, so n * (step + wait) / step.
    untouched, wait, step = parts
    needed = math.ceil(n * (step + wait) / step - 1e-6) if step > 0 else None  # not 11 for 10.0000001
    if needed is not None and needed <= n + added:
        limit = f"about {needed} would keep up with the training step ({fmt(step)} of the time), which is then the limit"
    else:
        # Said with its basis: outside those ticks, over the minute (the sentence's wait is the window's).
        where = " outside those ticks" if untouched else ""
        limit = (f"the data wait of {fmt(wait)} of the time{where} shrinks, yet the input stays the limit"
                 + (f" (about {needed} workers would keep up with the step)" if needed is not None else ""))
    # Each worker builds whole batches, so a pass's first batch takes one worker a whole batch
    # whatever the count: the k-fold rate holds after it. Where passes were seen (validation, new
    # sets of workers) that start is part of the wait and the figure leaves it out: said, not priced
    # (run 25: 2 -> 14 workers a loader estimated 3.0x, measured 2.3x, in 15-batch epochs).
    first = ("; each pass's first batch still takes one worker a whole batch, which this leaves out, so "
             "with short epochs the gain is less" if any(find(s.phases, k) for k in (VALIDATION, RESPAWN))
             else "")
    return FixGain(MORE_WORKERS, round(x, 2),
                   f"{n + added:.0f} workers would build {k:.1f}x the batches of {n}{cores}{kept}; {limit}{first}")


def workers_for_inline(r: StageResult, s: Signals) -> FixGain:
    """num_workers=0 -> N: the main thread loads share ``L`` of the time itself, between steps, on a
    core (``each``). The workers get the cores left idle and the CPU the main thread's own loading
    frees, so they build batches ``k`` times as fast as it does now (k = those cores over ``each``,
    at most N), beside the step: the time goes from (step + L) to max(step, L / k). The job as a
    whole can use no more CPU than it has: at x times the pace its step and its loading take
    ``x * each`` cores of the ``free + each`` there are, so x <= (free + each) / each. A core left idle
    under a whole one still gains: the loading it frees goes with it (trial 41: refused "only 0.96
    core left idle" on a job one worker ran 1.85x faster)."""
    f = r.facts
    share, target = f.get("inline"), worker_target(f.get("usable"))  # type: ignore[arg-type]
    if share is None or not target:
        return FixGain(MORE_WORKERS, None, "the main thread's loading share or the usable CPUs were not measured")
    share = float(share)  # type: ignore[arg-type]
    used = (s.job.job_cpu or 0.0) + (s.host.others_cpu or 0.0)
    free = max(0.0, float(f.get("usable") or 0) - used)  # type: ignore[arg-type]
    each = max(s.job.main_thread_cpu or 1.0, 1e-3)
    cores = free + share * each
    k = min(float(target), cores / each)
    after = max(1.0 - share, share / k if k > 0 else 1.0, each / (free + each))
    x = min(MAX_SPEEDUP, 1.0 / max(after, 1.0 / MAX_SPEEDUP))
    if x < MIN_GAIN:
        why = (f"only {fmt(free, 'cores')} left idle: workers would build batches on little more CPU than the main "
               "thread's own loading frees, so no faster than it does now" if free < 1.0 else
               f"the main thread loads data only {fmt(share)} of the time: moving it off the step gains under 5 %")
        return FixGain(MORE_WORKERS, None, why)
    return FixGain(MORE_WORKERS, round(x, 2),
                   f"the main thread loads data {fmt(share)} of the time between steps; the workers would get the "
                   f"{fmt(cores, 'cores')} left idle or freed from that loading, and build batches beside the step "
                   f"rather than between steps, until the step ({fmt(1 - share)} of the time) or the CPUs are the "
                   "limit")


def decoder_samples(s: Signals) -> tuple[int, int]:
    """(decoding, working): the workers' samples at work over the last minute, and those of them
    inside an image decoder (timeline.DECODER_WORDS)."""
    ticks = [t for t in s.epoch_ticks if t.stacks]
    working = sum(t.worker_labels[x] for t in ticks for x in WORKING)
    decoding = sum(min(t.worker_decoding, sum(t.worker_labels[x] for x in WORKING)) for t in ticks)
    return decoding, working


def inline_decoder_samples(s: Signals) -> tuple[int, int]:
    """(decoding, loading): the main thread's own loading samples over the last minute (num_workers=0),
    and those of them inside an image decoder."""
    ticks = [t for t in s.epoch_ticks if t.stacks]
    loading = sum(t.main[lb.INLINE_LOAD] for t in ticks)
    return min(sum(t.main_decoding for t in ticks), loading), loading


def inline_decoding_seen(s: Signals) -> bool | None:
    """As :func:`decoding_seen`, for a job that loads its data on the main thread (num_workers=0):
    the main thread's own loading samples (a tokenising job's are in its tokeniser, no decoder)."""
    ticks = [t for t in s.epoch_ticks if t.stacks]
    if any(t.main_decoding for t in ticks):
        return True
    return False if inline_decoder_samples(s)[1] >= MIN_STACK_SAMPLES else None


def decoding_seen(s: Signals) -> bool | None:
    """Whether the workers decode images: True with a worker sample in a decoder, False when enough
    samples of working workers (MIN_STACK_SAMPLES, the floor every stack share here reads) show
    none, None when too few were taken to tell. A job whose workers tokenise text or hand out
    tensors gets no decoder advice (no remedy without positive evidence)."""
    decoding, working = decoder_samples(s)
    if decoding:
        return True
    return False if working >= MIN_STACK_SAMPLES else None


def cheaper_transform(s: Signals, wait_said: float | None = None) -> FixGain:
    decoding, working = decoder_samples(s)
    parts = split(s, wait_said)
    if working < MIN_STACK_SAMPLES or parts is None:
        return FixGain(CHEAPER_TRANSFORM, None, f"{count(working, 'stack sample')} of the workers at work over the "
                       "last minute: too few to tell how much of a batch is decoding")
    d = decoding / working
    if not decoding:
        return FixGain(CHEAPER_TRANSFORM, 1.0, f"no stack sample of the workers was in an image decoder (0 of {working}): "
                       "a faster decoder takes nothing off a batch")
    k = 1.0 / max(1.0 - d, 1.0 / MAX_SPEEDUP)
    x = faster_input(parts, k)
    basis = f"decoding is {decoding} of {working} worker samples ({fmt(d)}); with it free each batch is built {k:.1f}x faster"
    if s.input_fills_cpus:
        # The workers fill the CPUs the step runs on too: the decode's CPU, freed, also goes to the step,
        # which the batches' pace does not count (speedup.shares_cpus): no bound, a figure of what
        # was measured with more beside it.
        return FixGain(CHEAPER_TRANSFORM, round(x, 2), basis, partial=True,
                       more="where the CPU the decode frees goes to the step too: the workers fill the CPUs the step runs on")
    # Decoding made free is the most a cheaper decode gives: a bound, said "up to" ("expected: about
    # 1.88x ... the most a cheaper decode gives" read as an estimate and a bound at once; review 44).
    return FixGain(CHEAPER_TRANSFORM, round(x, 2),
                   f"decoding is {decoding} of {working} worker samples ({fmt(d)}); with it free each batch "
                   f"is built {k:.1f}x faster, the most a cheaper decode gives", bound=True)


def pinned_memory(stage: str, r: StageResult, s: Signals) -> FixGain:
    x = speedup(stage, r, s)
    share = pageable_share(dict(r.facts))
    if x is None:
        return FixGain(PINNED_MEMORY, None, "the copies' share of the job's time was not measured")
    return FixGain(PINNED_MEMORY, x, f"{_copy_share_words(dict(r.facts), share)}, and pinned copies ran "
                   f"{PAGEABLE_GAIN:.1f}x faster on an H200")


def _copy_share_words(f: dict, share: float | None) -> str:
    """What the copies' share of the job's time rests on (speedup.pageable_share: the larger of the
    main thread's stack share and the copy engine's busy share scaled by PAGEABLE_GAIN). "Pageable
    copies take 100 % of the job's time" stood beside the report's 14 % copy-engine share and 0 %
    of main-thread samples in copies (review 28): the 100 % was the engine's 14 % times 8.6, capped."""
    stacks, engine = f.get("h2d_share"), f.get("copy_frac")
    if share is None or engine is None or (stacks is not None and stacks >= share):
        return f"the main thread is in host-to-device copies {fmt(share)} of its stack samples"
    whole = "nearly all" if share >= 0.995 else f"about {fmt(share)}"
    return (f"the GPU is busy with copies only {fmt(engine)} of the time, and a pageable copy holds the job "
            f"about {PAGEABLE_GAIN:.1f}x as long as the GPU's own part of it (staged by the CPU), so copies take "
            f"{whole} of the job's time")


def words(g: FixGain) -> str:
    """The estimate as the remedy's last clause."""
    if g.factor is None:
        return f"; gain not estimated: {g.basis}"
    x = times(g.factor)
    if g.bound:  # the most the fix can give: a bound, not an estimate
        return f"; expected: up to {x}x faster: {g.basis}"
    if g.partial:  # part of what the fix removes shows in no signal: the figure is what was measured
        beyond = "more" if g.upper is None else f"up to about {times(g.upper)}x"
        return f"; expected: about {x}x from what was measured, because {g.basis}; {beyond} {g.more}"
    if g.factor < MIN_GAIN:  # within the noise of the shares (thresholds.MIN_GAIN): say so, not "faster"
        return f"; expected: little or no gain (about {x}x), because {g.basis}"
    return f"; expected: about {x}x faster, because {g.basis}"
