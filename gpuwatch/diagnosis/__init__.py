"""The bottleneck diagnosis: pure functions from a window of frames to a verdict.

Per tick:
1. the last SHORT_S seconds give the *candidate* (decide.py: every stage scored, then the stage precedence);
2. the stability rule (stability.py) adopts it or keeps the stage in force; a new stage is adopted
   only if it also fires over its own window (step 3's), else the candidate counts as weak;
3. the stage in force is re-scored over its own window (since it was adopted, up to WINDOW_S)
   for the evidence, confidence, sentence, speed-up and remedies the verdict shows.

No I/O and no clocks: time comes from the frames. See thresholds.py for every number used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpuwatch.diagnosis.compose import compose
from gpuwatch.diagnosis.decide import Decision, decide
from gpuwatch.diagnosis.host_signals import job_paused
from gpuwatch.diagnosis.phases import phases, recurring_wait
from gpuwatch.diagnosis.sentence import held_note
from gpuwatch.diagnosis.signals import Epochs, Signals, extract
from gpuwatch.diagnosis.stability import WEAK, DiagnosisState, step
from gpuwatch.diagnosis.stalls import find_stall
from gpuwatch.diagnosis.thresholds import FAST_S, PHASE_WINDOW_S, SHORT_S, STALL_WINDOW_S, WINDOW_S
from gpuwatch.diagnosis.timeline import timeline
from gpuwatch.diagnosis.window import last_ticks, recent, since
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import LEVEL_NA, PIPELINE, UNKNOWN, Verdict

__all__ = ["READ_S", "DiagnosisState", "diagnose"]

READ_S = max(WINDOW_S, PHASE_WINDOW_S, STALL_WINDOW_S)
"""The longest window a verdict reads, back from the newest frame: every window below is cut by
``recent`` from ``frames`` at one of these, so where the frames' times never go back, the frames
before the last READ_S seconds change nothing (analysis.py passes only the last READ_S)."""


def diagnose(
    frames: Sequence[Frame], state: DiagnosisState | None = None, rank: int | None = None
) -> tuple[Verdict, DiagnosisState]:
    """The verdict for the newest frame of ``frames`` (oldest first) and the state to pass next time."""
    if not frames:
        return _empty(rank), state or DiagnosisState()
    try:
        return _diagnose(frames, state, rank)
    except Exception as e:  # noqa: BLE001 - a diagnosis bug must not take the watch down with it
        v = _empty(rank)
        sentence = f"The diagnosis failed on this window ({type(e).__name__}: {e}); please report it."
        return replace(v, t=frames[-1].t, sentence=sentence), state or DiagnosisState()


def _stopped(frames: Sequence[Frame], rank: int | None) -> frozenset[int]:
    """The ids of the frames of the last READ_S in which the job was stopped (SIGSTOP, Ctrl-Z, a
    debugger; state T or t), and of the first one after each stop, whose CPU and queue readings
    straddle the resume: a frozen job's ticks describe no pipeline, and the outside load that filled
    its CPUs then read as a contention costing 10.5x where 6.0x held before the stop (trial 30).
    None while the job is stopped now: its ticks are then the verdict's evidence."""
    if job_paused(frames[-1], rank):
        return frozenset()
    start = max(0, len(frames) - len(recent(frames, READ_S)) - 1)  # and the frame before, for a straddle
    out, prior = set(), False
    for f in frames[start:]:
        paused = job_paused(f, rank)
        if paused or prior:
            out.add(id(f))
        prior = paused
    return frozenset(out)


def _running(frames: Sequence[Frame], seconds: float, stopped: frozenset[int]) -> list[Frame]:
    """The frames of the last ``seconds`` less the ``stopped`` ones (empty where all are such)."""
    pool = recent(frames, seconds)
    return [f for f in pool if id(f) not in stopped] if stopped else pool


def _resumed(frames: Sequence[Frame], rank: int | None) -> Verdict:
    """The verdict while every tick since a stop still straddles it: nothing measured yet."""
    return replace(_empty(rank), t=frames[-1].t,
                   sentence="The job runs again after a stop: collecting evidence (the ticks since it resumed "
                            "still cover part of the stop).")


