"""What to do about the stage, filled with what was seen (workers vs cores, pinning, tenants, ...).

The fixes come from the PyTorch performance tuning guide , the pinned-memory
tutorial, DS-Analyzer and the H200 measurements; each is worded with the job's own numbers.
"""

from __future__ import annotations

from gpuwatch.diagnosis.evidence import count, fmt, sets_of
from gpuwatch.diagnosis.fix_gains import (
    decoding_seen,
    idle_cores,
    inline_decoder_samples,
    inline_decoding_seen,
    loader_workers,
    proposed_workers,
    restarts_idle_gpu,
    wider_room,
    unused_cores,
    worker_target,
    words,
)
from gpuwatch.diagnosis.sentence import least_words, validation_loader_said
from gpuwatch.diagnosis.validation_loader import validation_loads
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.phases import every_tick, find, periodic, worker_sets
from gpuwatch.diagnosis.stages import CPU_COMPUTE, INPUT_UNMEASURED, OFF_PIPELINE, StageResult
from gpuwatch.diagnosis.thresholds import (
    DISK_BUSY,
    IDLE_FOR_WORKER,
    LAYOUT_SHARE,
    OUTSIDER_SHARE,
    OWN_THREADS_OVER,
    PAGEABLE_GAIN,
    PINNED_RX_MIBS,
    REPLAYS_PER_S,
    RUN_DELAY,
    SM_HEALTHY,
    TENSOR_LOW,
    THREADED_WORKER_CPU,
    UNEVEN_WORKERS,
    WAIT_HIGH,
    WAIT_MODERATE,
)
from gpuwatch.model.verdict import (CONTENTION, DECODE, GPU_BOUND, GPU_MEMORY, H2D, IDLE, IO, LAUNCH, LEFT_ALIVE,
                                    RESPAWN, UNKNOWN, VALIDATION, EPOCH_START, Phase)
from gpuwatch.model.verdict import (CHEAPER_TRANSFORM, MORE_CPUS, MORE_WORKERS, PERSISTENT_WORKERS, PINNED_MEMORY,
                                    FixGain)

# No NUMA remedy here: the frames a verdict reads carry no NUMA layout (how many nodes, which one the
# GPU hangs off), so nothing a verdict sees supports "numactl" (review 36: it closed every Contention
# verdict, another GPU tenant's included; a trial's 2-core, one-node VM was told to run it). The
# report's environment check (report/checks_host.check_numa) gives it where the probe sees the job
# run off its GPU's node.


WORKER_PID = "WORKER_PID"
"""Where a remedy's command needs a worker's PID: the Processes panel and the JSON stream list them
(a worker's PID changes with each set of workers, so none is written into the remedy)."""


def main_pid(s: Signals) -> str:
    """The training process's PID for a remedy's command ("py-spy dump --pid 1234"), or "PID" where
    the job has several (ranks) or none was read: "<its pid>" showed as "\\<its pid>" in the report."""
    pids = s.job.main_pids
    return str(next(iter(pids))) if len(pids) == 1 else "PID"


HEADS = {PERSISTENT_WORKERS: ("persistent_workers=True",),
         MORE_WORKERS: ("Raise num_workers", "Prepare batches in DataLoader workers", "Load in DataLoader workers",
                        "More DataLoader workers"),
         CHEAPER_TRANSFORM: ("Use a faster decoder", "If the workers decode images"), PINNED_MEMORY: ("Pin host memory",),
         MORE_CPUS: ("Let the job use more of the host's CPUs",)}
"""How the remedy of each fix whose gain is estimated (fix_gains.py) begins: its estimate goes at its end."""


def remedies(stage: str, r: StageResult | None, s: Signals, gains: tuple[FixGain, ...] = ()) -> tuple[str, ...]:
    """The stage's remedies in order, each fix with an estimate (``gains``) followed by it."""
    out = list(dict.fromkeys(_remedies(stage, r, s)))
    for g in gains:
        k = next((i for i, x in enumerate(out) if x.startswith(HEADS[g.fix])), None)
        if k is not None:
            out[k] += words(g)
    return tuple(out)


def _remedies(stage: str, r: StageResult | None, s: Signals) -> tuple[str, ...]:
    f = dict(r.facts) if r is not None else {}
    sub = r.sub if r is not None else ""
    make = {IO: _io, DECODE: _decode, H2D: _h2d, GPU_MEMORY: _gpu_memory, LAUNCH: _launch,
            CONTENTION: _contention, GPU_BOUND: _gpu_bound, IDLE: _idle, CPU_COMPUTE: _cpu_compute,
            INPUT_UNMEASURED: _input_unmeasured}.get(stage)
    out = make(f, sub, s) if make else _unknown(stage, s)
    restarts = stage in (IO, DECODE, INPUT_UNMEASURED) or (stage == GPU_BOUND and r is not None
                                                           and restarts_idle_gpu(r.facts, s))
    first = find(s.phases, EPOCH_START)
    if restarts and find(s.phases, RESPAWN) is not None:
        out = [x for x in out if not x.startswith("persistent_workers=True")]  # said once, with what was seen
        fix = _keep_workers(find(s.phases, RESPAWN), s)  # type: ignore[arg-type]
        # When the waits are the workers' start-up itself (the "starting workers" form), keeping the
        # workers is the fix for what was seen, so it leads; otherwise it follows the stage's own.
        # GPU-bound: after the GPU's own line (the GPU is still the main limit), before the kernel
        # advice, which does nothing for the idle time the restarts leave.
        if stage == GPU_BOUND:
            out = [GPU_HEAD, fix, *out[1:]]
        else:
            out = [fix, *out] if sub == "starting" else [*out, fix]
    elif (stage not in (IDLE, UNKNOWN, OFF_PIPELINE) and (p := find(s.phases, RESPAWN)) is not None and p.count >= 2
          and first is not None and (first.share or 0.0) >= WAIT_MODERATE):
        # Another stage holds the verdict (Contention on a busy host), yet the epochs clause says the
        # workers are re-created and their first batches cost the main thread a moderate share of its
        # time (WAIT_MODERATE, the profilers' "moderately input-bound"): a cost no fix of that stage
        # touches (trial 34: re-created at least 54 times in 59 s, first batches 19 %, and no remedy
        # said how to keep them).
        up = "up to " if every_tick(s.phases) else ""  # every waiting tick a first-batch tick: a bound
        out.append(_keep_workers(p, s) + f"; their first batches keep the main thread waiting "
                   f"{up}{fmt(first.share)} of the time")
    if validation_loader_said(stage, sub, s):
        # Its own remedy, first: the others are the training loader's, and their estimates keep the
        # validation passes as they are (fix_gains.split).
        k, n = s.validation_waits
        # "Fixes below" only where the stage's remedies are the training loader's fixes: an unmeasured
        # wait's are where to look, and a verdict may list none.
        below = ("; the training loader's fixes below leave those waits as they are"
                 if stage in (IO, DECODE) and any(out) else "")
        out.insert(0, f"Most waits are for the validation loader's batches ({k} of {count(n, 'waiting sample')}, "
                      "inside validation passes): give the validation DataLoader workers of its own (num_workers, "
                      f"persistent_workers=True) or validate less often{below}")
    val = find(s.phases, VALIDATION)
    if periodic(val) and (val.share or 0.0) >= WAIT_HIGH and stage not in (IDLE, UNKNOWN):  # type: ignore[union-attr]
        # Time no input or GPU fix touches (fix_gains.split leaves it out): said where it is a large,
        # recurring part of the job (trial 27: 58 % in validation, the only remedy about the model's
        # step). One pass is no share of the time yet (sentence.epochs).
        pace = f" (~{val.each_s:.1f} s every ~{val.period_s:.1f} s)" if val.each_s and val.period_s else ""
        out.append(f"Validation passes take {least_words(val)}{fmt(val.share)} of the time{pace}: validate less often or on part of "
                   "the validation set (Lightning: check_val_every_n_epoch, val_check_interval, limit_val_batches), "
                   "and, if it does not already, under torch.no_grad() or torch.inference_mode() (stack samples do not "
                   "show it)")
    return tuple(dict.fromkeys(x for x in out if x))  # in order, without repeats


