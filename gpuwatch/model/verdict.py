"""The bottleneck verdict: which pipeline stage holds the GPU back, how sure, and why."""

from __future__ import annotations

from dataclasses import dataclass

IO = "io"
DECODE = "decode"
H2D = "h2d"
GPU_MEMORY = "gpu_memory"
LAUNCH = "launch"
CONTENTION = "contention"
GPU_BOUND = "gpu_bound"
CPU_BOUND = "cpu_bound"
"""A job with no GPU in use whose own compute on the CPU is the limit (the input keeps up)."""
IDLE = "idle"
UNKNOWN = "unknown"

PIPELINE = (IO, DECODE, H2D, GPU_MEMORY, LAUNCH, CONTENTION)
"""The six stages in pipeline order, as the pipeline panel shows them."""
STAGES = PIPELINE + (GPU_BOUND, CPU_BOUND, IDLE, UNKNOWN)

STAGE_TITLES = {
    IO: "I/O",  # storage or network reads: "Disk" read as a claim on storage where data came over a socket
    DECODE: "CPU prep",  # decoding and augmenting on the CPU, or a tokeniser's work: not only images
    H2D: "PCIe",
    GPU_MEMORY: "GPU memory",
    LAUNCH: "Launch",
    CONTENTION: "Contention",
    GPU_BOUND: "GPU-bound",
    CPU_BOUND: "CPU-bound",
    IDLE: "Idle",
    UNKNOWN: "Unknown",
}

LEVEL_OK = "ok"
LEVEL_WARNING = "warning"
LEVEL_BOTTLENECK = "bottleneck"
LEVEL_NA = "n/a"
"""A pipeline stage nothing was measured for: every evidence item of it does not apply or could not
be read (PCIe, GPU memory and Launch with no GPU to judge). Not "ok", which would say the stage was
checked and found fine; not a problem either. Added within schema 1: older recordings say "ok"."""
LEVELS = (LEVEL_OK, LEVEL_WARNING, LEVEL_BOTTLENECK, LEVEL_NA)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One signal compared against its threshold."""

    stage: str
    """The stage this item points to (or away from)."""
    signal: str
    value: float | None
    threshold: float | None
    op: str
    """How value is compared with threshold: ">=", "<=", ">" or "<"."""
    supports: bool
    """True when the comparison holds, i.e. the item points towards the stage."""
    text: str
    """The item in words, with the value and the cut filled in."""
    what: str = ""
    """The signal in words ("CPU steal"), for a label."""
    unit: str = "%"
    """How value and threshold read: "%" (a 0-1 share), "cores", "B/s", "/s", "threads", "x"."""
    applies: bool = True
    """False when the signal does not apply to this job (no DataLoader workers, no GPU): neither
    met nor unmet, and not "not measured" either."""


@dataclass(frozen=True, slots=True)
class Stall:
    """A GPU that idles periodically, from the 200 ms utilization samples."""

    period_s: float
    idle_s: float
    coincides_with: str | None


RESPAWN = "respawn"
EPOCH_START = "epoch_start"
VALIDATION = "validation"
CHECKPOINT = "checkpoint"
LEFT_ALIVE = "left_alive"
PHASE_KINDS = (RESPAWN, EPOCH_START, VALIDATION, CHECKPOINT, LEFT_ALIVE)
PHASE_SIGNAL = "epoch_"
"""The evidence rows of the epoch structure are signals ``epoch_<kind>`` (facts, no threshold)."""


@dataclass(frozen=True, slots=True)
class Phase:
    """A recurring part of the job's time outside steady training steps (its epoch structure)."""

    kind: str
    """respawn (DataLoader workers replaced by new ones: persistent_workers=False), epoch_start (the
    main thread waiting for the first batches after new workers start), validation (the main thread
    in an eval/no_grad pass), checkpoint (the main thread saving: torch.save, or a write burst),
    left_alive (new sets of workers that started beside earlier ones, which stayed alive: iterators
    the job still holds)."""
    count: int
    """Times it started within ``span_s``."""
    share: float | None
    """Share of ``span_s`` it took (None for respawn, an instant, and for left_alive)."""
    period_s: float | None
    """Seconds between two starts, the gaps' mean per period (None under two starts, and where ``uneven`` or ``sparse``
    says why, or where they come at about every tick)."""
    each_s: float | None
    """Mean seconds one occurrence lasts (None for respawn)."""
    span_s: float
    """The stretch of the recent past it was judged over."""
    uneven: bool = False
    """Its starts came at uneven intervals, so no period is said (``period_s`` None): a training and
    a validation loader without persistent workers re-create a set each, 0.4 s apart, every ~25 s,
    whose median interval (~13 s) was no interval the job had."""
    sparse: bool = False
    """Its starts do not cover ``span_s`` (the first came late in it, or too few came for their
    interval: phases._covers), so no period is said (``period_s`` None) and the count stands alone:
    a pace beside it would not fit the span ("every ~5.0 s (2 times in 44 s)")."""
    missed: int = 0
    """Starts that fell where no sample caught them, told by gaps of several periods: the count is
    then a lower bound, and says "at least"."""


