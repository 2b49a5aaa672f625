"""The verdict in one plain sentence, with the numbers that back it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuwatch.diagnosis.evidence import count, fmt, sets_of
from gpuwatch.diagnosis.fix_gains import decoding_seen, restarts_idle_gpu
from gpuwatch.diagnosis.validation_loader import validation_loads
from gpuwatch.diagnosis.phases import every_tick, find, periodic, saves_missed, worker_sets
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.speedup import share_ceiling
from gpuwatch.diagnosis.stack_signals import BLOCKED
from gpuwatch.diagnosis.stages import CPU_COMPUTE, INPUT_UNMEASURED, OFF_PIPELINE, StageResult
from gpuwatch.diagnosis.thresholds import (
    CHECKPOINT_WRITE_BPS,
    DRAM_BOUND,
    MAIN_CPU_BUSY,
    MAIN_CPU_IDLE,
    MIN_EVIDENCE_SAMPLES,
    MIN_WORKER_SAMPLES,
    OCC_MEMORY,
    RX_PAGEABLE_MAX,
    SM_HEALTHY,
    TINY_KERNEL_RATIO,
    WAIT_HIGH,
    WAIT_MODERATE,
    WORKER_BUSY_SHARE,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.values import job_exited
from gpuwatch.model.verdict import (
    CHECKPOINT,
    CONTENTION,
    DECODE,
    GPU_BOUND,
    GPU_MEMORY,
    H2D,
    IDLE,
    IO,
    LAUNCH,
    EPOCH_START,
    LEFT_ALIVE,
    RESPAWN,
    VALIDATION,
    Phase,
    Stall,
)


HELD = "the latest readings are weaker; holding this verdict until another stage clearly wins"
HOLDING = f" ({HELD})"
"""The note on a verdict the stability rule holds (stability.py) without the words it fired with."""
HELD_NOTE = re.compile(r" \((?:said \d+ s ago; )?" + re.escape(HELD) + r"\)")
"""Either note on a held verdict (HOLDING, held_note), to find or strip it."""


def held_note(fired: str, fired_phases: Sequence[Phase], ago_s: float, phases: Sequence[Phase]) -> str:
    """The sentence the held stage last fired with, said as such: its claims rest on readings of
    ``ago_s`` seconds back; the epoch clause is this tick's, as the verdict's phases are. Words made
    afresh from the weaker readings claimed what none of them showed: a Disk verdict fired by a
    checkpoint save, held two ticks, read "the workers wait on reads (... I/O pressure 0 %, disk 0 %
    busy)" and listed storage remedies for a job reading no file (trial 29). The fired sentence's
    own epoch clause is cut by what epochs() made of its phases, not found in the text, which
    quotes the job's strings."""
    return f"{without_epochs(fired, fired_phases)} (said {ago_s:.0f} s ago; {HELD}){epochs(phases)}"


def without_epochs(sentence: str, phases: Sequence[Phase]) -> str:
    """A verdict's sentence without its epoch clause, cut by what epochs() made of the verdict's own
    phases, not found in the text, which quotes the job's strings."""
    tail = epochs(phases)
    return sentence[: len(sentence) - len(tail)] if tail and sentence.endswith(tail) else sentence


RESTART_CAUSE = "persistent_workers=False, or workers that crash and are restarted"
"""Why workers are re-created, in words: new worker PIDs are all that is seen, and workers that
crash each epoch while the loop builds its DataLoader again show the same (trial 23: a job with
persistent_workers=True was told it had it False)."""


def _in(detail: object) -> str:
    """Where the samples behind a share were most often: the hottest frame, not where all of it went
    ("69 % of the time in ABCMeta.__instancecheck__" read as all of it in isinstance; trial 28)."""
    return f" (most often in {detail})" if detail else ""


def _of_samples(f: dict) -> str:
    """A main-thread share with what it was read from: "93 % of the time (13 of its last 14 samples)".
    A share of a few samples swings by a sample's worth (7 % of 14) from one tick to the next: the
    count says how much a figure can be trusted, where the verdict's window is short."""
    return _share_of(f.get("wait"), f.get("wait_n"))


def _share_of(w: float | None, n: int | None) -> str:
    """"93 % of the time (13 of its last 14 samples)", or without the count where none is known."""
    if w is None or not n:
        return f"{fmt(w)} of the time"
    return f"{fmt(w)} of the time ({round(w * n)} of its last {count(n, 'sample')})"


def _mostly(detail: object) -> str:
    """Where the step's samples mostly are, said before any wait figure: "waiting for data 0 % in
    graph._engine_run_backward" read as a wait inside backward."""
    return f", most often in {detail}" if detail else ""


def sentence(stage: str, r: StageResult | None, s: Signals, stall: Stall | None) -> str:
    f = dict(r.facts) if r is not None else {}
    sub = r.sub if r is not None else ""
    make = {IO: _io, DECODE: _decode, H2D: _h2d, GPU_MEMORY: _gpu_memory, LAUNCH: _launch,
            CONTENTION: _contention, GPU_BOUND: _gpu_bound, IDLE: _idle, CPU_COMPUTE: _cpu_compute,
            OFF_PIPELINE: _off_pipeline, INPUT_UNMEASURED: _input_unmeasured}.get(stage, _unknown)
    text = make(f, sub, s)
    if r is not None and not r.fires and stage not in (OFF_PIPELINE,) and make is not _unknown:
        text += HOLDING
    if validation_loader_said(stage, sub, s):
        text += validation_waits(s)
    text += _workers_gone(stage, sub, s)
    if stall is not None:
        during = f", during {stall.coincides_with}" if stall.coincides_with else ""
        if stall.coincides_with == "checkpoint saves" and any(p.kind == CHECKPOINT for p in s.phases):
            # The saves are timed again below from the stack samples ("~2.1 s every ~5.0 s" after
            # "idled ~2.2 s every ~5.2 s"): each figure says what it was read from (review 46).
            during = f"{during} (that from the GPU's utilization samples; the saves' own timing, from the stack samples, follows)"
        if stage == IDLE and sub == "exited":  # the stall was seen while the job ran: it is gone now
            text += f" While it ran, the GPU idled ~{stall.idle_s:.1f} s every ~{stall.period_s:.1f} s{during}."
        else:
            text += f" The GPU also idles ~{stall.idle_s:.1f} s every ~{stall.period_s:.1f} s{during}."
    return text + epochs(s.phases)


