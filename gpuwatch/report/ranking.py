"""Which stage cost the job most over the run: the report's headline and the order of its remedies.

A stage's cost is its time share times the loss while it held: fixing a stage that held ``share``
of the run and slowed it ``speedup`` times while it held gives back ``share * (1 - 1 / speedup)`` of
the run (Amdahl). The verdicts' own speed-up estimates give the loss, so the headline, the remedy
ranking and the TUI's "fixing it: up to ..." all come from the same numbers.

A bottleneck stage without an estimate (memory-bound kernels may be inherent) can cost at most its
share, and is ranked by that bound. Stages that are not a bottleneck to fix (GPU-bound, CPU-bound,
idle, and unknown without an estimate) cost nothing; one of them is the headline only when no bottleneck stage cost the run
enough to outrank it (thresholds.HEADLINE_MIN_COST over HEADLINE_MIN_TICKS ticks at least): the one
held most.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from gpuwatch.diagnosis.thresholds import HEADLINE_MIN_COST, HEADLINE_MIN_TICKS
from gpuwatch.model.verdict import CPU_BOUND, GPU_BOUND, IDLE, PIPELINE, UNKNOWN, Verdict

Mark = tuple[float, str, float]
"""(monotonic t, stage, confidence) of one tick."""
NOT_A_BOTTLENECK = (GPU_BOUND, CPU_BOUND, IDLE)
"""Stages with nothing in the pipeline to fix: a healthy GPU, a CPU-only job's own compute, no training."""


@dataclass(frozen=True, slots=True)
class StageCost:
    stage: str
    ticks: int
    share: float
    """Share of the run's ticks this stage held the verdict."""
    speedup_while: float | None
    """Median of the verdicts' speed-up estimates while it held (None: not estimated)."""
    floor: bool = False
    """Most of those estimates were floors ("or more": Verdict.speedup_floor), so the median is one."""
    floor_cpus: bool = False
    """Every one of those floors was one because the input takes the step's CPUs
    (Verdict.speedup_floor_cpus); a mix says the others' reasons (cap, samples)."""

    @property
    def bottleneck(self) -> bool:
        """A pipeline stage, or a verdict that estimated a loss without naming one (input slow for a
        reason not measured is said as "unknown" with a speed-up)."""
        return self.stage in PIPELINE or (self.stage not in NOT_A_BOTTLENECK and self.speedup_while is not None)

    @property
    def cost(self) -> float | None:
        """Share of the whole run lost to this stage (None: not estimated)."""
        if not self.bottleneck:
            return 0.0
        return self.share * (1.0 - 1.0 / self.speedup_while) if self.speedup_while else None

    @property
    def speedup_run(self) -> float | None:
        """What fixing it would give over the whole run."""
        c = self.cost
        return 1.0 / (1.0 - c) if c else None

    @property
    def weight(self) -> float:
        """The cost, or its upper bound (the share) where no estimate came with the stage."""
        c = self.cost
        return self.share if c is None else c

    @property
    def headline_worthy(self) -> bool:
        return self.bottleneck and self.ticks >= HEADLINE_MIN_TICKS and self.weight >= HEADLINE_MIN_COST


def stage_costs(marks: Sequence[Mark], verdicts: Sequence[Verdict]) -> list[StageCost]:
    """Every stage seen, ranked: the headline first, then bottlenecks by cost, then the rest by time."""
    n = len(marks)
    if not n:
        return []
    ticks = Counter(m[1] for m in marks)
    out = []
    for stage, count in ticks.items():
        said = [v for v in verdicts if v.stage == stage and v.speedup is not None and v.speedup > 1.0]
        floors = sum(v.speedup_floor for v in said)
        floor = bool(said) and 2 * floors >= len(said)
        # Mostly floors: their median, a floor too. Mostly not: the figures the shares read give, a
        # floor's own point estimate included (Verdict.speedup_point), or the floors drag it down.
        ups = [v.speedup if floor or v.speedup_point is None else v.speedup_point for v in said]
        # the CPU reason only where every floor has it: the others say their own (cap, samples)
        cpus = floor and sum(v.speedup_floor_cpus for v in said) == floors
        out.append(StageCost(stage, count, count / n, median(ups) if ups else None,  # type: ignore[type-var]
                             floor=floor, floor_cpus=cpus))
    # Past the bottlenecks, the stage held most leads, unknown too: a two-rank job input-bound for a
    # reason not measured 77 % of its run had led with the Idle of its first three ticks ("Not
    # training"). Unknown gives way only on an equal share.
    out.sort(key=lambda c: (not c.headline_worthy, -c.weight if c.headline_worthy else 0.0, -c.share,
                            c.stage == UNKNOWN, c.stage))
    return out
