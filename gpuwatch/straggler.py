"""The straggler rule: when ranks disagree, name the rank that holds the others back. Pure.

In synchronous data-parallel training every rank waits in each collective until the last rank
arrives, so the rank that holds the others back is the one that spends the *least* time waiting in
collectives while the others spend the most; usually because its own input pipeline is slower
(measured on tests/jobs/ddp_cpu.py with one slow rank: the slow rank's main thread waited for data in
28 of 30 py-spy dumps while the fast rank waited in DDP's buffer broadcast in 30 of 30).

Three rules, the first that fires wins:
1. collectives: the others wait in collectives, one rank hardly does;
2. input: one rank waits for its input far more than every other rank (the others' wait hides
   inside ``backward`` when DDP only all-reduces gradients: that wait has no Python frame);
3. steps: one rank completes clearly fewer steps per second (for jobs whose ranks do not lock-step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from gpuwatch.diagnosis.thresholds import (  # the cuts and their bases: docs/THRESHOLDS.md
    STRAGGLER_COLLECTIVE_WAIT as COLLECTIVE_WAIT,
    STRAGGLER_CPU_SHARE,
    STRAGGLER_GAP as GAP,
    STRAGGLER_MIN_SAMPLES as MIN_SAMPLES,
    STRAGGLER_SLOW_STEPS as SLOW_STEPS,
    STRAGGLER_Z as Z,
    WAIT_HIGH as INPUT_BOUND,
    WORKER_CPU_BUSY as WORKERS_COMPUTING,
    WORKER_CPU_IO as WORKERS_WAITING,
)


@dataclass(frozen=True, slots=True)
class RankSignals:
    """What one rank did over a window (built by :func:`gpuwatch.ranks.rank_signals`)."""

    rank: int
    samples: int
    """Main-thread stack samples behind the shares."""
    input_share: float | None
    """Share of those samples waiting for or loading input (data_wait, data_ipc, inline_load)."""
    collective_share: float | None
    """Share of those samples waiting in collectives (all_reduce, DDP buffer sync, barrier, ...)."""
    top_label: str | None = None
    """The most frequent main-thread label other than collective waits."""
    worker_cpu: float | None = None
    """Mean CPU of this rank's DataLoader workers, in cores per worker, idle sets left out where
    another set works (worker_sets.sample_cpu)."""
    idle_out: bool = False
    """In half the window's samples or more an idle set was left out of worker_cpu."""
    steps_per_s: float | None = None
    """Training steps per second, when something measured them."""
    cpu_only_main_cpu: float | None = None
    """CPU of the rank's training process (cores, median over the window) where no GPU is read: its
    step's compute is then its CPU. None on a GPU job."""


@dataclass(frozen=True, slots=True)
class Straggler:
    rank: int
    cause: str
    """"input" or the straggler's top main-thread label (e.g. "dispatch", "backward"); "unknown"."""
    rule: str
    """"collectives", "input" or "steps": which rule named it."""
    sentence: str
    evidence: tuple[str, ...]


def find_straggler(signals: Sequence[RankSignals]) -> Straggler | None:
    """The rank that holds the others back, or None when ranks agree (or too little is known)."""
    if len({s.rank for s in signals}) < 2:
        return None
    sampled = [s for s in signals if s.samples >= MIN_SAMPLES]
    return _by_collectives(sampled) or _by_input(sampled) or _by_steps(signals)


def _by_collectives(sig: list[RankSignals]) -> Straggler | None:
    known = sorted((s for s in sig if s.collective_share is not None), key=lambda s: (s.collective_share, s.rank))
    if len(known) < 2 or known[0].collective_share == known[1].collective_share:
        return None
    cand, others = known[0], known[1:]
    waiting = median(s.collective_share for s in others)
    if waiting < COLLECTIVE_WAIT or not _clear_gap(waiting, min(s.samples for s in others),
                                                   cand.collective_share, cand.samples):
        return None
    if _computes_less(cand, others):
        return None
    cause = "input" if (cand.input_share or 0.0) >= INPUT_BOUND else (cand.top_label or "unknown")
    evidence = (
        f"the other ranks wait in collectives {_pct(waiting)} of the time (median), "
        f"rank {cand.rank} {_pct(cand.collective_share)}",
    ) + _own(cand)
    return Straggler(cand.rank, cause, "collectives", _sentence(cand, cause, _others(others)), evidence)