def _workers_gone(stage: str, sub: str, s: Signals) -> str:
    """Said after an input verdict on the DataLoader workers when the newest tick has none left: the
    verdict reads the last seconds, so "while the 1 DataLoader worker computes" stood for three ticks
    beside a process table and a chart showing no worker, once the demo's loader had ended (review 46)."""
    if stage not in (IO, DECODE) or sub not in ("workers", "ipc") or s.job.workers <= 0 or not s.epoch_ticks:
        return ""
    if s.epoch_ticks[-1].workers or find(s.phases, RESPAWN) is not None:
        return ""  # a job that re-creates its sets is between two: the epochs clause says so
    return (" The workers have exited since (none in the latest tick): these readings are of the last "
            "few seconds, before they did.")


def validation_loader_said(stage: str, sub: str, s: Signals) -> bool:
    """An input verdict on waits for batches from DataLoader workers, most of them the validation
    loader's (Signals.validation_loader): its sentence says so and its remedies lead with that loader."""
    return stage in (IO, DECODE, INPUT_UNMEASURED) and sub not in ("checkpoint", "inline", "loop", "sampler") and s.validation_loader


def _loads_whose(f: dict) -> str:
    if not validation_loads(f):
        return ""
    return (f" Most of this loading is the validation loader's: {f['val_load']} of the {count(f['load_n'], 'sample')} "
            "loading data were inside a validation pass.")


def validation_waits(s: Signals) -> str:
    """Whose wait it is, where most of it falls inside validation passes: the training loader's
    workers do nothing for the validation loader's batches (trial 29: a 25 % wait, 23 points of it
    validation's, was told to add training workers)."""
    k, n = s.validation_waits
    return (f" Most of these waits are the validation loader's: {k} of the {count(n, 'sample')} waiting for a "
            "batch were inside a validation pass.")


def epochs(phases: Sequence[Phase]) -> str:
    """The job's epoch structure as one sentence ("" when none was seen), led by "Epochs:" where it
    holds the workers' sets (their re-creation, their first batches) that epochs make: checkpoint
    saves alone read "Epochs: Checkpoint saves take 40 % ..." (review 46)."""
    text = phase_words(phases)
    if not text:
        return ""
    if not any(p.kind in (RESPAWN, EPOCH_START, LEFT_ALIVE) for p in phases):
        return f" {text}"
    return f" Epochs: {text[0].lower()}{text[1:]}"  # after the colon, as the other sentences say it


def phase_words(phases: Sequence[Phase]) -> str:
    """The phases of :func:`epochs` as one sentence with no lead, capitalised ("" when none)."""
    said = []
    for p in phases:
        every = f" every ~{p.period_s:.1f} s" if p.period_s is not None else ""
        each = f"~{p.each_s:.1f} s" if p.each_s is not None else ""
        # No period with two or more starts, or no duration: about every tick, or too short each to time,
        # which the ticks cannot measure (phases.py): the count is then a lower bound. Unless uneven
        # (intervals far apart) or sparse (the starts cover only part of the span): said as such.
        brief = p.each_s is None and p.kind != RESPAWN
        fast = every_tick([p])
        if p.uneven:  # no period: the intervals between starts were far apart from one another
            every = " at uneven intervals" if p.kind == RESPAWN else " each, at uneven intervals"
        elif p.sparse and p.kind != RESPAWN:  # no period: the starts cover only part of the span
            every = " each"
        if p.kind == RESPAWN and fast:
            said.append(f"the DataLoader workers are re-created at about every tick or more often (at least "
                        f"{count(p.count, 'time')} in {p.span_s:.0f} s, as gpuwatch sees at most one a tick: "
                        f"{RESTART_CAUSE})")
        elif p.kind == RESPAWN and p.count == 1:  # once: a new loader, not yet a pattern of epochs
            said.append(f"a new set of DataLoader workers replaced the last one (once in {p.span_s:.0f} s)")
        elif p.kind == RESPAWN and p.sparse:  # the count alone: a pace beside it would not fit the span
            said.append(f"the DataLoader workers were re-created {count(p.count, 'time')} in {p.span_s:.0f} s "
                        f"({RESTART_CAUSE})")
        elif p.kind == RESPAWN:
            # Starts that fell where no sample caught them (phases._period): the count is a lower bound
            least = "at least " if p.missed else ""
            said.append(f"the DataLoader workers are re-created{every} ({least}{count(p.count, 'time')} in "
                        f"{p.span_s:.0f} s: {RESTART_CAUSE})")
        elif p.kind == EPOCH_START:
            wait = "briefly (each too short to time from the ticks)" if brief else each
            # Sets re-created about every tick make every waiting tick a first-batch tick: its share
            # is all the waits of those ticks, a bound (trial 34: 14 % said, 4 % by the job's clock
            # for first batches, 8 % for the other waits).
            up = "up to " if every_tick(phases) else ""
            if p.count == 1:  # one start, not a pattern: said of the past (trial 38: the job's only set)
                said.append(f"a set of workers made the main thread wait {wait} for its first batches once "
                            f"({fmt(p.share)} of {p.span_s:.0f} s)")
            else:
                said.append(f"each new set of workers makes the main thread wait {wait} for its first batches "
                            f"({up}{fmt(p.share)} of the time)")
        elif p.kind in (VALIDATION, CHECKPOINT) and p.count == 1:
            # One is no share of the time yet: over a short watch it read "checkpoint saves take
            # 100 % of the time" on the first tick, falling as the watch went on.
            what = "a validation pass" if p.kind == VALIDATION else "a checkpoint save"
            took = f" (~{p.each_s:.1f} s)" if p.each_s is not None else ""
            within = f" in {p.span_s:.0f} s" if p.span_s >= 1.5 else ""  # not "once in 0 s"
            said.append(f"{what}{took} was seen once{within}")
        elif p.kind == VALIDATION:
            # Brief passes are counted still: "how often is not measured" stood beside a count of 8
            # in the JSON (trial 29).
            # Brief passes between two stack samples go uncounted, and two with no sample out of a
            # pass between them read as one: the count is a floor (trial 34: 15 said, 52 by the job's clock)
            least = "at least " if brief else ""
            seen = f"{least}{count(p.count, 'pass', 'passes')} in {p.span_s:.0f} s"
            # Not "about a tick or less": the partly filled ticks under-read a pass, and trial 31's
            # passes of 0.9-1.9 s by the job's clock read so beside a tick's "(~2.0 s)".
            how = f"{seen}, each too short to time from the ticks" if brief else f"{each}{every}"
            said.append(f"validation passes take {least_words(p)}{fmt(p.share)} of the time ({how}{_missed(p)})")
        elif p.kind == CHECKPOINT:
            # no duration where each save held one stack sample (phases.py): how often, if known, after it
            pace = every.removeprefix(" each").replace(" every", ", every")
            how = f"{each}{every}" if each else f"each too short to time from the stack samples{pace}"
            said.append(f"checkpoint saves take {least_words(p)}{fmt(p.share)} of the time ({how}{_missed(p)})")
        elif p.kind == LEFT_ALIVE:
            said.append(f"{count(p.count, 'new set')} of DataLoader workers started in {p.span_s:.0f} s and stayed "
                        "alive beside the earlier ones: the job still holds their iterators")
    if not said:
        return ""
    text = "; ".join(said)
    return f"{text[0].upper()}{text[1:]}."


