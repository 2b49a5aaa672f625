"""The stability rule: what the verdict carries from one tick to the next.

The candidate comes from the last SHORT_S seconds, whose per-tick readings enter as medians (two
of three ticks must agree), and the stage in force keeps eased thresholds and a longer stack
window while challengers face tightened thresholds (decide.py). That is the "sustained evidence" a
change to a named stage needs, and it still lets a real change through as soon as two ticks of the
short window show it (~2-3 s at 1 Hz). Losing the evidence (an "unknown" candidate) must last
WEAK_TICKS ticks before the verdict gives a named stage up.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.diagnosis.stages import INPUT_UNMEASURED, OFF_PIPELINE
from gpuwatch.diagnosis.thresholds import WEAK_TICKS
from gpuwatch.model.verdict import UNKNOWN, Verdict

WEAK = (UNKNOWN, OFF_PIPELINE, INPUT_UNMEASURED)
"""Candidates that say "no stage is proved" rather than naming one."""


@dataclass(frozen=True, slots=True)
class DiagnosisState:
    """What the stability rule carries from one tick to the next."""

    stage: str = UNKNOWN
    """The stage in force (internal name: may be cpu_compute / off_pipeline)."""
    since: float | None = None
    """Frame time the stage was adopted."""
    regime_start: float | None = None
    """Frame time from which the evidence for the stage in force is read (its window's start)."""
    last_t: float | None = None
    pending: str | None = None
    """A weak candidate waiting for WEAK_TICKS in a row."""
    pending_n: int = 0
    changes: int = 0
    """How many times the stage changed (for tests and the debug view)."""
    fired: Verdict | None = None
    """The latest verdict of the stage in force from a tick where its evidence named it: while the
    stage is held on weaker readings, its words, speed-up and remedies are that verdict's."""


def step(state: DiagnosisState | None, candidate: str, t: float, window_start: float) -> DiagnosisState:
    """The state after a tick whose short window (starting at ``window_start``) chose ``candidate``."""
    if state is None or (state.last_t is not None and t < state.last_t):
        state = DiagnosisState()  # first tick, or time went backwards (a replay restarted)
    if candidate == state.stage and state.since is not None:
        return replace(state, last_t=t, pending=None, pending_n=0)
    if candidate in WEAK and state.since is not None and state.stage not in WEAK:
        n = state.pending_n + 1 if state.pending in WEAK else 1
        if n < WEAK_TICKS:
            return replace(state, last_t=t, pending=candidate, pending_n=n)
    return DiagnosisState(stage=candidate, since=t, regime_start=window_start, last_t=t,
                          changes=state.changes + (state.since is not None))
