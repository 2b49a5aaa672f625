"""What a stage scorer returns (the table of scorers is in scorers.py).

Each scorer looks at one window's :class:`Signals` and says whether its stage fires (its gates
all hold), whether it deserves a warning, how strong the supporting evidence is, and which share
of the main thread's time backs it (used to rank host-side stages, as the stage precedence in docs/THRESHOLDS.md asks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gpuwatch.diagnosis.evidence import Checks, cut, said
from gpuwatch.diagnosis.thresholds import MODERATE_MIN_SAMPLES, WAIT_MODERATE
from gpuwatch.model.verdict import CPU_BOUND, Evidence

CPU_COMPUTE = CPU_BOUND
"""A job without a GPU whose main thread computes and does not wait for data: the verdict stage
``cpu_bound`` ("gpu_bound" would claim a GPU that does not exist). Recordings made before it
existed said "unknown" with a non-zero confidence; replay recomputes them as ``cpu_bound``."""
OFF_PIPELINE = "off_pipeline"
"""Internal: the GPU starves while the main thread is mostly outside every training frame."""
INPUT_UNMEASURED = "input_unmeasured"
"""Internal: the main thread waits for data, but neither computing workers (decode) nor any storage
sign (io) is seen: the input is slow for a reason not measured, or new workers are starting.
Shown as unknown, with a sentence that says so (no cause without positive evidence)."""


@dataclass(frozen=True, slots=True)
class StageResult:
    stage: str
    fires: bool
    warn: bool
    strength: float
    weight: float
    """The share of time behind the stage (main thread in data wait, copies, dispatch...)."""
    evidence: tuple[Evidence, ...]
    sub: str = ""
    """Which variant fired (e.g. "pageable", "inline", "sync", "tenant")."""
    facts: Mapping[str, object] = field(default_factory=dict)
    why: str = ""
    """Why the stage warns without firing, in words: the reading that crossed its warning cut, which
    is lower than the verdict's (the drill-down's evidence lists the verdict's cuts only), except
    where a share of few main-thread samples needs two samples' worth (thresholds.moderate_cut)."""


def result(c: Checks, fires: bool, warn: bool, weight: float | None, sub: str = "",
           why: Callable[[], str] | None = None, why_fires: bool = False, **facts: object) -> StageResult:
    """``why`` words the warning; it is called only where the stage warns (or fires) and the
    decision's words are kept (evidence.WORDS): every stage is scored several times a tick, and
    nearly always nothing warns. ``why_fires``: its words hold where the stage fires too (they quote
    what it fires on), so a stage that fires beside the verdict is said with them: "it meets its
    thresholds too" alone told the reader nothing of an input stage held 95 % of a run (trial 40).
    Where they quote a warning sign the stage can fire without (DRAM for a stage fired by its
    occupancy), they are not said of it then."""
    said_why = (why() if why is not None and c.words and ((warn and not fires) or (fires and why_fires))
                else "")
    return StageResult(
        stage=c.stage, fires=fires, warn=warn or fires, strength=c.strength,
        weight=weight or 0.0, evidence=tuple(c.items), sub=sub, facts=facts, why=said_why,
    )


WARN_WORDS = {">=": "from", ">": "above", "<=": "at or under", "<": "under"}
"""A warning cut's comparison in words ("warns from 8 %")."""


def warned_by(value: float | None, th: float, op: str, what: str, unit: str = "%", samples: int = 0) -> str:
    """``PCIe RX of the link 41 %, warns from 35 %``: the reading behind a warning, against the
    warning's own cut; empty when the reading is unknown. ``samples``: the main-thread samples a
    share is read over, said with it ("main thread in host-to-device copies 15 % of the latest 40
    samples, warns from 5 %"); where the cut is their two samples' worth rather than WAIT_MODERATE
    (thresholds.moderate_cut), the cut is said so ("..., warns from 2 samples"): a bare "warns from
    33.3 %" read as a cut above the verdict's "needs at least 20 %"."""
    if value is None:
        return ""
    if samples <= 0:
        return f"{what} {said(value, th, op, unit)}, warns {WARN_WORDS[op]} {cut(th, unit)}"
    # A share says the samples it is of: a warning reads the latest samples, while the verdict's own
    # stage reads up to twice as many (STICKY_STACK_FACTOR), so "the main thread still waits for data 25 %"
    # in the verdict's sentence and "waiting for a batch 29 %" here are two windows, said as such.
    floor = th > WAIT_MODERATE and abs(th - MODERATE_MIN_SAMPLES / samples) < 1e-9
    words = f"{MODERATE_MIN_SAMPLES} samples" if floor else cut(th, unit)
    return f"{what} {said(value, th, op, unit)} of the latest {samples} samples, warns {WARN_WORDS[op]} {words}"