def _keep_workers(p: Phase, s: Signals) -> str:
    """persistent_workers=True, worded with the re-creations seen (``p``, the RESPAWN phase)."""
    times = count(p.count, "time")
    if every_tick([p]):
        times = f"at least {times}"  # about every tick: at most one a tick is seen (phases.py)
    # One replacement is a new loader (a validation loader, the next phase of a job) or one epoch:
    # not yet a pattern of epochs, so the advice is a condition (the switch job read "re-created 1 time").
    if p.count < 2:
        return ("persistent_workers=True, if the job's epochs re-create its workers (one set replaced another "
                f"once in {p.span_s:.0f} s: a new DataLoader or a new epoch, not yet a pattern)")
    fix = (f"persistent_workers=True: the DataLoader's workers were re-created {times} in "
           f"{p.span_s:.0f} s, and each new set builds its first batches from scratch; it keeps them only "
           "for a DataLoader built once, outside the epoch loop: one built anew each epoch starts new "
           "workers whatever it says (where it is set already on the training loader, the sets are another "
           "loader's, such as a validation loader re-created for each pass, or workers that crash and are "
           "restarted)")
    if s.job.spawned_workers:
        # Seen on their command lines: each new spawned worker imports the script and torch
        # again before its first item (trial 26: seconds a set, ~60 % of a job's time).
        fix += ("; the workers are started by spawn or forkserver, so each new one first imports the "
                "training script and its libraries again: multiprocessing_context='fork' (where nothing "
                "in the parent forbids it, such as CUDA initialised before the loader) starts them "
                "from the parent's memory")
    return fix


LOADER_NAMES = ("pt_data_worker",)
"""The name PyTorch gives a DataLoader's worker processes (collectors/target.py WORKER_COMM)."""
OTHER_JOB = " of another job"


def _outsiders(f: dict) -> str:
    """": pip (pid 8092, 0.95 core)", the outside processes of the latest sample that hold a share
    of the outside CPU (OUTSIDER_SHARE), and a word for the rest where they hold little of it: the
    outside CPU is also read as the host's busy time less the job's, which short-lived processes
    fill without showing in any sample's list (a trial's remedy named kdamond at 0.01 core as the
    process behind 1.00 core)."""
    total = f.get("others_cpu") or 0.0
    named = [(n, p, c) for n, p, c in (f.get("others") or ())[:3] if c >= OUTSIDER_SHARE * total]
    if not named:
        return (" (no single process held a share of it in the latest sample: short-lived processes, or many "
                "small ones)")
    # Another job's DataLoader processes carry the same names as this job's: said whose they are, as a
    # trial read "pt_data_worker (pid 20983, 0.70 core)" as its own worker (trial 32).
    names = ", ".join(f"{n}{OTHER_JOB if n in LOADER_NAMES else ''} (pid {p}, {fmt(c, 'cores')})"
                      for n, p, c in named)
    listed = sum(c for _, _, c in named)
    if fmt(listed, "cores") != fmt(total, "cores") and listed > total:
        # The total is the middle of the window's readings, the list the latest sample's: where the
        # outside load rose, the names added up to more than the total said beside them (trial 34:
        # "0.49 core ...: python (0.58 core), python (0.40 core)").
        return (f" (the middle of the window's readings; in the latest sample {names}, "
                f"{fmt(listed, 'cores')} between them)")
    text = ": " + names
    if listed < total / 2:
        text += "; the rest by processes too short-lived or small to list"
    return text


def _n(x: object) -> str:
    return "?" if x is None else f"{float(x):.0f}"  # type: ignore[arg-type]


def _where(f: dict) -> str:
    loc = f.get("location")
    if loc is None:
        return ""
    cwd = "the working directory, " if loc.kind == "cwd" else ""
    return f" ({cwd}{loc.path} on {loc.fstype}{', a network file system' if loc.network else ''})"


def _workers_keep(f: dict, s: Signals) -> str:
    """Keeping the workers, only where their re-creation was seen: re-created workers get the remedy
    worded with what was seen (here from the window's respawns, or in _remedies from the minute's);
    sets left alive get the iterators' remedy; otherwise nothing (no restart cost was seen)."""
    if f.get("workers") == 0 and not f.get("loader_workers") and not f.get("respawns"):
        return ""  # num_workers=0: no worker to keep (the inline remedy proposes workers, kept)
    left = find(s.phases, LEFT_ALIVE)  # the minute's phases (phases.sets_left_alive): the epochs say the same
    if left is not None:
        alive = worker_sets(s.epoch_ticks)
        return (f"Release the DataLoader iterators the job no longer uses: {count(left.count, 'new set')} of workers "
                f"started in {left.span_s:.0f} s while the earlier ones stayed alive ({sum(alive)} workers in "
                f"{sets_of(alive)} now), so something still holds the old iterators (a kept exception and its "
                "traceback, a list of iterators); each new iterator starts its workers and builds its first "
                "batches from scratch, and the idle sets keep their memory")
    if f.get("respawns"):
        return (f"persistent_workers=True: the workers were re-created {count(f['respawns'], 'time')} in the "
                "window (each epoch restarts them, with cold caches and file handles)")
    # No set re-created while gpuwatch watched: no restart cost was seen, so keeping the workers is no
    # fix for what was seen. It was offered as a condition ("if the job's epochs re-create its workers
    # (no set was re-created while gpuwatch watched)") with its fix's "gain not estimated" after it,
    # read as a proposed fix (review 36); the epoch structure says that no re-creation was seen, and
    # where one is, the remedy comes back worded with it (_remedies, or respawns above).
    return ""


