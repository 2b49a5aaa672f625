"""The diagnose report as data: what the Markdown and JSON renderers both show.

Frozen dataclasses, so ``gpuwatch.model.codec.to_dict`` turns the whole report into JSON
(docs/REPORT_SCHEMA.md describes it); ``Unsupported`` values become ``{"unsupported": reason}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.collectors.environment import Environment
from gpuwatch.model.values import Maybe
from gpuwatch.model.verdict import FixGain, Phase
from gpuwatch.report.figures import Figures

REPORT_SCHEMA = 1
"""Version of the report's JSON (docs/REPORT_SCHEMA.md). Bumped on any incompatible change."""

PASS, WARN, FAIL, NOT_CHECKED = "pass", "warn", "fail", "not_checked"
STATUSES = (FAIL, WARN, PASS, NOT_CHECKED)
"""Check outcomes, worst first (the order the report lists them in)."""

STOPPED_EARLY = "stopped early ("
"""How a live watch stopped by Ctrl-C or a signal is said to have ended (gather.py), whose reason
render_md.py says alone after "Watching ended early"."""


@dataclass(frozen=True, slots=True)
class Source:
    kind: str
    """"live" or "replay"."""
    pid: int | None
    cmdline: str
    path: str | None
    """The recording, for a replay."""
    started_wall: float | None
    """Unix time of the first frame."""
    covered_s: float
    """Seconds between the first and the last frame, plus one tick."""
    requested_s: float | None
    """--duration of a live diagnose."""
    frames: int
    ended: str
    """Why watching stopped, in words."""
    early: bool
    """True when the job exited (or the user stopped) before the requested duration."""
    bad_lines: int = 0
    scope: str = ""
    """Where the PID given is one rank of several: that the whole job was watched, from its launcher
    (ranks.scope_words); else empty."""


@dataclass(frozen=True, slots=True)
class StageShare:
    stage: str
    title: str
    share: float
    """Share of the run's ticks."""
    why: str = ""
    """For a warning: the latest reading that crossed its warning cut, in words (Verdict.warned). For
    the stage held most: its sentence (Idle's and Unknown's of the kind they held most, what the job
    did instead of training or why no stage could be named; a named stage's of the story it told most)."""
    speedup_run: float | None = None
    """For the stage held most: what fixing it would give over the run (StageCost.speedup_run), so
    its cost is said beside the headline's as the figures say it ("cost the run less" stood beside two
    figures of 1.12x; trial 28)."""


@dataclass(frozen=True, slots=True)
class StragglerSeen:
    """The rank named most often as holding the others back (gpuwatch/straggler.py)."""

    rank: int
    ticks: int
    """Ticks it was named on."""
    of: int
    """Ticks that showed two or more ranks."""
    sentence: str
    """The latest straggler sentence naming it."""
    leads: bool
    """Named on STRAGGLER_HEADLINE_SHARE of those ticks or more: the report leads with it."""


@dataclass(frozen=True, slots=True)
class Summary:
    stage: str
    """The stage that cost the job most over the run (report/ranking.py), else the one held most."""
    title: str
    share: float
    """Share of the ticks this stage held the verdict."""
    confidence: float
    """Mean confidence over those ticks."""
    sentence: str
    """A verdict sentence for that stage: the latest one whose readings still held the stage."""
    sentence_at_s: float | None = None
    """Seconds from the first verdict to the one ``sentence`` is from: its readings are that tick's,
    where the evidence section gives each signal's middle reading over the ticks the stage held (the
    words say which: "processes outside the job use 1.00 core" beside a median of 43 % of 2 CPUs)."""
    speedup_run: float | None = None
    """What fixing the stage would give over the whole run (None: not estimated, or not a bottleneck)."""
    speedup_while: float | None = None
    """What fixing it would give while it holds (the median of the verdicts' ``speedup``)."""
    speedup_floor: bool = False
    """``speedup_while`` and ``speedup_run`` are floors ("or more"), not ceilings: most of the
    verdicts' figures were (Verdict.speedup_floor)."""
    speedup_floor_cpus: bool = False
    """Those floors are because the input takes the step's CPUs (Verdict.speedup_floor_cpus)."""
    most_held: StageShare | None = None
    """The stage held most of the time, when it is not the headline."""
    snapshot: bool = False
    """The run covers less than one verdict window (WINDOW_S): its figures are what those ticks
    held, not what costs the run; the words say so and give no run-level speed-up."""
    beside: StageShare | None = None
    """The other side of a run that trained only part of the time, where it held RUN_WARNING_SHARE of
    the run or more and is not already said as the stage held most: Idle (not training), with its
    sentence, beside a headline stage; or, beside an Idle headline, the stage that held while the
    job trained, with its sentence. A job that paused 20 s in every 30 s for an upload read only
    "CPU-bound held the verdict 66% of the time", or over a shorter watch only "Idle held 61%"."""
    warnings: tuple[StageShare, ...] = ()
    """Pipeline stages at warning level (close to their cuts) in a good part of the run."""
    straggler: StragglerSeen | None = None
    """A rank that held the others back (multi-rank jobs), when one was named."""
    best_fix_at_s: float | None = None
    """Seconds from the first verdict to the one ``best_fix`` is from; None without a best fix."""
    fix_above_ceiling: bool = False
    """A fix's own figure in the verdict whose remedies are quoted is above ``speedup_while`` (the
    stage's ceiling over the run), neither being a floor: the words say the figure is that tick's and
    that the run's ceiling bounds any fix (sections._above_ceiling, as Remedy.latest_while)."""
    best_fix: FixGain | None = None
    """The proposed fix expected to gain most while the stage held: the largest estimate in the verdict
    whose remedies the report lists (the stage's latest with remedies), so the headline and the
    Remedies quote one figure (diagnosis/fix_gains.py); None where no fix had a figure."""
    epochs: str = ""
    """The epoch structure at the run's end in words, led by the span it was counted over, as the
    epoch section says it (words.epochs_over); said after ``sentence``, which leaves out its own
    tick's epoch clause: the headline's "10 times in 58 s" stood above the section's "11 times in
    59 s" (review 44). Empty where the run's end names no phase."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of ticks with the same verdict stage."""

    stage: str
    start_s: float
    """Seconds from the first frame."""
    end_s: float
    ticks: int
    confidence_mean: float
    confidence_min: float


