"""From a decision to the :class:`Verdict`: confidence, levels, sentence, speed-up, remedies."""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.diagnosis.decide import HOST_SIDE, Decision, unproven
from gpuwatch.diagnosis.evidence import NOT_APPLICABLE, NOT_MEASURED, status
from gpuwatch.diagnosis.fix_gains import gains
from gpuwatch.diagnosis.remedies import remedies
from gpuwatch.diagnosis.sentence import phase_words, sentence
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.speedup import shares_cpus, shown as shown_speedup, speedup as ceiling_speedup
from gpuwatch.diagnosis.stages import CPU_COMPUTE, INPUT_UNMEASURED, OFF_PIPELINE, StageResult
from gpuwatch.diagnosis.thresholds import MAX_CONFIDENCE, MIN_STACK_SAMPLES, SM_HEALTHY
from gpuwatch.model.verdict import (
    CHECKPOINT,
    CONTENTION,
    DECODE,
    IO,
    GPU_BOUND,
    GPU_MEMORY,
    H2D,
    IDLE,
    LAUNCH,
    LEVEL_BOTTLENECK,
    LEVEL_NA,
    LEVEL_OK,
    LEVEL_WARNING,
    PHASE_SIGNAL,
    PIPELINE,
    STAGES,
    UNKNOWN,
    Evidence,
    Stall,
    Verdict,
)

STACK_STAGES = HOST_SIDE + (CPU_COMPUTE, IDLE)
"""Stages whose proof is (mostly) the main thread's stack shares."""
GPU_STAGES = (GPU_BOUND, GPU_MEMORY, LAUNCH, H2D)
"""Stages whose proof is (mostly) GPM."""


def confidence(stage: str, r: StageResult | None, s: Signals, d: Decision) -> float:
    """0..1: how strong the stage's evidence is, discounted for what could not be read.

    Base: 0.55 for a stage whose gates all hold, up to 0.95 as its supporting items hold too;
    0.35 for a stage kept by the stability rule whose gates no longer all hold. Then one factor per
    missing source: no stacks for a stage proved by stacks (x0.75) or too few samples (x0.85);
    no GPM for a GPU-side stage (x0.85); a GPU assumed to be the job's (x0.85); under three
    ticks (x0.7); a rival stage that fires too (x0.85); a job called idle whose samples caught its
    step in one tick (x0.85: its sentence says "if it still trains", so its confidence is not the
    highest either). The factors are judgement, not measurement:
    each is about the share of the proof the missing source carries, chosen so that a stage proved
    without its main source (stacks for input stages, GPM for GPU-side ones) stays under "high"."""
    if r is None:
        return 0.0
    if stage == IDLE and r.sub in ("exited", "stopped"):
        return MAX_CONFIDENCE
    base = 0.55 + 0.4 * r.strength if r.fires else 0.35
    q = 1.0
    stacky = stage in STACK_STAGES and not (stage == H2D and r.sub in ("link", "pageable", "copies"))
    if stacky and not s.stacks.available:
        q *= 0.75
    elif stacky and s.stacks.n_main < MIN_STACK_SAMPLES:
        q *= 0.85
    if stage in GPU_STAGES and s.gpu.present and not s.gpu.gpm:
        q *= 0.85
    if s.gpu.assumed:
        q *= 0.85
    if s.frames < 3:
        q *= 0.7
    # gpu_memory refines a saturated GPU, so a firing gpu_bound is no rival to it.
    rivals = [x for x in HOST_SIDE + (GPU_MEMORY, GPU_BOUND, CONTENTION)
              if x != stage and x in d.results and d.results[x].fires
              and not (stage == GPU_MEMORY and x == GPU_BOUND)]
    if rivals:
        q *= 0.85
    if stage == GPU_BOUND and (r.facts.get("sm_work") or 1.0) < SM_HEALTHY:
        q *= 0.85
    if stage == IDLE and (r.facts.get("ops_seen") or 0) > (r.facts.get("ops") or 0):
        q *= 0.85
    return round(min(MAX_CONFIDENCE, base * q), 2)


def phase_evidence(s: Signals) -> tuple[Evidence, ...]:
    """The epoch structure as rows of the input stages' drill-downs (the Disk drill-down also holds
    checkpoint saves): facts, no threshold."""
    out = []
    for p in s.phases:
        text = phase_words((p,)).rstrip(".")
        value = p.share if p.share is not None else float(p.count)
        for stage in ((IO,) if p.kind == CHECKPOINT else (IO, DECODE)):
            out.append(Evidence(stage, f"{PHASE_SIGNAL}{p.kind}", value, None, "", True, text))
    return tuple(out)