def _io(f: dict, sub: str, s: Signals) -> list[str]:
    if sub == "checkpoint":
        at = f" (in {f['ckpt_detail']})" if f.get("ckpt_detail") else ""
        return [f"Checkpoint less often, or asynchronously: torch.distributed.checkpoint.async_save, or copy "
                f"the state_dict to CPU and write it from a background thread{at}",
                "Write checkpoints to fast local storage (NVMe), then copy them away"]
    where = _where(f)
    out = []
    net = f.get("inline_net_reads") if sub == "inline" else f.get("net_reads")
    if net:
        # Fetched from a server or an object store (input_stages.network_reads): the local disk's
        # remedies (a shard in /dev/shm, a faster device) test nothing of it.
        at = f.get("main_detail") if sub == "inline" else f.get("io_detail")
        out.append(f"The data comes from a server over a socket{f' (in {at})' if at else ''}: cache it on local storage (copy "
                   "it to local NVMe or /dev/shm before training, or keep each item once fetched); where each sample "
                   "is a request of its own, fetch them in fewer, larger requests (shards of many samples each, such "
                   "as WebDataset tar shards over HTTP or S3), so each sample does not pay a request's latency; "
                   "where the job streams shards already, the link's bandwidth is the limit and a local copy the fix")
    else:
        if f.get("network"):
            out.append(f"The data is on a network file system{where}: stage it on local NVMe or /dev/shm "
                       "before training, or cache it locally after the first epoch")
        out.append(f"Test the storage: copy a shard to /dev/shm and point the loader at it; if the data wait "
                   f"goes away, storage is the limit{where}")
        # Said as a condition: gpuwatch sees where the data is read from, not how many files it is in
        # (a trial's job read random records of one 2 GB file and was told to pack many small files).
        out.append("If the data is many small files, pack them into large shards read sequentially (WebDataset "
                   "tar shards, LMDB, or another record format)")
    usable = f.get("usable")
    if sub == "inline":
        target = worker_target(usable)
        eg = f", e.g. {target}" if target else ""
        out.append(f"Load in DataLoader workers (num_workers > 0{eg}) so reads overlap with training instead of "
                   "blocking the main thread")
    else:
        busiest = " in the sets at work" if f.get("idle_out") else ""
        each = f" ({fmt(f['worker_cpu'], 'cores')} each{busiest})" if f.get("worker_cpu") is not None else ""
        queue = s.job.worker_run_delay
        # A queue beside idle cores is wake-up latency after each read, not a CPU shortage (trial 27:
        # one worker queued 16 % of the time with ~1 core of 2 idle was told more workers would queue
        # as well; a second worker ran its job 1.3x faster).
        short = (queue or 0.0) >= RUN_DELAY and unused_cores(s, float(usable or 0)) < IDLE_FOR_WORKER
        if short or f.get("cpu_short"):
            # Workers queued for a CPU use little of it because they wait for one, not only for the
            # reads (a disk job on a full 2-core host: 0.20 core each, queued 0.3-0.7 of each tick):
            # more of them, "even more than the CPUs", would queue as well.
            why = (f"they queue for a CPU {fmt(min(queue, 1.0))} of the time" if short
                   else f"they fill the {count(usable, 'usable CPU')}")
            out.append(f"Raise num_workers above {loader_workers(f)} only once the workers get a CPU: {why}, "
                       f"so their low CPU{each} is not only the reads' doing, and more workers would queue as well")
        else:
            cores = f" (even more than the {count(usable, 'usable CPU')})" if usable else ""
            what = "socket reads" if net else "reads"
            out.append(f"Raise num_workers above {loader_workers(f)}: workers waiting on {what} use little CPU{each}, "
                       f"so more of them can overlap {what}{cores}; raise prefetch_factor (default 2) to keep more "
                       "batches in flight")
    out.append(_workers_keep(f, s))
    if (f.get("disk_busy") or 0.0) >= DISK_BUSY:
        out.append(f"The disk {f.get('device') or ''} is {fmt(f.get('disk_busy'))} busy: a faster device, or "
                   "read less per sample (smaller or pre-cropped samples)")
    return out


def _wider_mask(f: dict, sub: str, s: Signals, who: str = "workers") -> str:
    """More CPUs for the job where its affinity mask holds its batch makers (fix_gains.wider_room).
    Trial 36: a decode job pinned to 1 of 2 CPUs, the host about half idle, was told only to make each
    sample cheaper (1.88x by its figure); without the pin it ran 2.06x faster."""
    room = wider_room(f, sub, s)
    if room is None:
        return ""
    procs, cpu, free = room
    usable, host_n = f.get("usable"), s.host.cpu_count
    # who fills the mask, as mask_full read it: the makers, or the job with them (review 43)
    fill = (f"which its {procs} {who} fill" if s.cpu_short
            else f"which the job fills (its {procs} {who} use {fmt(cpu, 'cores')}, its training process most of the rest)")
    return (f"Let the job use more of the host's CPUs: its affinity mask (taskset, the container's cpuset) allows "
            f"{count(usable, 'CPU')} of the host's {host_n}, {fill}, and {fmt(free, 'cores')} "
            f"outside it sat idle; with more CPUs they run side by side")


def _helpers(f: dict, s: Signals, usable: int | None, idle: float) -> list[str]:
    """Batches made by the job's own pool of processes (input_stages.helpers_computing)."""
    n = int(f.get("helpers") or 0)
    out = []
    if usable and idle >= IDLE_FOR_WORKER:
        out.append(f"Give the pool that makes the batches more processes: {count(n, 'process', 'processes')} at "
                   f"{fmt(f.get('helper_cpu'), 'cores')}{'' if n == 1 else ' each'}, and {fmt(idle, 'cores')} of the "
                   f"{count(usable, 'usable CPU')} sat idle")
    else:
        out.append(f"Make each batch cheaper to build: the {count(n, 'process', 'processes')} making them "
                   f"{'computes' if n == 1 else 'compute'} flat out and the {count(usable or 0, 'usable CPU')} "
                   "have no core to spare")
    out.append("Or build the batches in DataLoader workers (num_workers, persistent_workers=True): gpuwatch samples "
               "their stacks and can tell what they compute")
    if (wider := _wider_mask(f, "helpers", s, "processes")):
        out.insert(0, wider)
    return out