def least_words(p: Phase) -> str:
    return "at least " if saves_missed(p) else ""


def _missed(p: Phase) -> str:
    if not saves_missed(p):
        return ""
    return f"; {p.count} seen in {p.span_s:.0f} s, about {p.missed} more fell between the stack samples"


def _workers(f: dict, verb: str, verb_one: str) -> str:
    """``2 DataLoader workers compute`` / ``1 DataLoader worker computes``; where several sets of
    workers live together (phases.worker_sets: several loaders, or the workers an earlier pass left
    alive), ``4 DataLoader workers in 2 sets (2 + 2: ...) compute``: the count is all of them, one
    loader's num_workers is a set's."""
    sets = f.get("sets") or ()
    if len(sets) >= 2:
        return (f"{sum(sets)} DataLoader workers in {sets_of(sets)} (each a loader's, or an earlier pass's "
                f"still alive; a set idles while another runs) {verb}")
    # One loader's num_workers as the remedies quote it ("raise num_workers from 14"): the largest set
    # of the minute. Where sets are re-created, the window's mean alive (11 of 14 on the H200 field
    # job) would read as another number for the same loader.
    n = int(f.get("loader_workers") or 0)
    if not n:
        mean = f.get("workers") or 0
        n = max(1, round(mean)) if mean > 0 else 0  # a mean over the window: workers that came late in it are some, not none
    return f"{count(n, 'DataLoader worker')} {verb_one if n == 1 else verb}"


def _each(f: dict) -> str:
    """" each" after a per-worker figure, but for a loader of one worker ("the 1 DataLoader worker
    computes (1.00 core CPU each ...)" read as if there were several)."""
    if f.get("idle_out"):  # worker_sets.working_cpu: not every set's workers
        return " for the 1 worker at work" if f.get("at_work") == 1 else " each in the sets at work"
    n = int(f.get("loader_workers") or 0) or round(f.get("workers") or 0)
    return "" if n == 1 and len(f.get("sets") or ()) < 2 else " each"


def _while(f: dict) -> str:
    """Said where the workers' readings are those of the ticks the main thread waited in."""
    mean, top = f.get("worker_cpu_mean"), f.get("worker_cpu_top")
    if not f.get("aligned_ticks") or mean is None:
        return ""
    busiest = f", the busiest {fmt(top, 'cores')}" if top is not None and top >= (f.get("worker_cpu") or 0) + 0.1 else ""
    # the mean over every tick is said where it reads otherwise than the waiting ticks' figure
    every = " a worker over every set" if f.get("idle_out") else ""
    overall = ("" if fmt(mean, "cores") == fmt(f.get("worker_cpu"), "cores")
               else f"; {fmt(mean, 'cores')}{every} on average")
    return f" while it waits{busiest}{overall}"


def _busy(s: Signals) -> str:
    return fmt(s.gpu.compute_busy)


def _starved(s: Signals) -> str:
    """What a verdict without stacks rests on (input_stages._without_stacks): a starved GPU, or
    without one a main thread that uses little CPU. "The GPU has work only not measured of the time"
    was said on a host with no GPU (trial 28)."""
    if s.gpu.present and s.gpu.compute_busy is not None:
        return f"the GPU has work only {fmt(s.gpu.compute_busy)} of the time"
    return (f"the main thread uses only {fmt(s.job.main_thread_cpu, 'cores')} CPU (a thread waiting for data "
            "uses none)")


def _io(f: dict, sub: str, s: Signals) -> str:
    if sub == "checkpoint":
        if not f.get("recurring"):
            # A save seen once is an event of the window, not a rate: a watch begun during a save read
            # "spends 60 % of its time writing checkpoints" over its first 2 s (trial 26: 8 % by the
            # job's clock, a save every ~11 s).
            # Said over its samples, not seconds: the stack window widens back to enough samples.
            share, n = f.get("checkpoint"), f.get("checkpoint_n")
            if share is not None and n:
                return (f"Checkpoint saving holds training: the main thread was writing a checkpoint"
                        f"{_in(f.get('ckpt_detail'))} in {round(share * n)} of its last {count(n, 'stack sample')} "
                        f"({fmt(share)}).")
            return (f"Checkpoint saving holds training: the main thread was writing a checkpoint"
                    f"{_in(f.get('ckpt_detail'))} {fmt(share)} of the time.")
        saves = find(s.phases, CHECKPOINT)
        least = least_words(saves) if saves is not None else ""  # as the epochs clause says it
        return (f"Checkpoint saving holds training: the main thread spends {least}{fmt(f.get('checkpoint'))} of its "
                f"time writing checkpoints{_in(f.get('ckpt_detail'))}.")
    where = _data_where(f.get("location"))
    if sub == "inline":
        if f.get("inline_net_reads"):
            return (f"Input-bound on loading from a server or object store in the training process: with num_workers=0 "
                    f"the main thread loads data itself {fmt(f.get('inline'))} of the time, mostly waiting on socket reads"
                    f"{_in(f.get('main_detail'))}.{_loads_whose(f)}")
        return (f"Input-bound on storage in the training process: with num_workers=0 the main thread loads data itself "
                f"{fmt(f.get('inline'))} of the time, mostly waiting on reads.{where}{_loads_whose(f)}")
    parts = [f"{fmt(f.get('worker_cpu'), 'cores')} CPU{_each(f)}{_while(f)}"] if f.get("worker_cpu") is not None else []
    if f.get("worker_read_bps"):
        parts.append(f"reading {fmt(f.get('worker_read_bps'), 'B/s')}")
    if (f.get("worker_d") or 0) > 0:
        parts.append(f"{fmt(f.get('worker_d'))} in D state")
    if (f.get("psi_io") or 0) > 0:
        parts.append(f"I/O pressure {fmt(f.get('psi_io'))}")
    if f.get("disk_busy") is not None:
        parts.append(f"disk {f.get('device') or ''} {fmt(f.get('disk_busy'))} busy".replace("  ", " "))
    if sub == "no_stacks":
        said = f" ({', '.join(parts)})" if parts else ""
        return (f"Probably input-bound on storage: {_starved(s)} while the "
                f"{_workers(f, 'wait', 'waits')} on reads{said}; no stacks "
                f"to confirm the data wait.{where}")
    if f.get("net_reads"):
        # from a server or an object store: the local disk and the job's folder say nothing of it
        parts = [p for p in parts if not p.startswith(("disk ", "I/O pressure"))]
        if f.get("io_detail"):
            parts.append(f"in {f['io_detail']}")
        said = f" ({', '.join(parts)})" if parts else ""
        return (f"Input-bound on loading from a server or object store: the main thread waits for data "
                f"{_of_samples(f)} while the {_workers(f, 'wait', 'waits')} on socket reads{said}.")
    if f.get("io_detail"):
        parts.append(f"in {f['io_detail']}")
    said = f" ({', '.join(parts)})" if parts else ""
    return (f"Input-bound on storage: the main thread waits for data {_of_samples(f)} while "
            f"the {_workers(f, 'wait', 'waits')} on reads{said}.{where}")