def compose(stage: str, d: Decision, s: Signals, stall: Stall | None, candidate: str,
            rank: int | None) -> Verdict:
    r = d.results.get(stage)
    shown = stage if stage in STAGES else UNKNOWN
    # Nothing holds back a job that is not training: no secondary stages then; nor one whose proof
    # is the stacks before they hold enough samples to name a stage.
    secondary = () if shown == IDLE else tuple(x for x in d.secondary(shown)
                                               if not unproven(s, x, d.results.get(x)))
    # An exited or stopped job has no pipeline running: its stages are n/a, not "ok" (the window's
    # older ticks scored them, but "PCIe ok" beside "PCIe held 89 % of the run" read as checked and fine).
    frozen = shown == IDLE and r is not None and r.sub in NO_PIPELINE
    # Batches the process makes itself with no DataLoader worker (a thread pool, a queue another
    # process fills): Disk and CPU prep cannot be judged, as the verdict says; "ok" read as checked and
    # fine beside "the batches come from elsewhere ..., which gpuwatch does not measure" (trial 35).
    unjudged = (IO, DECODE) if s.self_fed else ()  # whichever stage is shown (trial 36: beside Contention)
    levels = tuple((p, LEVEL_NA if frozen or (p in unjudged and p not in secondary and p != shown)
                    else level(p, shown, secondary, d.results.get(p))) for p in PIPELINE)
    evidence = tuple(e for res in d.results.values() for e in res.evidence) + phase_evidence(s)
    if shown == UNKNOWN and stage in SHOWN_AS_UNKNOWN and r is not None:
        # The form behind an Unknown verdict: its items are the verdict's evidence, under the stage
        # shown. Left under their internal name, the report found none for Unknown and said "The
        # verdicts carried no evidence" beside a sentence quoting "waits for data 86 %" (trial 32).
        mine = set(map(id, r.evidence))
        evidence = tuple(replace(e, stage=UNKNOWN) if id(e) in mine else e for e in evidence)
    fixes = gains(stage, r, s)
    up, floor = shown_speedup(stage, r, s)
    point = ceiling_speedup(stage, r, s) if floor else None
    return Verdict(
        t=s.t,
        stage=shown,
        confidence=confidence(stage, r, s, d) if (shown != UNKNOWN or stage == CPU_COMPUTE) else 0.0,
        sentence=sentence(stage, r, s, stall),
        evidence=evidence,
        secondary=secondary,
        speedup=up,
        remedies=remedies(stage, r, s, fixes),
        beside_remedies=tuple((x, remedies(x, d.results[x], s, gains(x, d.results[x], s)))
                              for x in secondary if x in d.results and d.results[x].fires),
        levels=levels,
        stall=stall,
        rank=rank,
        candidate=candidate if candidate in STAGES else UNKNOWN,
        phases=s.phases,
        gains=fixes,
        warned=tuple((x, _why(d.results[x], d.stage == stage, shown == UNKNOWN)) for x in secondary),
        speedup_floor=floor,
        # a floor on this ground whatever its figure: one its samples bound lower is a floor on both
        speedup_floor_cpus=floor and shares_cpus(stage, r, s),
        speedup_point=point,
    )


SHOWN_AS_UNKNOWN = (INPUT_UNMEASURED, OFF_PIPELINE)
"""Internal forms (stages.py) that the verdict shows as Unknown, with their own sentence."""
NO_PIPELINE = ("exited", "stopped")
"""Idle's forms (system_stages.idle) in which no pipeline runs at all."""


def level(stage: str, shown: str, secondary: tuple[str, ...], r: StageResult | None) -> str:
    """The pipeline stage's level: bottleneck (the verdict's), warning (beside it), ok, or n/a where
    nothing of the stage was measured. "ok" says the stage was checked and found fine, which needs
    a reading: a stage whose every item does not apply or could not be read (PCIe, GPU memory and
    Launch with no GPU to judge: their one item is "no GPU to ...") is n/a instead, and so is one
    the decision did not score at all (``r`` None: the job has exited, or every tick of the window
    was a stopped one), which "ok" beside "PCIe held 89 % of the run" had claimed fine."""
    if stage == shown:
        return LEVEL_BOTTLENECK
    if stage in secondary:
        return LEVEL_WARNING
    return LEVEL_OK if r is not None and measured(r) else LEVEL_NA


def measured(r: StageResult) -> bool:
    """Whether any of the stage's items was read: a reading against its cut, or a fact (a note).
    A stage with no items at all (a decision scored without words, evidence.WORDS) says nothing
    either way and counts as measured, so that a missing item never turns a level into n/a."""
    return not r.evidence or any(status(e) not in (NOT_APPLICABLE, NOT_MEASURED) for e in r.evidence)


MET_AS_WELL = "it meets its thresholds too, but the stage the verdict names takes precedence"
"""Why a stage that fires warns beside the verdict, where the verdict's window ranks the verdict's
stage first (the stage precedence, or contention's cost against the other stage's)."""
MET_NOT_STEADY = "it meets its thresholds, but not steadily enough to change the verdict"
"""Why a stage that fires warns beside a verdict the stability rule holds (stability.py): over the
verdict's window another stage ranks first, often the warning's own, but the last seconds do not
name it. "The verdict's stage ranks first" was false there: "Unknown: not enough evidence to name
a stage" beside CPU prep's (run25_lightning), GPU-bound held beside a firing CPU prep (field_lightning)."""


MET_BESIDE_UNKNOWN = "it meets its thresholds too, but costs the job less than what the verdict describes"
"""MET_AS_WELL beside an Unknown verdict that describes a form of its own (an input wait gpuwatch
cannot explain, time outside the training loop): "the stage the verdict names" named none (trial 32)."""


def _why(r: StageResult, ranked: bool, unknown: bool = False) -> str:
    """``ranked``: the decision over the verdict's window picks the verdict's stage itself;
    ``unknown``: that verdict is shown as Unknown."""
    if not r.fires:
        return r.why
    met = MET_NOT_STEADY if not ranked else MET_BESIDE_UNKNOWN if unknown else MET_AS_WELL
    return f"{r.why}; {met}" if r.why else met