def _decode(f: dict, sub: str, s: Signals) -> list[str]:
    usable, workers = f.get("usable"), loader_workers(f)
    target = worker_target(usable)
    spare = unused_cores(s, usable) if usable else 0.0
    idle = idle_cores(s, spare)
    out = []
    if sub == "helpers":
        return _helpers(f, s, usable, idle)
    if sub == "inline":
        # "prepare", not "decode": the main thread's own per-item work may be tokenising or parsing
        # (bench/field_cpu/tokenize_inline.py: regexes and BPE in Docs.__getitem__), not images
        pin = ", pin_memory=True" if s.gpu.present else ""  # pinned pages only speed a copy to a GPU
        if validation_loads(f):
            out.append(f"Give the validation DataLoader workers of its own (num_workers={target or 2}, "
                       f"persistent_workers=True): {f['val_load']} of the main thread's {f['load_n']} samples loading "
                       "data were inside validation passes, where that loader's num_workers=0 prepares each batch "
                       "on the main thread; or validate less often")
        else:
            # Workers alive beside the main thread's own loading are another loader's (trial 38: a
            # labelled loader's 2 workers zipped with an unlabelled one at num_workers=0, told
            # "num_workers=1" with no word of which loader)
            other = (f" (the job's other loader already runs {count(workers, 'worker')})" if workers else "")
            out.append(f"Prepare batches in DataLoader workers: num_workers={target or 2}, persistent_workers=True{pin} "
                       f"in the loader that loads on the main thread{other} (num_workers=0 prepares each batch on "
                       "the main thread, between training steps)")
    elif sub == "loop":
        return _loop_prep(f, s)
    elif sub == "sampler":
        return _sampler(f)
    elif sub == "starting":
        out.append("persistent_workers=True keeps the workers (and their warm state) from one pass over the loader "
                   "to the next, so no epoch or validation pass starts or stops a set of workers")
    elif sub == "ipc":
        where = "on the GPU" if s.gpu.present else "in the training process"  # a CPU-only job has none
        out.append("Receiving batches from the workers is the cost: return uint8 tensors (4x less than float32), "
                   f"normalise {where}, and avoid collate_fn outputs made of many small tensors")
    elif target and workers < target and not f.get("cpu_short"):
        free = target - workers
        out.append(f"Raise num_workers{_per_loader(f)} from {workers} toward {target}: {count(free, 'usable CPU')} "
                   f"{'is' if free == 1 else 'are'} free beside the training process, and each worker builds "
                   "batches on one core")
    elif usable and workers < usable and not f.get("cpu_short") and idle >= IDLE_FOR_WORKER:
        # worker_target keeps a core for the training process; one that mostly waits for batches
        # leaves most of it idle (trial 23: one worker at 1.0 core, the trainer at 0.15, the host 59 %
        # busy, told the CPUs were full; a second worker ran the job 1.5x faster). idle_cores reads
        # it only where that is what was seen.
        # a worker for each idle core, rounded, at least one: the count the figure beside it is for
        out.append(f"Raise num_workers{_per_loader(f)} from {workers} toward {proposed_workers(f, s)}: "
                   f"{fmt(idle, 'cores')} of the {count(usable, 'usable CPU')} sat idle (the training process "
                   "uses little of its own while it waits), and each worker builds batches on one core")
    elif usable:
        # Fewer workers than CPUs fill them only with the training process beside them (worker_target
        # keeps one CPU for it): "the 1 worker already fill the 2 usable CPUs" said what is not so.
        # What the workers use of them, and that the rest is others' where it is (trial 27: 2 workers
        # at 0.57 core each beside a busy training process read "The 2 workers already fill the 2
        # usable CPUs"; "1 worker" had read so beside the training process's core).
        # Several sets alive: every worker's CPU as measured (the per-worker figure is the busiest
        # set's, times the largest set's count read "the 2 workers use 1.62 cores" where all 3 used
        # 0.81; review 38).
        sets = f.get("sets") or ()
        several = len(sets) >= 2 and f.get("workers_cpu") is not None
        n = sum(sets) if several else workers
        own = f["workers_cpu"] if several else (f.get("worker_cpu") or 0.0) * workers
        rest = ("" if own >= usable - IDLE_FOR_WORKER
                else ", the training process and any other processes the rest")
        who = f"the {count(n, 'worker')} {'uses' if n == 1 else 'use'} {fmt(own, 'cores')}{rest}"
        top, least = f.get("worker_cpu_top"), f.get("worker_cpu_least")
        # Where the ticks it waited in read the CPUs full (cpu_short, what the sentence says), the
        # window's idle time is the ticks between: no remedy may say otherwise (review).
        if f.get("cpu_short") or spare < IDLE_FOR_WORKER:
            out.append(f"The {count(usable, 'usable CPU')} {'is' if usable == 1 else 'are'} already full ({who}): make each "
                       "sample cheaper rather than adding workers (more workers than cores only queue for CPU)")
        elif top is not None and least is not None and workers >= 2 and top - least >= UNEVEN_WORKERS \
                and len(f.get("sets") or ()) >= 2:
            # Several sets alive together (several loaders, or an earlier pass's set left alive): the
            # least busy worker may be another loader's, idle while this one runs, not a share of
            # uneven work (trial 33: a multitask job's two loaders were told to even out their work).
            out.append(f"The busiest worker uses {fmt(top, 'cores')}, the least busy {fmt(least, 'cores')}, and "
                       f"{fmt(spare, 'cores')} of the {count(usable, 'usable CPU')} sat idle (workers alive: "
                       f"{sets_of(f['sets'])}): num_workers is set per loader, so give the loader "
                       "whose workers are busy more of them (py-spy dump --pid "
                       f"{WORKER_PID} on a busy one shows whose it is), then make its samples cheaper")
        elif top is not None and least is not None and workers >= 2 and top - least >= UNEVEN_WORKERS:
            # Trial 24: one worker at 0.99 core, the other at 0.22, the host 66 % busy, told the CPUs
            # were full. Uneven work (an IterableDataset's shards, costly items on one worker) leaves
            # cores idle that more workers of the same split would not use either.
            out.append(f"Even out the workers' work: the busiest uses {fmt(top, 'cores')}, the least busy "
                       f"{fmt(least, 'cores')}, and {fmt(spare, 'cores')} of the {count(usable, 'usable CPU')} "
                       "sat idle (an IterableDataset's shards of unequal cost, or a sampler that gives one worker "
                       "the costly items); then make each sample cheaper")
        elif workers < usable:
            out.append(f"Raise num_workers{_per_loader(f)} from {workers} toward {proposed_workers(f, s)}: "
                       f"{fmt(spare, 'cores')} of the "
                       f"{count(usable, 'usable CPU')} sat idle, and each worker builds batches on one core")
        else:
            they = "it waits" if workers == 1 else "they wait"
            out.append(f"The {count(workers, 'worker')} {'leaves' if workers == 1 else 'leave'} {fmt(spare, 'cores')} of "
                       f"the {count(usable, 'usable CPU')} idle: {they} "
                       "on something besides the CPU while building batches; make each sample cheaper, "
                       f"and see what the workers wait on (py-spy dump --pid {WORKER_PID})")
    out += _cheaper_items(f, sub, s)
    # Only where a worker was seen running several threads at once: full CPUs or queued workers
    # alone are as true of single-threaded workers that are simply too many.
    top, want = f.get("worker_cpu_top"), s.job.worker_want
    # Full CPUs hold each threaded worker under a core, its other threads queued: CPU plus run delay
    # over a core is the same sign (trial 35: 3 workers running numpy eigh with BLAS pools on 2 CPUs,
    # ~0.6 core each and 1.2 threads queued; OPENBLAS_NUM_THREADS=1 ran the job 2-5x faster).
    seen = (f"the busiest worker uses {fmt(top, 'cores')}: several threads at once" if top is not None
            and top > THREADED_WORKER_CPU else
            f"the busiest worker would use {fmt(want, 'cores')}, its CPU plus the time its threads queue for one: "
            "several threads at once" if want is not None and want > THREADED_WORKER_CPU else "")
    if seen:
        out.append(f"Stop thread oversubscription in workers ({seen}): OMP_NUM_THREADS=1 "
                   "(and OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1) in the job's environment and "
                   "cv2.setNumThreads(0) in worker_init_fn, for the libraries that start their own thread pools "
                   "(PyTorch sets one thread in each worker, unless the job's worker_init_fn or dataset calls "
                   "torch.set_num_threads with more)")
    keep = _workers_keep(f, s)
    # The job's own prefetch_factor cannot be read from outside: said against the default, not as
    # a value to set (trial 23 and 24: "prefetch_factor=4" told to jobs with 4 and 8).
    kept = keep.startswith(HEADS[PERSISTENT_WORKERS])  # not a line on iterators left alive
    out.append(keep + "; where prefetch_factor is still at its default of 2, a larger one smooths out slow batches" if kept else keep)
    if sub == "workers" and (wider := _wider_mask(f, sub, s)):
        out.insert(0, wider)
    return out


