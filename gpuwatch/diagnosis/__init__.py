"""The bottleneck diagnosis: pure functions from a window of frames to a verdict.

PLACEHOLDER until the verdict issue lands: it answers "unknown" and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import PIPELINE, UNKNOWN, LEVEL_OK, Verdict


@dataclass(frozen=True, slots=True)
class DiagnosisState:
    """What the stability rule carries from one tick to the next."""

    stage: str = UNKNOWN


def diagnose(
    frames: Sequence[Frame], state: DiagnosisState | None = None, rank: int | None = None
) -> tuple[Verdict, DiagnosisState]:
    t = frames[-1].t if frames else 0.0
    v = Verdict(
        t=t, stage=UNKNOWN, confidence=0.0, sentence="No diagnosis yet.", evidence=(), secondary=(),
        speedup=None, remedies=(), levels=tuple((s, LEVEL_OK) for s in PIPELINE), rank=rank,
    )
    return v, state or DiagnosisState()