def _by_input(sig: list[RankSignals]) -> Straggler | None:
    known = sorted((s for s in sig if s.input_share is not None), key=lambda s: (-s.input_share, s.rank))
    if len(known) < 2:
        return None
    cand, others = known[0], known[1:]
    worst_other = others[0].input_share
    if cand.input_share < INPUT_BOUND or not _clear_gap(cand.input_share, cand.samples, worst_other, others[0].samples):
        return None
    evidence = (f"the other ranks wait for input at most {_pct(worst_other)} of the time",) + _own(cand)
    waits = [s.collective_share for s in others if s.collective_share]
    if waits:
        evidence += (f"the other ranks wait in collectives {_pct(median(waits))} of the time (median)",)
        sentence = _sentence(cand, "input", _others(others))
    else:
        sentence = (f"Rank {cand.rank} holds {_others(others)} back: it waits for its input "
                    f"{_pct(cand.input_share)} of the time, the others at most {_pct(worst_other)}.")
    return Straggler(cand.rank, "input", "input", sentence, evidence)


def _by_steps(sig: Sequence[RankSignals]) -> Straggler | None:
    known = sorted((s for s in sig if s.steps_per_s is not None), key=lambda s: (s.steps_per_s, s.rank))
    if len(known) < 2:
        return None
    cand, others = known[0], known[1:]
    typical = median(s.steps_per_s for s in others)
    if typical <= 0 or cand.steps_per_s >= SLOW_STEPS * typical:
        return None
    evidence = (f"rank {cand.rank} makes {cand.steps_per_s:.2f} steps/s, the others {typical:.2f} (median)",)
    sentence = (f"Rank {cand.rank} is the slowest: {cand.steps_per_s:.2f} steps/s against "
                f"{typical:.2f} on the other ranks.")
    return Straggler(cand.rank, "unknown", "steps", sentence, evidence)


def _computes_less(cand: RankSignals, others: Sequence[RankSignals]) -> bool:
    """On a CPU-only job, whether the rank said to be busy uses clearly less CPU than the ranks said
    to wait for it: then its "busy" samples hide a wait. DDP's gradient all-reduce runs inside
    backward with no Python frame, so a rank blocked there reads "backward" while the slow rank,
    arriving late at an explicit all_reduce, reads "collectives" (trial 24: rank 0 at 0.33 core named
    as holding back rank 1 at 0.73 core, the rank that computed an extra filter every step)."""
    theirs = [s.cpu_only_main_cpu for s in others if s.cpu_only_main_cpu is not None]
    if cand.cpu_only_main_cpu is None or not theirs:
        return False
    return cand.cpu_only_main_cpu < STRAGGLER_CPU_SHARE * median(theirs)


def _clear_gap(high: float, n_high: int, low: float, n_low: int) -> bool:
    """``high - low`` is at least GAP and at least Z standard errors (pooled two-proportion test)."""
    diff = high - low
    pooled = (high * n_high + low * n_low) / (n_high + n_low)
    se = (pooled * (1 - pooled) * (1 / n_high + 1 / n_low)) ** 0.5
    return diff >= GAP and diff >= Z * se


def _own(s: RankSignals) -> tuple[str, ...]:
    out = []
    if s.input_share is not None:
        out.append(f"rank {s.rank}'s main thread waits for input {_pct(s.input_share)} of the time "
                   f"({s.samples} stack samples)")
    if s.worker_cpu is not None:
        if s.worker_cpu >= WORKERS_COMPUTING:
            what = "computing (decode/augmentation on the CPU)"
        elif s.worker_cpu < WORKERS_WAITING:
            what = "mostly waiting (storage, network or sleep), not computing"
        else:
            what = "partly busy"
        at_work = " at work" if s.idle_out else ""
        out.append(f"rank {s.rank}'s DataLoader workers{at_work} use {s.worker_cpu:.2f} cores each: {what}")
    return tuple(out)


def _sentence(s: RankSignals, cause: str, others: str) -> str:
    # "they" of a single rank read as a slip (review 48): the other rank by name, with its verb
    who = f"{others} waits" if others.startswith("rank ") else "they wait"
    if cause == "input":
        return f"Rank {s.rank} holds {others} back: it waits for its input while {who} for it in collectives."
    return f"Rank {s.rank} holds {others} back: it is busy ({cause}) while {who} for it in collectives."


def _others(others: Sequence[RankSignals]) -> str:
    if len(others) == 1:
        return f"rank {others[0].rank}"
    return "ranks " + ", ".join(str(r) for r in sorted(s.rank for s in others))


def _pct(x: float | None) -> str:
    return "N/A" if x is None else f"{100 * x:.0f} %"