def _sampler(f: dict) -> list[str]:
    """The DataLoader's sampler computes in the training process: more workers, persistent workers or
    smaller batches on the wire do nothing for it (trial 38's two jobs were told those); the sampler's
    own work is the fix."""
    where = f" (the main thread is most often in {f['sampler_detail']})" if f.get("sampler_detail") else ""
    return [f"Make the sampler cheaper{where}: it runs in the training process for every num_workers, so more "
            "workers do not speed it up. Do once what it redoes for each batch or epoch (cumulative weights for "
            "random.choices built once, or torch.multinomial over a weights tensor made once; a length-sorted "
            "order computed once and shuffled by buckets), or draw a whole epoch's indices at once in "
            "__iter__ and yield from them"]


def _loop_prep(f: dict, s: Signals) -> list[str]:
    """The training loop transforms its batches itself: move that work where it overlaps the step
    (the DataLoader's workers), or onto the GPU on whole batches where there is one."""
    workers = loader_workers(f)
    # "(14 of them)", not "(now 14 workers)": a report on a job that has exited quotes it too (review 44)
    where = (f" ({'1 worker' if round(workers) == 1 else f'{workers:.0f} of them'})" if workers else
             f" (num_workers={worker_target(f.get('usable')) or 2}, persistent_workers=True)")
    # Where the CPUs are full, the workers would run the transforms on the cores the loop runs them on
    # now: the step gets its thread back, not more CPU, so the gain is less than the loop's share.
    full = (f"; the {count(f.get('usable'), 'usable CPU')} are full, so the workers would take that CPU from "
            "the rest of the job and gain less" if f.get("cpu_short") else "")
    out = [f"Move this preparation (transforms, decoding, tokenising) out of the training loop into the "
           f"Dataset's __getitem__ (per sample) or "
           f"the DataLoader's collate_fn (per batch), so the DataLoader's workers{where} prepare the next batches "
           f"while the step runs{full}"]
    if s.gpu.present:
        # A condition: without native frames the stacks do not tell a transform's device, and a loop
        # that already transforms CUDA tensors one sample at a time needs only the batching.
        out.append("If they run on CPU tensors, they can also run on the GPU after the copy, on whole batches "
                   "(torchvision.transforms.v2 accepts CUDA tensors); if they already do, apply them to whole "
                   "batches, not one sample at a time")
    return out


def _per_loader(f: dict) -> str:
    """Where several sets of workers live together (several loaders, or an earlier pass's set left
    alive), which loader's num_workers: the count quoted is the largest set's, and a job with two
    loaders reads "raise num_workers" as either."""
    sets = f.get("sets") or ()
    return " of the loader whose workers are busy (num_workers is set per loader)" if len(sets) >= 2 else ""


def _cheaper_items(f: dict, sub: str, s: Signals) -> list[str]:
    """Making each item cheaper to build, worded for what the workers were seen doing: image
    decoding only where a worker sample was in a decoder; nothing where the workers were not seen
    computing (the wait is their start-up, or receiving batches)."""
    if sub in ("starting", "ipc"):
        return []
    # num_workers=0: the main thread's own loading samples say what it does (no worker was sampled)
    inline = sub == "inline"
    detail = f.get("main_detail") if inline else f.get("worker_detail")
    hot = (f" ({'the main thread loads' if inline else 'the workers are'} most often in {detail})"
           if detail else "")
    seen = inline_decoding_seen(s) if inline else decoding_seen(s)
    if seen is False:
        whose = "stack sample of the main thread's loading" if inline else "stack sample of the workers"
        profile = (f"the training process (py-spy top --pid {main_pid(s)})" if inline
                   else f"one worker (py-spy top --pid {WORKER_PID})")
        return [f"Make each item cheaper to build{hot}: no {whose} was in an image decoder, so the cost is "
                "the job's own per-item code (the dataset's __getitem__, or __iter__ for an IterableDataset, or the collate_fn); do its fixed part once, offline (pre-tokenise or pre-process "
                f"the dataset and save the result), keep only the random part online, and profile {profile} "
                "for the rest"]
    # the GPU's part of the advice only where the job has a GPU to hand the work to
    gpu = s.gpu.present
    # A decoder is advised for the decoding seen, not for the hottest frame: "(the workers spend their
    # time in collate.default_collate)" stood beside it (review 28). The workers' share is said by the
    # fix's own figure (fix_gains.cheaper_transform: "because decoding is 3 of 7 worker samples"); the
    # main thread's loading has no such figure, so it is said here.
    # The stacks show a decoder, not the files' format (PIL's ImageFile.load decodes every format), so
    # the JPEG decoder is offered for JPEG files by name: PNG data had been told of decode_jpeg (trial 33).
    decoder = ("for JPEG files, torchvision.io.decode_jpeg (libjpeg-turbo)" + (", or decode on the GPU with "
               "torchvision.io.decode_jpeg(..., device='cuda') or NVIDIA DALI" if gpu else "")
               + "; PNG decodes several times slower than JPEG in most libraries: pre-decode it offline, or "
               "store it as JPEG where lossy compression is acceptable (not for masks or labels)")
    share = _inline_decoding(s) if inline and seen else ""
    offline = ("pre-resize or pre-decode the dataset and keep only random augmentations online"
               + ("; run those on the GPU on uint8 batches (torchvision.transforms.v2 on CUDA tensors)" if gpu else ""))
    if seen is None:  # too few samples to tell: said as a condition, in one remedy
        return [f"If {'the loading decodes' if inline else 'the workers decode'} images, use a faster decoder: "
                f"{decoder}; and do the fixed work once, offline: {offline}"]
    return [f"Use a faster decoder{share}: {decoder}", f"Do the fixed work once, offline: {offline}"]


