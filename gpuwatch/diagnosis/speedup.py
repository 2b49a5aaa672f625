"""The most the job could speed up if the named stage were fixed (an upper bound, Amdahl-style).

- Input-bound (io, decode, input slow for a reason not measured, pin thread, copies on the main thread): the step loses the share ``w``
  of its time waiting, so removing the wait gives at most 1 / (1 - w) (the TensorFlow profiler's input %
  read the same way). Without stacks, the GPU's idle share stands in: 1 / busy.
- Launch-bound: the GPU has work only ``busy`` of the time; at best it always has: 1 / busy.
- Pageable copies: pinned copies ran 8.6x faster on the H200, so the copy share shrinks by that.
  The copy share is the main thread's samples in copies where stacks show them; from the GPU alone
  it is the copy engine's busy share times that ratio (the engine moves each staged chunk at pinned
  speed, so its busy time is what the copy would take pinned; a pageable copy, staged through a
  bounce buffer by the CPU, blocks the job about 8.6x as long). The larger of the two counts.
- Contention: the share taken by the outside cause (another tenant's SM time, throttled time,
  cgroup throttling, steal; for neighbours, the share of a process's CPU demand that waited in the
  run queue, host_signals.queued_share) comes back: 1 / (1 - share). The share is at most the
  main thread's time not blocked in the job's own code (py-spy reads it idle outside every training
  frame: a sleep, a lock, a socket): no freed CPU or GPU shortens that. A loop sleeping 62 % of its
  time by its own clock (bench/field_cpu/sleepy_loop.py) beside neighbours that queued 0.5 of its
  threads read "up to 1.97x"; the most any speed-up of the rest could give was 1 / 0.62 = 1.6x.
  Unlike the others this is an estimate, not a ceiling, and is said with "about"
  (verdict.gain_words): threads that work in lock-step lose more than the time they queue (two
  OpenMP threads ran 5x slower while a neighbour took one of 2 cores; the estimate said 2.0x).
- At the cap (MAX_SPEEDUP) the figure is a floor ("or more", ``Verdict.speedup_floor``). Where the
  share is one of main-thread stack samples, the floor is what the samples bound: 16 of 16 samples
  waiting bound the wait at 81 % or more (Wilson, 95 %), which gives "5.2x or more", where the cap
  said "20x or more"; and so whenever the share's interval reaches the cap's share (``shown``): 13 of
  14 samples waiting gave "14.0x" on a job whose own clock put its ceiling at 3.8x. Ranking stages
  (``cost``) and bounding each fix's own figure (fix_gains.py) keep the capped ceiling.
- GPU-bound, memory-bound (may be inherent), idle, unknown: no pipeline gain to promise (None).
- Input slow for a reason not measured (shown as unknown): None too. The wait share is measured
  and the sentence states it, but no cause is named, so no fix is either, and an estimate beside
  "Unknown" would read as the gain of fixing a stage nobody found.
"""

from __future__ import annotations

import math

from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.stages import INPUT_UNMEASURED, StageResult
from gpuwatch.diagnosis.thresholds import MAX_SPEEDUP, MIN_GAIN, PAGEABLE_GAIN
from gpuwatch.model.verdict import CONTENTION, DECODE, H2D, IO, LAUNCH



def _amdahl(share: float | None, gain: float = float("inf")) -> float | None:
    if share is None or share <= 0:
        return None
    share = min(share, 1 - 1 / MAX_SPEEDUP)
    return 1 / ((1 - share) + share / gain)


def _inverse(busy: float | None) -> float | None:
    return None if busy is None else 1 / max(busy, 1 / MAX_SPEEDUP)


def pageable_share(f: dict) -> float | None:
    """Share of the job's time in pageable host-to-device copies (see the module's note).

    py-spy without native frames shows a ``.to(device)`` only as the Python line that calls it, so
    the stack share can read 0 while the job copies all the time (the H200 pageable job: 0 % of
    samples, copy engine busy 12 %, 93-95 % of its step in the copy by its own clock).
    """
    copy = f.get("copy_frac")
    gpu_side = None if copy is None else min(1.0, copy * PAGEABLE_GAIN)
    shares = [x for x in (f.get("h2d_share"), gpu_side) if x is not None]
    return max(shares) if shares else None


Z95 = 1.96
"""The normal quantile of the 95 % Wilson interval, whose lower end bounds a share from below."""