def _data_where(loc) -> str:  # noqa: ANN001 - DataLocation | None
    """Where the data is: the folder of the files seen open, or else the working directory, said as
    such (no data file was seen open, so the data may be elsewhere)."""
    if loc is None:
        return ""
    net = " (network)" if loc.network else ""
    if loc.kind == "cwd":
        return f" No data file was seen open; the working directory, {loc.path}, is on {loc.fstype}{net}."
    return f" Data: {loc.path} on {loc.fstype}{net}."


def _decode(f: dict, sub: str, s: Signals) -> str:
    if sub == "helpers":
        n, of = f.get("helpers") or 0, f.get("helpers_of") or 0
        at = s.stacks.top(lb.ROLE_MAIN_THREAD, lb.DATA_WAIT)
        who = (f"{n} of the job's {of} other processes" if of > n
               else f"the job's {count(n, 'other process', 'other processes')}")
        return (f"Input-bound on the job's own batch-making processes: the main thread waits for data "
                f"{_of_samples(f)}{f', most often in {at},' if at else ''} with no DataLoader worker, "
                f"while {who} "
                f"{'computes' if n == 1 else 'compute'} ({fmt(f.get('helper_cpu'), 'cores')} CPU"
                f"{'' if n == 1 else ' each'}); gpuwatch samples no stacks of {'it' if n == 1 else 'them'}, so what "
                f"{'it computes' if n == 1 else 'they compute'} is not shown.")
    if sub == "inline":
        # no worker to sample for a decoder: the main thread's own load is said as loading, not decoding
        if validation_loads(f):
            return (f"Input-bound on loading in the validation passes: the main thread loads and prepares batches "
                    f"itself {fmt(f.get('inline'))} of the time{_in(f.get('main_detail'))}, "
                    f"{f['val_load']} of its {count(f['load_n'], 'sample')} loading data inside a validation pass, "
                    "so the validation loader has num_workers=0.")
        return (f"Input-bound on loading in the training process: with num_workers=0 the main thread loads and "
                f"prepares each batch itself {fmt(f.get('inline'))} of the time{_in(f.get('main_detail'))}.")
    if sub == "loop":
        # Outside the DataLoader, whatever its workers do: the loop's own transforms are time the step
        # and the GPU wait for (trial 30: ColorJitter on each sample in the loop read as the model's compute).
        waits = "the GPU and the step wait" if s.gpu.present else "the step waits"
        return (f"Input-bound on preparing data in the training loop: outside the DataLoader, the main thread "
                f"prepares batches itself {fmt(f.get('loop'))} of the time{_in(f.get('loop_detail'))}, and "
                f"{waits} meanwhile.")
    if sub == "sampler":
        # The sampler runs in the training process whatever num_workers is: said so, as the reason no
        # worker takes the work over (trial 38: called "batch transfer", told to send uint8 tensors).
        waits = "the GPU and the step wait" if s.gpu.present else "the step waits"
        share, n, where = f.get("sampler"), f.get("n_main"), f.get("sampler_detail")
        said = [f"{round(share * n)} of its last {count(n, 'sample')}"] if share is not None and n else []
        said += [f"most often in {where}"] if where else []
        return (f"Input-bound on the DataLoader's sampler: the main thread draws the batches' indices itself "
                f"{fmt(share)} of the time{' (' + ', '.join(said) + ')' if said else ''}; the sampler runs in the "
                f"training process, not in the DataLoader's workers, and {waits} meanwhile.")
    if sub == "starting":
        spawn = (" Its workers are started by spawn or forkserver: each new one imports the training script "
                 "and its libraries again before its first item.") if f.get("spawned") else ""
        init = f.get("worker_init")
        # What the workers were seen doing, where their own samples show the start-up (trial 41)
        seen = (f" The workers were in their worker_init_fn in {round(init[0] * init[1])} of their "
                f"{count(init[1], 'stack sample')} of the last minute: each new worker runs it before its first "
                "item." if init else "")
        # Named for the workers' own start-up, the main thread waits in the loader's data queue, not
        # in its start or stop (review 51)
        during = ("while its new workers run their worker_init_fn" if init else
                  "mostly while the DataLoader starts or stops a set of workers (or has none yet)")
        return (f"Input-bound on starting workers: the main thread waits for data {_of_samples(f)}, "
                f"{during}, before they deliver their first batches.{spawn}{seen}")
    if sub == "ipc":
        # The transfer's own share, with its samples: the data wait's whole share, said as the time
        # "receiving batches", read 33 % where 4 of the run's 152 samples were in it (trial 29)
        ipc, n = f.get("ipc"), f.get("ipc_n")
        part = (f"{'all' if round(ipc * n) == round((f.get('wait') or 0) * n) else round(ipc * n)} of them"
                if ipc is not None and n and n == f.get("wait_n") else _share_of(ipc, n))
        return (f"Input-bound on batch transfer: the main thread waits for data {_of_samples(f)}, {part} "
                "receiving batches from the workers (shared-memory IPC and unpickling).")
    full = ""
    if f.get("cpu_short") and f.get("usable"):
        full = f" The workers fill the {count(f['usable'], 'usable CPU')}."
    if sub == "no_stacks":
        return (f"Probably input-bound on the DataLoader workers' CPU work: {_starved(s)} "
                f"while the {_workers(f, 'use', 'uses')} {fmt(f.get('worker_cpu'), 'cores')}{_each(f)}; "
                f"no stacks to confirm the data wait or to tell what the workers compute.{full}")
    # "Decode/augmentation" only where a worker sample was seen in an image decoder
    # (fix_gains.decoding_seen): a tokenising loader's workers compute, they decode no image.
    what = "CPU decode/augmentation" if decoding_seen(s) else "the DataLoader workers' CPU work"
    return (f"Input-bound on {what}: the main thread waits for data {_of_samples(f)} "
            f"while the {_workers(f, 'compute', 'computes')} "
            f"({fmt(f.get('worker_cpu'), 'cores')} CPU{_each(f)}{_while(f)}"
            f"{', most often in ' + str(f['worker_detail']) if f.get('worker_detail') else ''}).{full}")


