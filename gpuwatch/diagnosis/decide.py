"""Which stage one window points to: every scorer, then the stage precedence (docs/THRESHOLDS.md).

Order:
1. idle (not training); contention when it costs the job most (see _contention_costs_more);
2. GPU-side transfer signatures (NVML util reads 100 % on a pinned copy with the SMs idle);
3. a saturated GPU (>= 90 % kernel-active): memory/layout-bound, else healthy;
4. otherwise the host-side stages that fire, ranked by the share of the main thread's time behind
   each (ranked by the main thread's time shares), the GPU's kernel shape breaking a
   launch-vs-input tie;
5. a GPU 70-90 % busy with no host-side cause: memory-bound or (mostly) GPU-bound;
6. a job without a GPU computing by itself; the main thread outside PyTorch (GPU or not); else unknown.

Hysteresis: the stage in force has its gate thresholds eased by one band (thresholds.RELAX) and
reads its stack shares over twice the samples; challengers have theirs tightened by one band, so
a signal near a threshold cannot flip the verdict back and forth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpuwatch.diagnosis.evidence import WORDS, adjusted
from gpuwatch.diagnosis.gpu_stages import sm_per_gr
from gpuwatch.diagnosis.lazy_results import LazyResults
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.scorers import SCORERS
from gpuwatch.diagnosis.speedup import cost, speedup
from gpuwatch.diagnosis.stages import CPU_COMPUTE, INPUT_UNMEASURED, OFF_PIPELINE, StageResult
from gpuwatch.diagnosis.thresholds import (
    CONTENTION_CAUSE,
    COST_MARGIN,
    MIN_EVIDENCE_SAMPLES,
    OUTSIDE_SHARE,
    RELAX,
    RX_SIGNIFICANT,
    TAKEOVER,
    TINY_KERNEL_RATIO,
)
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
INPUT_SIDE = (IO, DECODE)
"""The stages a main thread's data wait names (and a CPU-bound job's loader can)."""
RESOURCE = {DECODE: "cpu", LAUNCH: "cpu", H2D: "cpu", CPU_COMPUTE: "cpu", IO: "storage",
            GPU_BOUND: "gpu", GPU_MEMORY: "gpu"}
"""What each stage is bound by. H2D counts as CPU: its host-side forms (pageable staging, the pin
thread) burn CPU, and the GPU-side ones are ruled on first."""
CAUSE_RESOURCE = {"cgroup": "cpu", "neighbours": "cpu", "steal": "cpu", "tenant": "gpu", "throttle": "gpu"}
"""What each contention cause takes away (memory pressure and link replays slow everything alike)."""


@dataclass(frozen=True, slots=True)
class Decision:
    stage: str
    """A verdict stage, or CPU_COMPUTE / OFF_PIPELINE (shown as unknown with their own sentence)."""
    results: Mapping[str, StageResult]

    def secondary(self, shown: str | None = None) -> tuple[str, ...]:
        """Other pipeline stages than ``shown`` (default: this decision's) that warn, strongest first.
        The verdict can show another stage than the decision picked (the stability rule holds the
        stage in force a while): the pick then warns beside it like any other."""
        shown = self.stage if shown is None else shown
        others = [r for s, r in self.results.items() if s in PIPELINE and s != shown and r.warn]
        others.sort(key=lambda r: (r.fires, r.weight, r.strength), reverse=True)
        return tuple(r.stage for r in others)


def decide(s: Signals, current: str | None = None, challenge: bool = True, words: bool = True) -> Decision:
    """Score every stage and pick one. ``current`` is the stage in force (its thresholds eased);
    ``challenge`` tightens the others' (the switch test) or, when False, leaves them nominal (the
    verdict's evidence, which should show the thresholds as documented). ``words`` False: a
    decision only its stage is read from, whose evidence items need no text (evidence.WORDS)."""
    token = WORDS.set(words)
    try:
        return _decide(s, current, challenge, lazy=not words)
    finally:
        WORDS.reset(token)


def _decide(s: Signals, current: str | None, challenge: bool, lazy: bool = False) -> Decision:
    table = SCORERS
    sticky = current if current in table else None
    other = -RELAX if challenge and sticky is not None else 0.0
    held = replace(s, stacks=s.sticky_stacks) if s.sticky_stacks is not None and s.sticky_stacks.available else s
    confirm = challenge and sticky == CPU_COMPUTE and held is not s

    def scored(name: str) -> StageResult:
        if name == sticky:
            return table[name](held, RELAX)
        r = table[name](s, other)
        if confirm and name in INPUT_SIDE and r.fires:
            # CPU-bound has no takeover margin (it is no host-side share): an input stage unseats it
            # only where the wait holds over the stage in force's wider samples too. A worker set's
            # start-up caught in 2 of 6 samples named CPU prep for 4 ticks on a Lightning job whose
            # clock put 2-8 % of its time in data waits (its wider view: 2 of 16; review 44).
            wide = table[name](held, other)
            if not wide.fires:
                return wide
        return r
    if lazy:  # only the stage is read: score the stages _pick asks about (lazy_results.py)
        words = WORDS.get()

        def score(name: str) -> StageResult:
            token = WORDS.set(words)  # as decide set it, should a result be read after it returned
            try:
                return scored(name)
            finally:
                WORDS.reset(token)
        results: Mapping[str, StageResult] = LazyResults(table, score)
    else:
        results = {name: scored(name) for name in table}
    hold = None
    if challenge and sticky in HOST_SIDE and held is not s:
        # The takeover test compares time shares, and a challenger's is read over the short stack
        # window: the stage in force is credited with its share over those same samples where that
        # is the larger (two stages that explain the same data wait, e.g. decode and a busy pin
        # thread, weigh the same on the same samples; over different windows the fresher one won).
        hold = max(results[sticky].weight, table[sticky](s, RELAX).weight)
    return Decision(_pick(s, results, sticky, hold), results)


STACK_PROVED = (IO, DECODE, LAUNCH, CPU_COMPUTE, INPUT_UNMEASURED, OFF_PIPELINE)
"""Stages whose gates read the main thread's stack shares (H2D too, in its host-side forms)."""


STACK_IDLE = ("no_gpu", "cpu_only")
"""Idle's forms without a GPU to read: "the main thread is idle" rests on its stack share outside
every training frame, which one or two samples cannot tell (a job blocked half its time in a print to
a slow pipe read "Not training" for its first two ticks on one sample each, while it trained at 12.5
steps/s). With a GPU, Idle rests on the GPU's own utilization; a stopped job on its process state."""


def too_few_samples(s: Signals) -> bool:
    """Stacks are read but hold too few main-thread samples for any share to mean something."""
    return s.stacks.available and s.stacks.n_main < MIN_EVIDENCE_SAMPLES


def unproven(s: Signals, stage: str, r: StageResult | None) -> bool:
    """The stage rests on the main thread's stack shares and there are too few samples yet: it is
    neither the verdict nor a warning beside it (the sentence says the evidence is being collected)."""
    host_copy = stage == H2D and r is not None and r.sub not in GPU_SIDE
    return too_few_samples(s) and (stage in STACK_PROVED or host_copy)


def _pick(s: Signals, r: Mapping[str, StageResult], sticky: str | None, hold: float | None = None) -> str:
    if r[IDLE].fires and not (r[IDLE].sub in STACK_IDLE and too_few_samples(s)):
        return IDLE
    other = _pick_pipeline(s, r, sticky, hold)
    if unproven(s, other, r.get(other)):
        other = UNKNOWN  # no stage before its evidence exists: the sentence says it is collecting it
    if r[CONTENTION].fires and _contention_costs_more(s, r, other, sticky):
        return CONTENTION
    return other


def _contention_costs_more(s: Signals, r: Mapping[str, StageResult], other: str, sticky: str | None) -> bool:
    """Rank by cost (time share x estimated loss), not precedence: an outside cause wins when it
    takes a large share of the very resource the other stage is bound by (it inflates that stage:
    a throttled cgroup makes decode slow), or when its estimated loss is the larger. A few percent
    of steal or a neighbour's CPU never displaces a stage with a much larger estimated gain."""
    res = r[CONTENTION]
    need = RESOURCE.get(other)
    values = dict(res.facts.get("values") or {})
    cut = adjusted(CONTENTION_CAUSE, ">=", RELAX if sticky == CONTENTION else -RELAX if sticky == other else 0.0)
    if need is not None and any(CAUSE_RESOURCE.get(c) == need and (v or 0.0) >= cut for c, v in values.items()):
        return True
    theirs = cost(other, r.get(other), s) if other in r else None
    if theirs is None:
        return True  # the other stage promises no gain (healthy, unknown): the outside cause is the cost
    delay = res.facts.get("delay")
    if isinstance(delay, float) and delay > 0 and theirs > 1:
        # Time the job's threads spent runnable, queued for a CPU, is not the other stage's (a
        # main thread "loading inline" 100 % of the time but queued 70 % of it waits on the CPU,
        # not the disk): only the rest of its share counts for it.
        share = (1 - 1 / theirs) * (1 - min(delay, 1.0))
        theirs = 1 / (1 - share)
    mine = speedup(CONTENTION, res, s) or 1.0
    if sticky == CONTENTION:
        return theirs <= mine * COST_MARGIN
    if sticky == other:
        return mine > theirs * COST_MARGIN
    return mine >= theirs


def _pick_pipeline(s: Signals, r: Mapping[str, StageResult], sticky: str | None, hold: float | None = None) -> str:
    """The stage of the job's own pipeline (everything but idle and contention)."""
    host = [x for x in HOST_SIDE if r[x].fires and (s.gpu.present or x in (IO, DECODE))]
    if s.gpu.present:
        if r[H2D].fires and r[H2D].sub in GPU_SIDE:
            return H2D
        if r[GPU_MEMORY].fires and r[GPU_MEMORY].facts.get("saturated"):
            return GPU_MEMORY
        # Waits and saves that recur with the epochs are judged over the minute: a saturated
        # window between two of them does not make the job GPU-bound.
        recurring = (IO in host and r[IO].facts.get("recurring")) or (
            s.recurring_wait is not None and any(r[x].fires for x in (IO, DECODE, INPUT_UNMEASURED)))
        if r[GPU_BOUND].fires and r[GPU_BOUND].facts.get("saturated") and sticky not in host and not recurring:
            return GPU_BOUND
    if host:
        return _rank(host, r, sticky, s, hold)
    if r[INPUT_UNMEASURED].fires:
        return INPUT_UNMEASURED
    # Busy 70-90 % with no host-side cause: the GPU's own work is still the best explanation.
    for stage in (GPU_MEMORY, GPU_BOUND):
        if r[stage].fires:
            return stage
    if r[CPU_COMPUTE].fires:
        return CPU_COMPUTE
    if (s.stacks.share(lb.OTHER) or 0.0) >= OUTSIDE_SHARE:
        # With or without a GPU: a main thread outside every training frame half the time or more
        # (not computing the step, or CPU_COMPUTE had fired) is paced by the job's own code, which
        # the stacks show; "no stage's signals are conclusive" would hide what they show.
        return OFF_PIPELINE
    return UNKNOWN


def _rank(host: list[str], r: Mapping[str, StageResult], sticky: str | None, s: Signals,
          hold: float | None = None) -> str:
    """The host-side stage with the largest time share; the stage in force keeps the verdict
    unless a challenger's share is TAKEOVER above its own (``hold``: its share as the takeover test
    reads it, see decide)."""
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
    if sticky in host and r[best].weight < (r[sticky].weight if hold is None else hold) + TAKEOVER:
        return sticky
    return best