def _diagnose(
    frames: Sequence[Frame], state: DiagnosisState | None, rank: int | None
) -> tuple[Verdict, DiagnosisState]:
    stopped = _stopped(frames, rank)
    pool = _running(frames, WINDOW_S, stopped)
    if not pool:
        return _resumed(frames, rank), DiagnosisState()
    short = last_ticks(pool, SHORT_S)
    current = state.stage if state is not None and state.since is not None else None
    if state is not None and state.last_t is not None and frames[-1].t < state.last_t:
        current = None  # time went backwards: a replay restarted, start over
    held = since(pool, state.regime_start, WINDOW_S, SHORT_S) if current is not None else None
    minute = timeline(_running(frames, PHASE_WINDOW_S, stopped), rank)
    seen = phases(minute)
    epochs = Epochs(seen, recurring_wait(minute, seen), minute)
    short_signals = extract(short, pool, rank, held, epochs)
    candidate = decide(short_signals, current, words=False)  # only its stage is read
    if current is not None and candidate.stage == current:
        candidate = _sooner(candidate, short_signals, short, pool, rank, held, epochs, current)
    new_state = step(state if current is not None else None, candidate.stage, frames[-1].t, short[0].t)
    window = since(pool, new_state.regime_start, WINDOW_S, SHORT_S)
    signals = extract(window, pool, rank, window, epochs)
    final = decide(signals, new_state.stage, challenge=False)
    if current is not None and new_state.stage != current and not _shown(final, new_state.stage):
        # The candidate fired on the old stage's stack window (the switch test reads it to have
        # enough samples), but its own window does not show it: a job tearing down (GPU idle, the
        # main thread out of Python) reads "launch-bound" on its busy last samples. A new stage is
        # named only on its own evidence; until then the candidate counts as weak (stability.py).
        new_state = step(state, UNKNOWN, frames[-1].t, short[0].t)
        window = since(pool, new_state.regime_start, WINDOW_S, SHORT_S)
        signals = extract(window, pool, rank, window, epochs)
        final = decide(signals, new_state.stage, challenge=False)
    stall = find_stall(_running(frames, STALL_WINDOW_S, stopped), signals.gpu.indexes) if signals.gpu.present else None
    verdict = compose(new_state.stage, final, signals, stall, candidate.stage, rank)
    r = final.results.get(new_state.stage)
    if r is not None and r.fires:
        new_state = replace(new_state, fired=verdict)
    elif (r is not None and new_state.fired is not None and new_state.fired.stage == verdict.stage
          and verdict.t - new_state.fired.t <= WINDOW_S):
        verdict = _held(verdict, new_state.fired)
    return verdict, new_state


def _held(verdict: Verdict, fired: Verdict) -> Verdict:
    """A verdict held on weaker readings (stability.py) says what the stage last fired with, and
    when: its sentence, speed-up, fixes and remedies; the evidence, confidence and epochs stay this
    tick's (sentence.held_note). Only words of the verdict's own window (WINDOW_S) are said again:
    older ones give way to this tick's, with the plain note."""
    return replace(verdict, sentence=held_note(fired.sentence, fired.phases, verdict.t - fired.t, verdict.phases),
                   speedup=fired.speedup, speedup_floor=fired.speedup_floor, speedup_point=fired.speedup_point,
                   speedup_floor_cpus=fired.speedup_floor_cpus,
                   gains=fired.gains, remedies=fired.remedies)


def _sooner(held: Decision, short_signals: Signals, short: Sequence[Frame], pool: Sequence[Frame],
            rank: int | None, held_pool: Sequence[Frame] | None, epochs: Epochs, current: str) -> Decision:
    """A challenger that the switch test's median of three ticks does not show yet, shown a tick
    sooner where the change is clear: over the last FAST_S (two ticks, so their mean) it passes the
    challenger's tightened cuts, and over the short window (median of three) it passes the
    documented ones. A step to a new stage meets both as soon as one whole tick of it follows the
    tick that the change fell in, even where that split tick alone misses the tightened cut (the
    H200's pageable copies on a second host: copy engine 6.4 % on the split tick, 10.4 % on the
    next, against 7.5 % to take over). One odd tick still cannot do it: it must be joined by one at
    the documented cut, and a reading that hovers at a cut meets this about as often as it meets
    the median's test (docs/THRESHOLDS.md, FAST_S).

    The documented-cut test reads the candidate's own signals (``short_signals``: the same window)
    and goes first: on a steady tick it names the stage in force, and the fast window, which could
    only name the same stage, is never read (an extract and a decision less a tick)."""
    if len(short) < 3:
        return held
    nominal = decide(short_signals, current, challenge=False, words=False)
    if nominal.stage == current or nominal.stage in WEAK:
        return held
    fast = decide(extract(last_ticks(short, FAST_S), pool, rank, held_pool, epochs), current, words=False)
    return fast if fast.stage == nominal.stage else held


def _shown(decision, stage: str) -> bool:
    """Whether ``stage`` fires in ``decision`` (stages without a scorer, such as unknown, always do)."""
    r = decision.results.get(stage)
    return r is None or r.fires


def _empty(rank: int | None) -> Verdict:
    # No frame judged (none yet, or the diagnosis failed): no stage was measured, so none is "ok".
    return Verdict(
        t=0.0, stage=UNKNOWN, confidence=0.0, sentence="No frames yet.", evidence=(), secondary=(),
        speedup=None, remedies=(), levels=tuple((s, LEVEL_NA) for s in PIPELINE), rank=rank,
    )