def _h2d(f: dict, sub: str, s: Signals) -> str:
    rate = f"{fmt(f.get('rx_bps'), 'B/s')} ({fmt(f.get('rx_frac'))} of the link)"
    if sub == "link":
        sm = f" while the SMs are {fmt(f.get('sm'))} active" if f.get("sm") is not None else ""
        return (f"Host-to-device copies fill the PCIe link: {rate}{sm}; NVML's {fmt(f.get('busy'))} "
                "utilization counts the copy engine, not compute.")
    if sub == "pageable":
        return (f"Host-to-device copies hold the GPU back: it is busy with copies only ({fmt(f.get('copy_frac'))} "
                f"of the time, SMs {fmt(f.get('sm'))}) at {rate}, under the {fmt(RX_PAGEABLE_MAX)} of the link "
                "that pinned copies exceed (94 % on an H200): the copies look pageable (unpinned).")
    if sub == "copies":
        return (f"Host-to-device copies take {fmt(f.get('copy_frac'))} of the GPU's time with the SMs idle "
                f"({fmt(f.get('sm'))}) at {rate}, not overlapped with compute.")
    if sub == "pin_thread":
        return (f"The pin-memory thread is saturated ({fmt(f.get('pin_cpu'), 'cores')}) while the main thread "
                f"waits for data {fmt(f.get('wait'))} of the time.")
    return (f"The main thread spends {fmt(f.get('h2d_share'))} of its time copying data to the GPU"
            f"{_in(f.get('detail'))}; PCIe RX {rate}.")


def _gpu_memory(f: dict, sub: str, s: Signals) -> str:
    """What the GPU showed, naming the sign that held (gpu_stages.gpu_memory's ``by``): "memory
    traffic" only where DRAM bandwidth reached its cut; occupancy alone is said as occupancy, beside
    the DRAM reading that did not reach it (review 36: "GPU-bound on memory traffic ... DRAM 44 %"
    beside "○ DRAM bandwidth used: 44 % (needs at least 60 %)"). Layout ops are named only where the
    main thread was seen in them."""
    if sub == "stacks":
        return (f"The GPU has work {fmt(f.get('busy'))} of the time while the main thread is in layout ops "
                f"{fmt(f.get('layout_share'))} of the time{_in(f.get('layout_detail'))}; without GPM this "
                "memory-bound reading is weak.")
    sm, tensor = fmt(f.get("sm_work", f.get("sm"))), fmt(f.get("tensor_work", f.get("tensor")))
    dram, occ = fmt(f.get("dram_work", f.get("dram"))), fmt(f.get("occ_work", f.get("occ")))
    layout = (f"; the main thread is in layout ops {fmt(f.get('layout_share'))} of the time"
              f"{_in(f.get('layout_detail'))}" if f.get("layout_seen") else "")
    by = f.get("by")
    if by == "dram":
        return (f"GPU-bound on memory traffic, not math: SMs {sm} active but tensor cores {tensor}, DRAM bandwidth "
                f"{dram} used (from {fmt(DRAM_BOUND)} it is near its limit), occupancy {occ}: copy, layout or "
                f"elementwise kernels{layout}.")
    if by == "occupancy":
        return (f"GPU-bound on kernels that leave the tensor cores idle: SMs {sm} active, tensor cores {tensor}, "
                f"occupancy {occ} (warps resident); occupancy of {fmt(OCC_MEMORY)} or more beside idle tensor "
                "cores is the sign of copy, layout and elementwise kernels whose warps wait on memory. DRAM "
                f"bandwidth is only {dram} used (a full memory bus reads {fmt(DRAM_BOUND)} or more){layout}.")
    # Held with neither sign at its cut now (stability.py): the readings, with no cause read into them.
    return (f"Memory-bound kernels held the GPU in earlier readings; now SMs {sm} active, tensor cores {tensor}, "
            f"DRAM bandwidth {dram} used, occupancy {occ}{layout}.")


def _launch(f: dict, sub: str, s: Signals) -> str:
    # "Tiny kernels" only where their signature was read (SM active a small part of the engine's
    # active time): a warm-up tick at 0.89 of it had said "(tiny kernels)" beside its own evidence,
    # "0.89 (needs at most 0.25): not met" (review 30)
    tiny = ""
    if f.get("sm") is not None:
        ratio = f.get("ratio")
        kind = " (tiny kernels)" if ratio is not None and ratio <= TINY_KERNEL_RATIO else ""
        tiny = f" and its SMs are {fmt(f.get('sm'))} active{kind}"
    if sub == "sync":
        at = f" at {f['sync_detail']}" if f.get("sync_detail") else ""
        return (f"Sync-bound: the GPU has work only {fmt(f.get('busy'))} of the time{tiny} while the main "
                f"thread spends {fmt(f.get('sync'))} in CPU-GPU synchronisations{at}, not waiting for data.")
    if sub == "dispatch":
        return (f"Launch-bound: the GPU has work only {fmt(f.get('busy'))} of the time{tiny} while the main "
                f"thread runs the step flat out ({fmt(f.get('main_cpu'), 'cores')} CPU; "
                f"{fmt(f.get('dispatch'))} of samples in the step's ops{_in(f.get('dispatch_detail'))}: dispatching, or "
                "spin-waiting in a sync such as .item()), not waiting for data.")
    return (f"Launch-bound: the GPU has work only {fmt(f.get('busy'))} of the time{tiny} while the main "
            f"thread burns {fmt(f.get('main_cpu'), 'cores')} and the workers idle; no stacks to tell "
            "dispatch from synchronisation.")