def _wilson(share: float, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval of ``share`` measured over ``n`` samples."""
    if n <= 0:
        return 0.0, 1.0
    z2 = Z95 * Z95
    centre = share + z2 / (2 * n)
    spread = Z95 * math.sqrt(max(0.0, share * (1 - share)) / n + z2 / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z2 / n)), min(1.0, (centre + spread) / (1 + z2 / n))


def share_floor(share: float, n: int) -> float:
    """The lower end of the 95 % Wilson interval of ``share`` measured over ``n`` samples."""
    return _wilson(share, n)[0]


def share_ceiling(share: float, n: int) -> float:
    """The upper end of the 95 % Wilson interval of ``share`` measured over ``n`` samples."""
    return _wilson(share, n)[1]


def _stack_keys(stage: str, sub: str) -> tuple[str, str] | None:
    """(the fact holding the main-thread share the ceiling is read from, the fact holding the samples
    it was read over) for a stage whose ceiling is such a share; None for the others."""
    if stage in (IO, DECODE) and sub != "no_stacks":
        return {"inline": ("inline", "n_main"), "loop": ("loop", "n_main"), "sampler": ("sampler", "n_main"),
                "checkpoint": ("checkpoint", "checkpoint_n")}.get(sub, ("wait", "wait_n"))
    if stage == H2D and sub in ("pin_thread", "main_copy"):
        return ("wait" if sub == "pin_thread" else "h2d_share"), "n_main"
    return None


def _stack_share(stage: str, r: StageResult) -> tuple[float, int] | None:
    """(share, the main-thread samples it was read over) where the ceiling is a stack share."""
    keys = _stack_keys(stage, r.sub)
    if keys is None:
        return None
    share, count = r.facts.get(keys[0]), r.facts.get(keys[1])
    if not isinstance(share, float | int) or not isinstance(count, int):
        return None
    return float(share), count


def shown(stage: str, r: StageResult | None, s: Signals) -> tuple[float | None, bool]:
    """(the speed-up the verdict shows, whether it is a floor): the ceiling, or a floor where the
    samples cannot bound it below the cap (the module's note).

    For a stack share that is whenever the share's 95 % interval reaches the cap's share, not only at
    the cap: 1 / (1 - w) grows without bound as w nears 1, so over a dozen samples one more waiting
    sample moves it several-fold. A job that waited 72-75 % of its time by its own clock (ceiling
    3.8x) read "7.0x" at 12 of 14 samples waiting, "14.0x" at 13 of 14, and "4.6x or more" at 14 of
    14 (trial 28); the floors those samples bound are 2.5x, 3.2x and 4.6x, each said "or more"."""
    x = speedup(stage, r, s)
    if x is None or r is None:
        return x, False
    if r.facts.get("checkpoint_floor"):
        # Saves that fell between the stack samples (phases.saves_missed): the share is a floor, and
        # so is what removing the saves would gain ("checkpoint saves take at least 9 %" stood beside
        # "fixing it: about 1.1x" as if that were the figure).
        return x, True
    measured = _stack_share(stage, r)
    if measured is not None and share_ceiling(*measured) >= 1 - 1 / MAX_SPEEDUP:
        floor = share_floor(*measured)
        fx = 1 / (1 - floor) if floor < 1 - 1 / MAX_SPEEDUP else MAX_SPEEDUP
        if fx >= MIN_GAIN:
            return round(min(fx, x), 1), True
    # The input's workers filling the step's CPUs make the ceiling a floor too (shares_cpus); a floor
    # the samples bound lower is kept above, being the smaller claim.
    return x, x >= MAX_SPEEDUP or shares_cpus(stage, r, s)


def shares_cpus(stage: str, r: StageResult | None, s: Signals) -> bool:
    """The input's workers fill the CPUs the step runs on too (Signals.cpu_short, input_on_cpus):
    cheaper input work also gives the step CPU, which the wait's ceiling does not count, so the figure
    is a floor (Verdict.speedup_floor_cpus). Trial 39: workers inflating a whole compressed array per
    item (1.6 cores of 2) read "up to 3.50x"; loading it once ran the job 45x faster."""
    return stage == DECODE and r is not None and r.sub == "workers" and s.input_fills_cpus


def speedup(stage: str, r: StageResult | None, s: Signals) -> float | None:
    if r is None or not r.fires:
        return None
    f = r.facts
    x: float | None = None
    keys = _stack_keys(stage, r.sub)
    if keys is not None:
        x = _amdahl(f.get(keys[0]))  # type: ignore[arg-type]
    elif stage in (IO, DECODE):  # no stacks: the GPU's idle time stands in
        x = _inverse(s.gpu.compute_busy)
    elif stage == H2D:
        if r.sub == "pageable":
            x = _amdahl(pageable_share(f), PAGEABLE_GAIN)
    elif stage == LAUNCH:
        x = _inverse(f.get("busy"))  # type: ignore[arg-type]
    elif stage == CONTENTION:
        causes = dict(f.get("values") or {})
        if causes.get("neighbours") is not None and f.get("queued_share") is not None:
            causes["neighbours"] = f["queued_share"]  # the queue's cost, not the queued-thread count
        values = [v for v in causes.values() if v is not None]
        x = _amdahl(min(max(values), 1.0 - (s.stacks.blocked_outside_share or 0.0))) if values else None
    if x is None or x < MIN_GAIN:
        return None
    return round(min(x, MAX_SPEEDUP), 1)


def cost(stage: str, r: StageResult | None, s: Signals) -> float | None:
    """What the stage costs the job, for ranking stages against each other (decide.py): the shown
    speed-up, or for an input wait whose cause is not measured the wait's own Amdahl ceiling
    (ranked, never shown: see the module docstring)."""
    if stage == INPUT_UNMEASURED and r is not None and r.fires:
        x = _amdahl(r.facts.get("inline") if r.sub == "inline" else r.facts.get("wait"))  # type: ignore[arg-type]
        return None if x is None or x < MIN_GAIN else round(min(x, MAX_SPEEDUP), 1)
    return speedup(stage, r, s)