def _inline_decoding(s: Signals) -> str:
    """" (decoding is 20 of the main thread's last 66 loading samples)" (those of the last minute)."""
    decoding, loading = inline_decoder_samples(s)
    return f" (decoding is {decoding} of the main thread's last {count(loading, 'loading sample')})"


def _h2d(f: dict, sub: str, s: Signals) -> list[str]:
    out = []
    rate = f"{fmt(f.get('rx_bps'), 'B/s')}, {fmt(f.get('rx_frac'))} of the link"
    # No DataLoader worker seen: the copies may be of host tensors the job makes itself (the h2d job
    # copies one tensor, no loader), which the loader's flag does not pin.
    own = "" if f.get("loader") else ", or .pin_memory() on a host tensor the job copies itself,"
    pin = (f"pin_memory=True in the DataLoader{own} and .to(device, non_blocking=True): pinned copies ran "
           f"{PAGEABLE_GAIN:.1f}x faster than pageable ones on an H200 ({fmt(PINNED_RX_MIBS * 2**20, 'B/s')} vs "
           f"{fmt(PINNED_RX_MIBS * 2**20 / PAGEABLE_GAIN, 'B/s')})")
    if sub == "link":
        out.append(f"The link is full ({rate}): send less per step: keep uint8 and convert/normalise on the GPU, "
                   "crop before the copy, or keep the dataset resident on the GPU if it fits")
        out.append("Overlap the copy with compute: pinned memory, .to(device, non_blocking=True), and prefetch the "
                   "next batch on a side CUDA stream")
    elif sub == "pin_thread":
        out.append(f"The pin-memory thread runs at {fmt(f.get('pin_cpu'), 'cores')}: pinning copies every batch once "
                   "more; return uint8 from the workers (4x less to pin) and convert on the GPU")
    elif f.get("pin_seen"):
        out.append("pin_memory is on (its pin-memory thread runs): copy with .to(device, non_blocking=True), and "
                   "copy the pinned batch itself, not a new CPU tensor made after the loader (e.g. by .float())")
    else:
        out.append("Pin host memory: " + pin)
    if f.get("detail"):
        out.append(f"The main thread copies at {f['detail']}: move that copy into the loader's pinned path, or "
                   "create the tensor on the GPU directly (torch.empty(..., device='cuda'))")
    if f.get("link"):
        out.append(f"The PCIe link runs at {f['link']} under load: check the slot, riser and BIOS PCIe settings")
    if (f.get("replays") or 0.0) >= REPLAYS_PER_S:
        out.append(f"PCIe replays ({f['replays']:.1f}/s) point to a bad link: reseat the card, check the riser")
    return out


def _gpu_memory(f: dict, sub: str, s: Signals) -> list[str]:
    """Only fixes whose premise was seen (review 36: the layout fixes were offered to a job whose main
    thread was never in a layout op). The layout ops and channels_last need layout ops seen on the main
    thread; where the GPU alone named the stage, the first remedy is to find the kernels (the stacks
    rarely catch them: kernels run after the Python line that launched them returned)."""
    out = []
    if f.get("layout_seen"):
        at = f" (the main thread is in {f['layout_detail']})" if f.get("layout_detail") else ""
        out.append(f"Avoid needless .contiguous(), .permute()/.transpose() followed by a copy, and torch.cat in "
                   f"the step{at}")
        out.append("If those layout changes feed convolutions: channels_last "
                   "(model.to(memory_format=torch.channels_last), inputs likewise) lets them run without the copies")
    else:
        share = f.get("layout_share")
        few = ("gpuwatch read no stack samples of the main thread to see layout ops in" if share is None else
               "no stack sample of the main thread was in a layout op" if not share else
               f"only {fmt(share)} of the main thread's stack samples were in layout ops, under the "
               f"{fmt(LAYOUT_SHARE)} that names them")
        why = ("" if share is None else " (a kernel runs after the Python line that launched it has returned, "
               "so the stacks rarely catch one)")
        out.append("Find the kernels that take the GPU's time: torch.profiler over a few steps "
                   "(prof.key_averages().table(sort_by=\"cuda_time_total\")): the GPU's readings show memory-bound "
                   f"kernels, but {few}{why}")
    out.append("Fuse chains of elementwise and layout ops with torch.compile (inductor turns such a chain into one "
               "kernel that reads and writes memory once)")
    tensor = f.get("tensor_work", f.get("tensor"))
    now = f" (tensor cores {fmt(tensor)} active now)" if tensor is not None else ""
    out.append("If the step computes in fp32: bf16/AMP (torch.autocast) halves the bytes each kernel moves, and "
               f"runs matmuls on the tensor cores{now}")
    out.append("Some phases are memory-bound by nature (LayerNorm, softmax, embeddings, the optimizer step): if those "
               "dominate, this may be inherent")
    return out


def _launch(f: dict, sub: str, s: Signals) -> list[str]:
    out = []
    at = f" (seen at {f['sync_detail']})" if f.get("sync_detail") else ""
    sync = (f"Remove per-step synchronisation: .item(), .cpu(), .tolist(), print(tensor), torch.cuda.synchronize()"
            f"{at}; keep metrics on the GPU and read them every N steps")
    if sub == "sync":
        out.append(sync)
    # a model already under torch.compile (Signals.runs_compiled) is told of its modes, not of compiling
    compiled = s.runs_compiled
    out.append('Capture the step in CUDA graphs: ' + ('mode="reduce-overhead" in the torch.compile call it already has'
                                                      if compiled else 'torch.compile(model, mode="reduce-overhead")')
               + ', or torch.cuda.graphs')
    out.append(f"Give each launch more work: a larger batch (the GPU has work {fmt(f.get('busy'))} of the time now)")
    out.append("Use fused optimizers (torch.optim.AdamW(..., fused=True))" if compiled else
               "Fuse small ops with torch.compile; use fused optimizers (torch.optim.AdamW(..., fused=True))")
    if sub != "sync":
        out.append(sync)
    if (s.job.main_run_delay or 0.0) >= RUN_DELAY:
        out.append(f"The launching thread waits for a CPU {fmt(s.job.main_run_delay)} of the time: give it a core "
                   "of its own (fewer busy threads or processes beside it, or taskset/cpuset the job apart from "
                   "other work)")
    return out