def _contention(f: dict, sub: str, s: Signals) -> str:
    values = f.get("values") or {}
    said, lockstep = [], ""
    for cause in f.get("causes") or ():
        if cause == "tenant":
            top = (f.get("tenants") or ())[:1]
            who = f"{top[0].name} (pid {top[0].pid})" if top else "another process"
            said.append(f"{who} takes {fmt(values.get('tenant'))} of the GPU's SM time")
        elif cause == "throttle":
            said.append(f"the GPU is throttled {fmt(values.get('throttle'))} of the time")
        elif cause == "cgroup":
            quota = f" ({f['quota']:.1f} cores)" if f.get("quota") else ""
            said.append(f"the cgroup CPU quota{quota} throttles the job {fmt(values.get('cgroup'))} of the time")
        elif cause == "neighbours":
            n = f.get("queued_threads", f.get("delay"))
            queued = (f", and the job queues for a CPU (on average {fmt(n, 'threads')} ready to run "
                      "with no CPU free)") if n is not None else ""
            if f.get("wants") and queued:  # system_stages._threads_at_once
                lockstep = (f" The training process would use {fmt(f['wants'], 'cores')}, several threads at once: "
                            "threads that work in lock-step, such as PyTorch's intra-op pool, can lose more than "
                            "their queued time, so the speed-up may be larger.")
            said.append(f"processes outside the job use {fmt(f.get('others_cpu'), 'cores')} of "
                        f"{_outside_of(f)}{queued}")
        elif cause == "gil":
            who = f.get("gil_holder")
            said.append(f"a thread of its own{f' ({who})' if who else ''} holds the GIL in {f.get('gil_n')} of the main "
                        f"thread's last {count(f.get('gil_of') or 0, 'sample')}, and the training loop's Python, "
                        "between its ops, waits for it then")
        elif cause == "steal":
            said.append(f"the hypervisor steals {fmt(f.get('steal'))} of the CPU")
        elif cause == "memory":
            said.append(f"memory pressure (PSI memory {fmt(f.get('psi_mem'))})")
        elif cause == "link":
            said.append("the PCIe link keeps retrying (replays)")
    if not said:  # held by the stability rule after every cause fell below its cut
        return ("Contention slowed the job until recently; no outside cause is above its cut in the latest "
                "readings.")
    return "Contention slows the job: " + "; ".join(said) + "." + lockstep + _blocked_beside(f, s)


def _outside_of(f: dict) -> str:
    """"2 CPUs", or where the job may run on fewer than the host has, the host's CPUs and how much of
    the outside load must run on the job's (system_stages.contention)."""
    usable, host = f.get("usable") or 0, f.get("host_cpus") or 0
    if host <= usable:
        return count(usable, "CPU")
    return (f"the host's {count(host, 'CPU')}, at least {fmt(f.get('others_on_mask'), 'cores')} of it on the "
            f"{count(usable, 'CPU')} the job may run on (its affinity mask)")


def _blocked_beside(f: dict, s: Signals) -> str:
    """The main thread blocked in the job's own code beside a CPU contention, said where it is a high
    share: the speed-up (speedup.py) takes that time as fixed, but where the blocking sets the pace (a
    full output pipe, a lock, a rate limit) it grows as the rest shrinks, and freeing CPUs gains less.
    A job that printed every step into a pipe read at 12.5 lines/s ran 12.5 steps/s with and without
    outside load (trial 30), where the figure said about 1.82x."""
    cpu = set(f.get("causes") or ()) & {"neighbours", "cgroup", "steal"}
    share, n = s.stacks.blocked_outside_share, s.stacks.n_main
    if not cpu or share is None or share < WAIT_HIGH or s.stacks.blocked_outside < MIN_EVIDENCE_SAMPLES:
        return ""
    where = s.stacks.top(lb.ROLE_MAIN_THREAD, BLOCKED)  # of the blocked samples, not every "other" one
    return (f" The main thread is also blocked in the job's own code {fmt(share)} of the time, "
            f"{s.stacks.blocked_outside} of its last {count(n, 'sample')}{f', most often in {where}' if where else ''}. "
            "The speed-up counts that time as fixed: if it sets the pace (a full output pipe, a lock, a rate "
            "limit), freeing CPUs gains less.")


def _gpu_bound(f: dict, sub: str, s: Signals) -> str:
    # The wait, its sample count and its cut from one window: the stage in force reads the held
    # window, and "25 % on only 7 samples" mixed it with the latest window's count.
    w = f.get("wait")
    n_main, moderate = f.get("n_main", s.stacks.n_main), f.get("moderate", s.stacks.moderate)
    counted = w is not None and w >= moderate
    if counted:
        keeps = f"the main thread still waits for data {_share_of(w, n_main)}"
    elif w is not None and w >= WAIT_MODERATE:
        # Under the window's moderate cut only for want of samples (thresholds.moderate_cut): a share
        # this size is not "keeping up" in words, it is too thin to count.
        keeps = (f"the data wait reads {fmt(w)} on only {count(n_main, 'main-thread sample')}, too few "
                 "to count as a wait")
    else:
        keeps = "the input keeps up" + (f" (data wait {fmt(w)})" if w is not None else "")
    # Workers restarted each epoch with waits for their first batches leave time a fix gives back
    # (remedies.py proposes keeping them): not all healthy, even on a saturated tick.
    restarts = restarts_idle_gpu(f, s)
    healthy = bool(f.get("saturated")) and not restarts
    idle = ""
    if not healthy and f.get("busy") is not None:
        gone = fmt(1 - f["busy"])
        if counted:
            # The wait was just said: "for no host-side reason" beside it contradicted the sentence
            # (H100 run 47, Lightning restarting its workers each epoch: waits 18 %, idle 15 %).
            # "In part": nothing measured says the waits and the idle time are the same time.
            idle = f" It idles {gone} of the time, part of it where those waits outlast the work queued ahead."
        elif find(s.phases, EPOCH_START) is not None:  # the epoch phases, said after this, name the waits
            idle = f" It idles {gone} of the time, part of it while new workers build their first batches."
        else:
            idle = f" It idles {gone} of the time for no host-side reason gpuwatch can see (short gaps between steps)."
    elif counted:  # saturated: the queued work covers the waits
        keeps += ", but the GPU stays busy on the work queued ahead"
    if not f.get("gpm"):
        # "Never starved" only of a saturated GPU: one that idles, with restarts, was starved at times.
        what = ("without GPM this means never starved, not necessarily efficient" if healthy
                else "without GPM, how efficient its kernels are is not known")
        return f"GPU-bound: the GPU has work {fmt(f.get('busy'))} of the time and {keeps}; {what}.{idle}"
    head = "Healthy, GPU-bound" if healthy else "Mostly GPU-bound"
    text = (f"{head}: the GPU has work {fmt(f.get('busy'))} of the time with SMs {fmt(f.get('sm'))} active and "
            f"tensor cores {fmt(f.get('tensor'))}; {keeps}.{idle}")
    if (f.get("sm_work") or 0.0) < SM_HEALTHY:
        text += f" SMs only {fmt(f.get('sm_work'))} active while it works: kernels too small to fill the GPU."
    return text