@dataclass(frozen=True, slots=True)
class EvidenceLine:
    """One signal behind a stage, summarised over the ticks where that stage was the verdict."""

    stage: str
    signal: str
    supports_share: float
    """Share of those ticks where the signal pointed towards the stage."""
    value_median: float | None
    threshold: float | None
    op: str
    text: str
    """The wording of the middle reading (its value and its cut)."""
    status: str = ""
    """That reading against its cut: met, not met, not measured or does not apply."""
    seen: int = 0
    of: int = 0
    """Ticks whose verdict carried this signal, of the ticks the stage held (0 and 0 in reports from
    before): a signal of some ticks only, as "no GPM" on a watch's first tick, is said so, not as
    "pointed to GPU-bound in 0% of the ticks" beside 27 ticks of GPM readings (review 36)."""
    latest: bool = False
    """The text is the latest reading, not the middle one: the epoch structure (re-created workers,
    first-batch waits, validation passes, saves) is read over the last minute, so its latest reading
    covers the most, and is the one the remedies and the epoch section quote."""


@dataclass(frozen=True, slots=True)
class StallSummary:
    seen_share: float
    """Share of the ticks whose verdict carried a periodic stall."""
    period_s: float
    """Median period."""
    idle_s: float
    """Median idle time per period."""
    coincides_with: str | None
    """The most frequent coincidence (e.g. "checkpoint"), if any."""


@dataclass(frozen=True, slots=True)
class HotStack:
    role: str
    """main, worker, pin or other (ThreadStack.role)."""
    count: int
    share: float
    """Of this role's thread samples."""
    label: str
    detail: str
    frames: tuple[str, ...]
    """Leaf first."""


@dataclass(frozen=True, slots=True)
class LinkSeen:
    """The PCIe link of one GPU as it ran while the GPU was busy (an idle link may be lowered)."""

    index: int
    gen: int
    width: int
    gen_max: int
    width_max: int
    loaded_ticks: int
    """Ticks at this link state with the GPU busy (see checks_gpu.LOADED_UTIL)."""


@dataclass(frozen=True, slots=True)
class Remedy:
    text: str
    stage: str | None
    """The verdict stage it addresses, or None for one that comes from a check."""
    check: str | None
    """The check it comes from, or None."""
    share: float
    """Share of the run the stage held (0 for a check)."""
    speedup_while: float | None
    """The verdicts' speed-up estimate while the stage held."""
    speedup_run: float | None
    """What that would give over the whole run (Amdahl: 1 / ((1 - share) + share / speedup_while))."""
    speedup_floor: bool = False
    """Both figures are floors ("or more"): see Summary.speedup_floor."""
    speedup_floor_cpus: bool = False
    """Floors because the input takes the step's CPUs: see Summary.speedup_floor_cpus."""
    title: str | None = None
    """The check's title, for a remedy that comes from a check."""
    beside: float | None = None
    """For a stage that was never the verdict, or whose own remedies the verdict ticks did not give:
    the share of the run it met its own cuts beside the verdict (Verdict.beside_remedies), its remedies
    quoted from the latest such tick; None for the others."""
    latest_while: float | None = None
    """The ceiling while the stage held at the tick whose remedies are quoted (the stage's latest with
    remedies, sections._stage_remedies), where a fix's figure there is above ``speedup_while``: their
    own figures are bounded by it, and a fix quoted at 4.7x stood under a stage line of "2.80x while
    it holds"."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    id: str
    title: str
    status: str
    """pass, warn, fail or not_checked."""
    reason: str
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class Gap:
    """Something that could not be read, and why (deduplicated)."""

    what: str
    """Where, for tools: a frame field path like ``gpus[].gpm.tensor``, or ``environment.ptrace``."""
    reason: str
    count: int
    """How many ticks (or 1 for the environment) met it."""
    title: str = ""
    """What was not measured, in plain words (what the report shows; empty in reports from before it)."""


@dataclass(frozen=True, slots=True)
class Report:
    source: Source
    environment: Maybe[Environment]
    links: tuple[LinkSeen, ...]
    summary: Summary
    checks: tuple[CheckResult, ...]
    remedies: tuple[Remedy, ...]
    timeline: tuple[Segment, ...]
    evidence: tuple[EvidenceLine, ...]
    stall: StallSummary | None
    stacks: tuple[HotStack, ...]
    not_checked: tuple[Gap, ...]
    figures: Figures | None = None
    """The run's headline figures (what ``gpuwatch compare`` reads); None in reports from before them."""
    epochs: tuple[Phase, ...] = ()
    """The job's epoch structure over the last minute watched (worker re-creation, first-batch
    waits, validation passes, checkpoint saves); empty in reports from before it or when none was seen."""
    epochs_earlier: tuple[Phase, ...] = ()
    """Where ``epochs`` is empty: the latest structure an earlier verdict of the run said (a 0.5 s
    save that was 3 % of its minute falls under the cut as the minute moves on: "none was seen" was
    false), else empty."""
    epochs_earlier_s: float | None = None
    """Seconds into the run of the verdict ``epochs_earlier`` is from."""