MORE_WORKERS = "more_workers"
PERSISTENT_WORKERS = "persistent_workers"
CHEAPER_TRANSFORM = "cheaper_transform"
PINNED_MEMORY = "pinned_memory"
MORE_CPUS = "more_cpus"
FIXES = (MORE_WORKERS, PERSISTENT_WORKERS, CHEAPER_TRANSFORM, PINNED_MEMORY, MORE_CPUS)
"""The fixes whose own gain the verdict estimates (diagnosis/fix_gains.py)."""
FIX_WORDS = {MORE_WORKERS: "more workers", PERSISTENT_WORKERS: "persistent workers",
             CHEAPER_TRANSFORM: "a cheaper decode", PINNED_MEMORY: "pinned memory",
             MORE_CPUS: "more CPUs in the job's affinity mask"}
"""Each fix in words, as the TUI names the best one."""


def gain_words(stage: str) -> str:
    """How a stage's speed-up figure is said: "up to" where it is a ceiling (the stage's share of
    the time made free, Amdahl), "about" for contention, whose share is the time the job's threads
    queued or were taken: threads that work in lock-step lose more than that (trial 22: two OpenMP
    threads ran 5x slower while a neighbour took one of 2 cores, estimated 2.0x)."""
    return "about" if stage == CONTENTION else "up to"


@dataclass(frozen=True, slots=True)
class FixGain:
    """What one proposed fix is expected to gain, from what was seen (diagnosis/fix_gains.py)."""

    fix: str
    """One of FIXES."""
    factor: float | None
    """The job's expected speed-up with the fix (x times); None where the evidence is too thin."""
    basis: str
    """What the figure rests on, in words (or why there is none)."""
    partial: bool = False
    """The figure covers only the part of the fix's gain that was measured: the fix may also remove a
    cost no signal shows (persistent workers: a new worker's warm-up on its first items). Said as
    "about 1.3x from what was measured, more where ...", never as "little or no gain"."""
    more: str = ""
    """For a partial figure: where the gain may be larger, in words ("where each new worker warms up ...")."""
    upper: float | None = None
    """For a partial figure, the most the fix can give where all that no signal shows is its to take
    (kept workers: every wait for data gone, where the waits are the sets' start-up); None where not
    bounded. Said "about 1.3x from what was measured, up to 4.8x"."""
    bound: bool = False
    """The figure is an upper bound, not an estimate: the most the fix can give (keeping workers
    under a GPU-bound verdict: the GPU's idle time made busy). Said "up to", not "about"."""