def _contention(f: dict, sub: str, s: Signals) -> list[str]:
    out = []
    causes = f.get("causes") or ()
    if "tenant" in causes:
        names = ", ".join(f"{t.name} (pid {t.pid})" for t in (f.get("tenants") or ())[:3]) or "another process"
        many = len(f.get("tenants") or ()) > 1
        out.append(f"Move the other GPU {'tenants' if many else 'tenant'} off this GPU: {names}; or give each job its "
                   "own GPU or MIG slice")
    if "throttle" in causes:
        why = ", ".join(f"{k} {fmt(v)}" for k, v in (f.get("throttles") or ())[:3])
        out.append(f"The GPU is throttled ({why}): check cooling and airflow (thermal), the power supply and "
                   "power brake, and nvidia-smi -q -d PERFORMANCE for the active reasons")
    if "cgroup" in causes:
        quota = f" of {f['quota']:.1f} cores" if f.get("quota") else ""
        out.append(f"The job's cgroup CPU quota{quota} throttles it {fmt((f.get('values') or {}).get('cgroup'))} "
                   f"of the time: raise the container's CPU limit, or fit the job to it (fewer DataLoader "
                   f"workers than the {_n(f.get('workers'))} alive now, fewer OMP threads)")
    if "neighbours" in causes:
        usable, host = f.get("usable") or 0, f.get("host_cpus") or 0
        if host > usable:  # the job's affinity mask holds it to fewer CPUs than the host has
            out.append(f"Processes outside the job use {fmt(f.get('others_cpu'), 'cores')} of the host's {_n(host)} "
                       f"CPUs{_outsiders(f)}, at least {fmt(f.get('others_on_mask'), 'cores')} of it on the "
                       f"{count(usable, 'CPU')} the job may run on: move or renice them, or widen the job's "
                       "affinity mask (taskset, the container's cpuset) to CPUs they leave free")
        else:
            out.append(f"Processes outside the job use {fmt(f.get('others_cpu'), 'cores')} of "
                       f"{'? CPUs' if usable is None else count(usable, 'CPU')}"
                       f"{_outsiders(f)}: move or renice them, or give the job its own cores (taskset)")
    if "gil" in causes:
        who = f.get("gil_holder")
        out.append(f"A thread of the training process{f' ({who})' if who else ''} holds the GIL in "
                   f"{fmt((f.get('values') or {}).get('gil'))} of the main thread's samples: move its work to a "
                   "process of its own (multiprocessing), run it less often, or do it in NumPy or torch "
                   "operations on whole arrays, which release the GIL, instead of Python loops")
    if "steal" in causes:
        out.append(f"The hypervisor steals {fmt(f.get('steal'))} of the CPU: ask for dedicated vCPUs or a "
                   "larger instance")
    if "memory" in causes:
        out.append("Memory pressure stalls every stage: fewer workers or a smaller prefetch_factor, or more RAM")
    if "link" in causes:
        out.append("PCIe replays point to a bad link: reseat the card, check the riser")
    own = own_threads_over(s)
    if own is not None:
        out.append(own)
    elif "neighbours" in causes and f.get("wants") and f.get("usable") and f.get("others_cpu") is not None:
        # Its threads in lock-step wait on the one a neighbour holds up (system_stages._threads_at_once)
        left = max(1, int(f["usable"] - f["others_cpu"]))
        out.append(f"Or fit the training process's threads to the CPUs the others leave: torch.set_num_threads({left}) "
                   f"(or OMP_NUM_THREADS={left}), so its intra-op threads do not wait on one another while one "
                   f"queues for a CPU (it would use {fmt(f['wants'], 'cores')})")
    return out  # no NUMA line: see the note above HEADS


def own_threads_over(s: Signals) -> str | None:
    """The training process alone keeps more threads ready to run than there are usable CPUs
    (OWN_THREADS_OVER): a remedy for its own pool, which no neighbour's leaving would cure. A job
    with torch.set_num_threads(6) on 2 CPUs queued 3.0 threads while the verdict named only the
    processes outside it (trial 32)."""
    job = s.job
    cpu, queued, usable = job.main_cpu, job.main_run_delay, job.usable_cpus
    # Per training process (the readings are each one's; ranks share the CPUs, as checks_host counts them)
    ranks = max(1, job.ranks)  # the whole job's, in a rank's own verdict too
    share = usable // ranks if usable else 0
    if cpu is None or queued is None or not share or cpu + queued < share + OWN_THREADS_OVER:
        return None
    each = f" ({share} for each of its {ranks} training processes)" if ranks > 1 else ""
    # Beside a GPU the runnable threads may be the pin-memory, autograd or NCCL threads too, so the pool
    # is named as a condition there. Without one they are the step's intra-op pool or threads of the
    # job's own: a ThreadPoolExecutor decoding images read "its thread pool is larger than the CPUs:
    # torch.set_num_threads(2)" (trial 35's fixture, once the CPU-bound remedies carried it).
    head = (f"The training process itself keeps {cpu + queued:.1f} threads ready to run on "
            f"{count(usable, 'usable CPU')}{each} ({fmt(cpu, 'cores')} running, {queued:.1f} queued for a CPU): ")
    if s.gpu.present:
        return (f"{head}if its own thread pool (torch.set_num_threads, OMP_NUM_THREADS, a BLAS pool) is the larger "
                f"part, torch.set_num_threads({share}) or OMP_NUM_THREADS={share} (fewer where DataLoader workers "
                "share the CPUs)")
    return (f"{head}its threads outnumber the CPUs: torch.set_num_threads({share}) or OMP_NUM_THREADS={share} for "
            "torch's own pool, and fewer threads in any pool the job runs itself (fewer still where DataLoader "
            "workers share the CPUs)")

GPU_HEAD = "The GPU is the limit; to go faster, make the GPU's work cheaper"
"""The first GPU-bound remedy, one text whether the GPU is saturated or not (the sentence says
"Healthy" or "Mostly"): two wordings flipping with the busy share were listed as two remedies by
the report (review of H100 run 47's fix)."""


def _gpu_bound(f: dict, sub: str, s: Signals) -> list[str]:
    out = [GPU_HEAD]
    if f.get("tensor") is not None and f["tensor"] < TENSOR_LOW:
        out.append(f"Tensor cores are {fmt(f['tensor'])} active: bf16/AMP (torch.autocast), or allow TF32 "
                   "(torch.backends.cuda.matmul.allow_tf32 = True)")
    if f.get("sm_work") is not None and f["sm_work"] < SM_HEALTHY:
        out.append(f"SMs are only {fmt(f['sm_work'])} active while the GPU works: kernels too small to fill it; "
                   "a larger batch or fusion")
    if s.runs_compiled:  # "torch.compile for kernel fusion" was told to a job compiled with max-autotune (review 48)
        out.append("A larger batch if memory allows (the model already runs under torch.compile, as its stack "
                   "samples show)")
    else:
        out.append("torch.compile for kernel fusion; a larger batch if memory allows")
    return out