def _idle(f: dict, sub: str, s: Signals) -> str:
    if sub == "exited":
        return f"Not training: {job_exited(s.exit_reason)}."
    if sub == "stopped":
        return ("The job is stopped (state T: SIGSTOP, Ctrl-Z or a debugger): nothing to diagnose until it "
                "runs again (kill -CONT resumes it).")
    if sub == "compiling":
        return _compiling(f, s)
    doing = f" (in {f['detail']})" if f.get("detail") else ""
    if f.get("ops"):  # the step runs now and then: it trains, and what it idles in sets the pace
        where = f", most often in {f['detail']}" if f.get("detail") else ""
        gpu = f"the GPU is idle ({fmt(s.gpu.busy)}) and " if sub == "gpu_idle" else ""
        # one count, the minute's, for both: the window's share alone read 100 % beside "4 of 109"
        return (f"Mostly idle: {gpu}of its last {count(f['ops_of'], 'main-thread sample')}, "
                f"{f['ops_outside']} are outside every training frame{where}, and {f['ops']} in the model's "
                "step: what it waits on there (a sleep, a lock, a remote call) sets the job's pace, not a "
                "pipeline stage.")
    head, seen = _not_training(f)
    if sub == "gpu_idle":
        return (f"{head}: the GPU is idle ({fmt(s.gpu.busy)}) and the main thread is outside a "
                f"training loop{doing}{seen}.")
    if sub == "no_gpu":
        return f"{head}: the job holds no GPU and its main thread is idle{doing}{seen}."
    return f"{head}: no GPU on this machine and the job's main thread is idle{doing}{seen}."


def _not_training(f: dict) -> tuple[str, str]:
    """The head of an idle sentence and the clause saying what its stack samples can bound. A few score
    samples with no step among them bound the step's share only loosely (the Wilson interval's upper
    end): a job waiting 50 ms on a remote call before each 2 ms step, 18 steps a second, showed none
    in 64 samples and read "Not training" at 0.95 for its first 30 s. The head says so, and the
    clause gives the count and the bound (a step seen in one tick only is counted here, though two
    are needed to call it training); without stack samples (no py-spy) the quiet CPU is the claim."""
    n = f.get("ops_of") or 0
    if not n:
        return "Not training", ""
    k = f.get("ops_seen") or 0
    bound = fmt(share_ceiling(k / n, n))
    if not k:
        return ("Not training, as far as its samples show",
                f"; none of its last {count(n, 'main-thread sample')} is in the model's step, so a step, if any "
                f"runs, takes under {bound} of its time")
    # A step seen in one tick only is no pattern yet (the last step before a pause, or a slow trainer):
    # not "not training" beside a step sample (review 47), and not yet the settled "Mostly idle:".
    return ("Mostly idle, as far as its samples show",
            f"; {k} of its last {count(n, 'main-thread sample')} {'is' if k == 1 else 'are'} in the model's step, "
            f"seen in one tick only, so its steps, if it still trains, take under {bound} of its time")


def _compiling(f: dict, s: Signals) -> str:
    """torch.compile at work: no step runs until the compiler returns (IDLE's "compiling")."""
    helpers = ""
    if s.job.helpers_busy:  # C++ and Triton builds run in child processes (g++/cc1plus, compile workers)
        n = round(s.job.helpers)
        helpers = (f"; the job's {count(n, 'other process', 'other processes')} {'uses' if n == 1 else 'use'} "
                   f"{fmt(s.job.helpers_cpu, 'cores')}")
    return (f"Compiling, not training: torch.compile's compiler holds the main thread "
            f"{_share_of(f.get('compiling'), f.get('n'))}{_mostly(f.get('detail'))}{helpers}. No step runs until "
            "it returns, so no pipeline stage is judged; a compile at the start is paid once, one that comes "
            "back later is a recompile.")


def _cpu_compute(f: dict, sub: str, s: Signals) -> str:
    where = "the job holds no GPU" if s.gpu.has_gpus else "there is no GPU to judge"
    # With its sample count: "0 %" of 6 samples is a thin claim of "not its input" (trial 34: a job
    # waiting 38 % by its own clock read 0 of 6), which the count lets the reader weigh.
    wait = f", waiting for data {_of_samples(f)}" if f.get("wait") is not None else ""
    # A main thread short of a core beside workers that take the CPUs shares them with its own
    # input: said, so "0.34 core" does not read as a step that needs little CPU, and the head does
    # not say "not its input" of a job whose input's CPU is what the step lacks (trial 38).
    shared, head = "", "the job's own compute on the CPU is the limit, not its input"
    if (f.get("main_cpu") or 0.0) < MAIN_CPU_BUSY and (workers := s.input_on_cpus) is not None:
        head = "the job's own compute fills the CPUs, its input's included"
        shared = (f" It gets under a core because the job's DataLoader workers use {fmt(workers, 'cores')} of the "
                  f"{count(s.job.usable_cpus, 'usable CPU')} preparing batches: the step and its input share the "
                  "CPUs, so cheaper input work speeds the step too.")
    # Validation passes compute on the main thread too: "computes the step itself" beside "validation
    # passes take 58 % of the time" read as two stories (trial 27).
    val = find(s.phases, VALIDATION)
    what = ("computes the step and its validation passes itself" if periodic(val) and (val.share or 0.0) >= WAIT_HIGH  # type: ignore[union-attr]
            else "computes the step itself")
    return (f"CPU-bound: {head}. The main thread "
            f"{what} "
            f"({fmt(f.get('main_cpu'), 'cores')} CPU{_mostly(f.get('detail'))}{wait}); {where}, so no GPU stage applies."
            f"{shared}")


def _off_pipeline(f: dict, sub: str, s: Signals) -> str:
    detail = s.stacks.top(lb.ROLE_MAIN_THREAD, lb.OTHER)
    ran = s.job.exited_cpu
    # Commands run and waited for use CPU no stack shows: say it where it is worth a line.
    commands = (f"; commands it runs and waits for use {fmt(ran, 'cores')}"
                if ran is not None and ran >= MAIN_CPU_IDLE else "")
    if not s.gpu.present:
        held = "the job holds no GPU" if s.gpu.has_gpus else "there is no GPU"
        return (f"The main thread is outside every training frame {fmt(s.stacks.share(lb.OTHER))} of the time"
                f"{_in(detail)}: the job's own code, not a pipeline stage or the model's compute, sets the pace "
                f"({held}){commands}.")
    return (f"The GPU has work only {_busy(s)} of the time, but the main thread is outside every training "
            f"frame {fmt(s.stacks.share(lb.OTHER))} of the time{_in(detail)}: the job's own code, not a "
            f"pipeline stage, holds the GPU back{commands}.")