@dataclass(frozen=True, slots=True)
class Verdict:
    t: float
    stage: str
    confidence: float
    """0..1."""
    sentence: str
    evidence: tuple[Evidence, ...]
    secondary: tuple[str, ...]
    speedup: float | None
    """The most the job could speed up if the stage's whole cost were gone (x times): the ceiling of
    every fix; ``gains`` holds what each proposed fix is expected to give."""
    remedies: tuple[str, ...]
    levels: tuple[tuple[str, str], ...]
    """(stage, level) for each of the six pipeline stages: one of LEVELS."""
    stall: Stall | None = None
    rank: int | None = None
    candidate: str | None = None
    """The stage the latest window points to, before the stability rule (for debugging)."""
    phases: tuple[Phase, ...] = ()
    """The job's epoch structure seen over the last minute (worker re-creation, first-batch waits,
    validation passes, checkpoint saves); empty when none was seen."""
    gains: tuple[FixGain, ...] = ()
    """Each proposed fix's own expected speed-up (``speedup`` is the ceiling: the stage made free)."""
    warned: tuple[tuple[str, str], ...] = ()
    """(stage, why in words) for each stage in ``secondary``: the reading that crossed its warning cut,
    which is lower than the verdict's cuts ("main thread in host-to-device copies 15 % of the latest
    40 samples, warns from 5 %"; two samples' worth where the window holds few, which can be above
    them: "..., warns from 2 samples"), or that its cuts
    are met as well (another stage ranks ahead of it, or the stability rule holds the verdict)."""
    speedup_floor: bool = False
    """``speedup`` is a floor ("or more"), not a ceiling: the stage's share was nearly all of the time,
    so removing it could give more than any figure. At the cap (MAX_SPEEDUP) the floor is the cap;
    for a share of main-thread stack samples it is what the samples bound (a 95 % Wilson bound on
    the share: 16 of 16 samples waiting bound the wait at 81 % or more, so "5.2x or more", not the
    cap's "20x or more")."""
    speedup_floor_cpus: bool = False
    """``speedup`` is a floor because the job's input takes the CPUs its step runs on too (DataLoader
    workers filling them beside a step on the CPU): a cheaper input frees CPU for the step as well,
    which the wait's ceiling does not count. Said so, not as a bound of the samples."""
    beside_remedies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(stage, its remedies) for each stage in ``secondary`` that meets its own cuts beside the verdict
    (it fires; another stage ranks ahead of it): what its fixes are, as if it were named. An input stage
    held at warning level 95 % of a run under a Contention headline had no remedy in the report, while
    an index on its workers' SQL lookup ran the job 38x faster (trial 40)."""
    speedup_point: float | None = None
    """Where ``speedup`` is a floor: the figure the share read gives, ``1 / (1 - share)`` capped (the
    ceiling the floor stands in for). A run's median over a stage's ticks reads it where most of them
    were no floor: floors said at 12 of 14 samples waiting ("2.5x or more") sat below the 4.7x of
    ticks at 11 of 14, and pulled a median of 3.4x down to 2.8x on a job whose own clock gave 3.8x."""

    def why_warned(self, stage: str) -> str:
        return dict(self.warned).get(stage, "")

    def level(self, stage: str) -> str:
        return dict(self.levels).get(stage, LEVEL_OK)

    @property
    def confidence_word(self) -> str:
        if self.confidence >= 0.75:
            return "high"
        if self.confidence >= 0.5:
            return "medium"
        return "low"

    @property
    def headed(self) -> tuple[str, str]:
        """(the title, the sentence after it) for a line that puts the title in front. The sentence
        stands alone in JSON and reports, and some begin with their stage's title ("Healthy,
        GPU-bound: the GPU has work..."): such a head replaces the bare title, so that the line does
        not say it twice ("GPU-bound (medium confidence 0.67): Healthy, GPU-bound: the GPU...")."""
        title = STAGE_TITLES.get(self.stage, self.stage)
        head, sep, rest = self.sentence.partition(": ")
        if sep and head.endswith(title) and len(head) <= len(title) + 12:
            return head, rest
        return title, self.sentence


def times(factor: float) -> str:
    """A fix's factor as every output writes it: two decimals under 2x, one from 2x (its estimate
    is no finer there). The TUI's pipeline line and the report's headline use it too: one line read
    "up to 6.2x ... pinned memory: about 6.20x", a report "about 7.50x" above the remedy's "7.5x"."""
    return f"{factor:.1f}" if factor >= 2 else f"{factor:.2f}"