def _idle(f: dict, sub: str, s: Signals) -> list[str]:
    if sub == "compiling":
        return ["If compiling comes back after the first steps, the model recompiles: TORCH_LOGS=recompiles "
                "names the guard that failed (shapes that change: mark them dynamic, or pad to a few fixed sizes)",
                "To start faster next time, keep Inductor's cache on a disk that persists "
                "(TORCHINDUCTOR_CACHE_DIR; the default is under /tmp), or compile a smaller part of the model"]
    if f.get("ops") and f.get("detail"):  # it trains, slowly: where it idles is the lead
        return [f"Look at what the main thread waits on in {f['detail']}: py-spy dump --pid {main_pid(s)} shows "
                "where it blocks; a sleep, a lock or a remote call there is paid on every step it is in"]
    return []  # not training (or stopped: the sentence says how to resume it): nothing to fix


def _cpu_compute(f: dict, sub: str, s: Signals) -> list[str]:
    # The main thread's CPU time may be the model's or the job's own per-step code (metrics in numpy,
    # logging): its samples' top frame says which, and the remedy names it rather than assume the
    # model (trial 24: numpy metrics at 94 % of the time read "The model itself is the work").
    where = f" (most often in {f['detail']})" if f.get("detail") else ""
    # More threads only where the training process leaves usable cores idle: a job at 1.91 cores of
    # 2 was told to raise them (trial 29)
    # Ranks divide the CPUs (own_threads_over counts them so): two gloo ranks at 0.8 core each on 2
    # CPUs were told to raise their threads to the usable cores (trial 34).
    used, usable = s.job.main_cpu, s.job.usable_cpus
    ranks = max(1, s.job.ranks)  # the whole job's, in a rank's own verdict too
    share = usable / ranks if usable else None
    each = "each rank's share of the usable cores" if ranks > 1 else "the usable cores"
    workers = s.input_on_cpus  # its own workers take the CPUs it leaves: more threads only queue
    # PyTorch's default already is one thread per core: raising it helps only a job that set it
    # lower, which the process's CPU alone cannot tell from serial Python (trial 39: a pixel loop at
    # 1 core of 2 under the default 2 threads was told to raise them).
    threads = (f", torch.set_num_threads up to {each} if torch.get_num_threads() is lower"
               if workers is None and (used is None or not share or used < share - IDLE_FOR_WORKER) else "")
    out = [f"The main thread's compute is the work{where}: where that is the model, train on a GPU or make "
           f"the CPU step cheaper (torch.compile, channels_last for a conv net{threads}); "
           "where it is the job's own per-step code (metrics, logging, augmentation), make it cheaper (tensor "
           "ops in place of Python loops over elements), run it less often, or move it off the main thread "
           "where a CPU is free"]
    if f.get("optimizer") is not None:
        out.insert(0, _optimizer(f))
    # Its own pool larger than the CPUs slows the step itself, with or without a neighbour (trial 41:
    # torch.set_num_threads(8) on 2 CPUs queued 4.7 threads; 2 threads ran it 1.28x faster)
    over = own_threads_over(s)
    if over:
        out.insert(0, over)
    if workers is not None:
        # The step gets what its own workers leave (trial 38: a pre-decoded cache ran the job 2.9x faster)
        out.insert(0, f"Make the input cheaper: the DataLoader workers use {fmt(workers, 'cores')} of the "
                      f"{count(usable, 'usable CPU')} that the step would otherwise get; pre-decode or pre-resize the "
                      "data offline (or cache decoded samples), or lighten the augmentation")
    return out


def _optimizer(f: dict) -> str:
    """The optimizer step as the largest part of the main thread's work (system_stages.cpu_compute):
    torch's single-tensor optimizers loop in Python over every parameter, which a multi-tensor
    (foreach) or fused one does in a few kernels; each parameter group is a loop of its own."""
    detail = f.get("detail") or ""
    where = f", most often in {detail}" if detail else ""
    head = (f"The optimizer step is the largest part of the main thread's work ({f['optimizer']} of its last "
            f"{count(f['optimizer_of'], 'sample')}{where})")
    if "_multi_tensor" in detail or "_fused" in detail:
        fix = ("it already runs multi-tensor: fewer parameter groups (each is a loop of its own), and fused=True "
               "where the optimizer supports it")
    else:
        fix = ("a multi-tensor optimizer (foreach=True, or fused=True where supported) does it in a few kernels "
               "in place of a Python loop per parameter; fewer parameter groups help too")
    return (f"{head}: {fix}; the job's own loops over parameters (gradient clipping, weight averaging) can use "
            "torch._foreach_* ops or clip_grad_norm_(..., foreach=True)")


def _input_unmeasured(f: dict, sub: str, s: Signals) -> list[str]:
    who, pid = ("the main thread", main_pid(s)) if sub == "inline" else ("a DataLoader worker", WORKER_PID)
    # What the stage was decided on (little CPU, no storage sign), not "no CPU work": the workers'
    # samples may show some (review 38: beside "100 % of their samples in their own code").
    used = "it uses little CPU and shows" if sub == "inline" else "they use little CPU and show"
    return [f"Look at where {who} waits: py-spy dump --pid {pid} (a sleep, a lock, a remote call; {used} "
            "no storage sign)",
            "More DataLoader workers overlap waits that are not CPU work (network or service latency)"]


def _unknown(stage: str, s: Signals) -> list[str]:
    out = []
    if s.self_fed:
        # The loop waits for batches it feeds itself (a queue, a Pool): point at what fills it.
        pids = " on the job's other processes and" if s.job.helpers_busy else ""
        out.append(f"Look at what makes the batches the main thread waits for: py-spy dump --pid {main_pid(s)}{pids} on "
                   "its own threads; a torch DataLoader with num_workers > 0 spreads that work over processes "
                   "gpuwatch can measure")
    if stage == OFF_PIPELINE:
        out.append("Look at the main thread's hot frames (drill into Launch or Contention): the time goes to the "
                   "job's own code, outside the DataLoader and the model step")
    if not s.stacks.available:
        out.append("Let gpuwatch read stacks: run it as root or with CAP_SYS_PTRACE "
                   f"(kernel.yama.ptrace_scope) so py-spy can attach ({s.stacks.reason})")
    if s.gpu.present and not s.gpu.gpm:
        out.append("On a Hopper or newer GPU, GPM tells tiny kernels from real work and copies from compute")
    return out
