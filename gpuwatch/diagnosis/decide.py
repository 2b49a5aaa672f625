"""Which stage one window points to: every scorer, then the stage precedence (docs/THRESHOLDS.md).

Order:
1. idle (not training) and contention (causes first: they inflate every other stage);
2. GPU-side transfer signatures (NVML util reads 100 % on a pinned copy with the SMs idle);
3. a saturated GPU (>= 90 % kernel-active): memory/layout-bound, else healthy;
4. otherwise the host-side stages that fire, ranked by the share of the main thread's time behind
   each (ranked by the main thread's time shares), the GPU's kernel shape breaking a
   launch-vs-input tie;
5. a GPU 70-90 % busy with no host-side cause: memory-bound or (mostly) GPU-bound;
6. a job without a GPU computing by itself; the main thread outside PyTorch; else unknown.

Hysteresis: the stage in force has its gate thresholds eased by one band (thresholds.RELAX) and
reads its stack shares over twice the samples; challengers have theirs tightened by one band, so
a signal near a threshold cannot flip the verdict back and forth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpuwatch.diagnosis.gpu_stages import sm_per_gr
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.scorers import SCORERS
from gpuwatch.diagnosis.stages import CPU_COMPUTE, OFF_PIPELINE, StageResult
from gpuwatch.diagnosis.thresholds import OUTSIDE_SHARE, RELAX, RX_SIGNIFICANT, TAKEOVER, TINY_KERNEL_RATIO
from gpuwatch.diagnosis.transfer_stage import GPU_SIDE
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import (
    CONTENTION,
    DECODE,
    GPU_BOUND,
    GPU_MEMORY,
    H2D,
    IDLE,
    IO,
    LAUNCH,
    PIPELINE,
    UNKNOWN,
)

HOST_SIDE = (IO, DECODE, H2D, LAUNCH)
"""Stages of a starved GPU, in the order ties are broken (the pipeline's order)."""


@dataclass(frozen=True, slots=True)
class Decision:
    stage: str
    """A verdict stage, or CPU_COMPUTE / OFF_PIPELINE (shown as unknown with their own sentence)."""
    results: Mapping[str, StageResult]

    def secondary(self) -> tuple[str, ...]:
        """Other pipeline stages that fire or warn, strongest first."""
        others = [r for s, r in self.results.items() if s in PIPELINE and s != self.stage and r.warn]
        others.sort(key=lambda r: (r.fires, r.weight, r.strength), reverse=True)
        return tuple(r.stage for r in others)


def decide(s: Signals, current: str | None = None, challenge: bool = True) -> Decision:
    """Score every stage and pick one. ``current`` is the stage in force (its thresholds eased);
    ``challenge`` tightens the others' (the switch test) or, when False, leaves them nominal (the
    verdict's evidence, which should show the thresholds as documented)."""
    table = SCORERS
    sticky = current if current in table else None
    other = -RELAX if challenge and sticky is not None else 0.0
    held = replace(s, stacks=s.sticky_stacks) if s.sticky_stacks is not None and s.sticky_stacks.available else s
    results = {name: fn(held, RELAX) if name == sticky else fn(s, other) for name, fn in table.items()}
    return Decision(_pick(s, results, sticky), results)


def _pick(s: Signals, r: Mapping[str, StageResult], sticky: str | None) -> str:
    if r[IDLE].fires:
        return IDLE
    if r[CONTENTION].fires:
        return CONTENTION
    host = [x for x in HOST_SIDE if r[x].fires and (s.gpu.present or x in (IO, DECODE))]
    if s.gpu.present:
        if r[H2D].fires and r[H2D].sub in GPU_SIDE:
            return H2D
        if r[GPU_MEMORY].fires and r[GPU_MEMORY].facts.get("saturated"):
            return GPU_MEMORY
        if r[GPU_BOUND].fires and r[GPU_BOUND].facts.get("saturated") and sticky not in host:
            return GPU_BOUND
    if host:
        return _rank(host, r, sticky, s)
    # Busy 70-90 % with no host-side cause: the GPU's own work is still the best explanation.
    for stage in (GPU_MEMORY, GPU_BOUND):
        if r[stage].fires:
            return stage
    if r[CPU_COMPUTE].fires:
        return CPU_COMPUTE
    if s.gpu.present and (s.stacks.share(lb.OTHER) or 0.0) >= OUTSIDE_SHARE:
        return OFF_PIPELINE
    return UNKNOWN


def _rank(host: list[str], r: Mapping[str, StageResult], sticky: str | None, s: Signals) -> str:
    ratio = sm_per_gr(s)
    if LAUNCH in host and (IO in host or DECODE in host) and ratio is not None:
        # Launch-bound and input-starved both leave the GPU waiting; the GPU itself tells them
        # apart better than a dozen stack samples: tiny kernels (SM/GR ~0.002 on the H200) mean
        # the host issues kernels too slowly, real kernels between gaps (~0.8) mean it waits for data.
        if ratio <= TINY_KERNEL_RATIO:
            host = [x for x in host if x not in (IO, DECODE)]
        else:
            host = [x for x in host if x != LAUNCH]
    if H2D in host and LAUNCH in host and (s.gpu.rx_frac or 0.0) >= RX_SIGNIFICANT:
        # Real data traffic on the link (launch loops read < 0.4 % of it on the H200) explains a
        # busy main thread better than launch overhead does: pageable copies burn the CPU.
        host = [x for x in host if x != LAUNCH]
    best = max(host, key=lambda x: (r[x].weight, -HOST_SIDE.index(x)))
    if sticky in host and r[best].weight < r[sticky].weight + TAKEOVER:
        return sticky
    return best