def _input_unmeasured(f: dict, sub: str, s: Signals) -> str:
    if sub == "inline":
        return (f"Input-bound for a reason gpuwatch does not measure: with num_workers=0 the main thread loads "
                f"data {fmt(f.get('inline'))} of the time, using only {fmt(s.job.main_thread_cpu, 'cores')} CPU and "
                "with no storage sign (no reads, D state, I/O pressure or iowait): it may sleep, wait on a lock or "
                "on the network.")
    # What was seen, not "the workers neither compute (0.48 core CPU each)": a worker at half a core
    # does compute some of the time, in code its stack samples did not catch (trial 28: a
    # worker_init_fn building a table, then crashing).
    # Workers re-created again and again live a few seconds each, and a stack sample often finds one
    # gone: their start-up (a worker_init_fn building a table) is the likeliest code their samples
    # missed (trial 29: 26 s of this sentence on a job whose workers computed in worker_init_fn).
    p = find(s.phases, RESPAWN)
    restarts = (" With its sets re-created again and again, a short-lived worker is often "
                "gone before a stack sample reads it: a set's start-up (worker_init_fn, a lazy load) may be that "
                "code." if p is not None and p.count >= 2 else "")
    return (f"Input-bound for a reason gpuwatch does not measure: the main thread waits for data "
            f"{fmt(f.get('wait'))} of the time while the {_workers(f, 'use', 'uses')} "
            f"{fmt(f.get('worker_cpu'), 'cores')} CPU{_each(f)}, {_worker_samples(f)} and no "
            f"storage sign (reads {fmt(f.get('worker_read_bps'), 'B/s')}, no D state, I/O pressure or iowait): "
            f"they may sleep, wait on a lock or on a remote service, or compute in code their samples missed.{restarts}")


def _worker_samples(f: dict) -> str:
    """What the workers' stack samples showed, read with the verdict's own evidence (its facts), for a
    verdict the workers' CPU decided: the CPU says they mostly do not run, which their samples may not
    say ("with no stack sample of them at work" stood beside an evidence row of 100 % of their samples
    computing). Under MIN_WORKER_SAMPLES their share says nothing yet, and their count is said."""
    busy, n = f.get("worker_busy"), int(f.get("worker_n") or 0)
    if busy is None or not n:
        # "recent": the report's hottest stacks, over the whole run, listed 19 samples of them (review 44)
        return "with no recent stack sample of them"
    if not busy:
        return f"with no stack sample of them at work ({count(n, 'sample')})"
    if n < MIN_WORKER_SAMPLES:
        return f"with {round(busy * n)} of their {count(n, 'stack sample')} at work, too few to tell what they do"
    if busy < WORKER_BUSY_SHARE:
        return f"with only {fmt(busy)} of their {count(n, 'stack sample')} at work"
    return (f"with {fmt(busy)} of their {count(n, 'stack sample')} in their own code, yet at that CPU they run "
            "only part of the time")


def _producers(s: Signals) -> str:
    """Where batches come from when no DataLoader worker makes them: the job's other processes where
    they use CPU (a multiprocessing.Pool's: seen, not sampled), else its own threads."""
    if s.job.helpers_busy:
        n = round(s.job.helpers)
        return (f"the batches come from elsewhere; the job's {count(n, 'other process', 'other processes')} use "
                f"{fmt(s.job.helpers_cpu, 'cores')}, and gpuwatch does not sample what they compute")
    return "the batches come from elsewhere in the process (a thread of its own), which gpuwatch does not measure"


def _unknown(f: dict, sub: str, s: Signals) -> str:
    missing = []
    if not s.stacks.available:
        missing.append(f"no stacks ({s.stacks.reason})")
    if s.gpu.present and not s.gpu.gpm:
        missing.append("no GPM")
    if not s.job.seen:
        missing.append(f"no process data ({s.job.reason})")
    lack = f" ({'; '.join(missing)})" if missing else ""
    if s.frames < 2:
        return f"Collecting evidence: too few ticks yet{lack}."
    if s.stacks.available and s.stacks.n_main < MIN_EVIDENCE_SAMPLES:
        n = s.stacks.n_main
        return (f"Collecting evidence: {count(n, 'stack sample')} of the main thread so far, "
                f"{MIN_EVIDENCE_SAMPLES} needed before a stage is named.")
    gpu = f"the GPU has work {_busy(s)} of the time, but " if s.gpu.present else ""
    if (s.input_wait or 0.0) >= s.wait_high and s.job.workers > 0:
        # The data wait is seen, what the workers do is not settled: say what is seen, not
        # "nothing is conclusive" (the workers' CPU, with the loaders' sets where several keep
        # theirs: a validation loader's idle set halves the mean of the one that works).
        top = s.aligned.worker_cpu_top if s.aligned.usable else None
        busiest = (f", the busiest {fmt(top, 'cores')}" if top is not None
                   and fmt(top, "cores") != fmt(s.job.worker_cpu, "cores") else "")
        sets = worker_sets(s.epoch_ticks)
        of = ((" in the sets at work, of" if s.idle_out else ", over") + f" {sum(sets)} workers in {sets_of(sets)}"
              if len(sets) >= 2 else "")
        both = f"{gpu.removesuffix(', but ')} and " if gpu else ""
        return (f"Not enough evidence to name a stage: {both}the main thread waits for data {fmt(s.input_wait)} of "
                f"the time, but what holds the input back is not settled (the workers use "
                f"{fmt(s.job.worker_cpu, 'cores')} each{of}{busiest.replace('the busiest', 'the busiest worker')}){lack}.")
    if s.self_fed:
        # No DataLoader workers, yet the loop waits for its batches: they come from elsewhere in the
        # process (a prefetch thread's queue), whose work is not measured per thread.
        both = f"{gpu.removesuffix(', but ')} and " if gpu else ""
        return (f"Not enough evidence to name a stage: {both}the main thread waits for data {fmt(s.input_wait)} "
                f"of the time{_in(s.stacks.top(lb.ROLE_MAIN_THREAD, lb.DATA_WAIT))} with no DataLoader worker seen "
                f"(gpuwatch knows them by the process name torch gives them, pt_data_worker): "
                f"{_producers(s)}{lack}.")
    return f"Not enough evidence: {gpu}no stage's signals are conclusive{lack}.{_writes(s)}"


def _writes(s: Signals) -> str:
    """The training process's file writes, where they run at a checkpoint's rate over the last minute
    (the middle of its ticks' readings): no stage judges writes, yet a loop that writes and fsyncs
    logs each step spent 72 % of its time there and read only "no stage's signals are conclusive"
    (trial 41). Said as what was seen, with where to look; no cause is named."""
    if find(s.phases, CHECKPOINT) is not None:  # the epochs clause says those writes as saves
        return ""
    rates = sorted(t.main_write_bps for t in s.epoch_ticks if t.procs and t.main_write_bps is not None)
    if not rates or rates[len(rates) // 2] < CHECKPOINT_WRITE_BPS:
        return ""
    return (f" The training process writes {fmt(rates[len(rates) // 2], 'B/s')} to files (the middle of the last "
            "minute's readings), which no stage judges: where its main thread writes (logs, arrays, metrics) "
            "each step, that can be time the step waits for; py-spy dump shows where.")
