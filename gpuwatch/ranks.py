"""Per-rank views of a frame: which processes, threads and GPUs belong to rank r, and what each rank's
main thread spends its time on. Pure, except :func:`read_rank_devices` (reads /proc, live only).

:func:`frame_for_rank` returns a frame as if gpuwatch watched that one rank, so the diagnosis needs
no rank logic: per-rank verdicts are one :class:`~gpuwatch.analysis.Analysis` per rank fed with these
frames (:class:`RankAnalyses`). :func:`rank_signals` sums up a window of frames per rank for the
straggler rule (:mod:`gpuwatch.straggler`).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, deque
from statistics import median
from collections.abc import Mapping, Sequence
from functools import lru_cache

from gpuwatch.analysis import HISTORY_FRAMES, Analysis
from gpuwatch.diagnosis.stack_counts import count, stack_samples, threads
from gpuwatch.diagnosis.window import recent, unique_samples
from gpuwatch.diagnosis.worker_sets import sample_cpu
from gpuwatch.history import History
from gpuwatch.model.frame import Frame, TargetInfo
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.procs import ROLE_LAUNCHER, ROLE_MAIN, ROLE_WORKER, ProcInfo, ProcsSample
from gpuwatch.collectors.stack_labels import COLLECTIVE_FRAMES, NATIVE_COLLECTIVES
from gpuwatch.model.stacks import COLLECTIVE, DATA_IPC, DATA_WAIT, INLINE_LOAD, ROLE_MAIN_THREAD, ThreadStack
from gpuwatch.model.values import Unsupported, known
from gpuwatch.model.verdict import Verdict
from gpuwatch.untrusted import small_int
from gpuwatch.diagnosis.thresholds import RANK_WINDOW_S
from gpuwatch.straggler import RankSignals, Straggler, find_straggler

INPUT_LABELS = (DATA_WAIT, DATA_IPC, INLINE_LOAD)
"""Main-thread labels that mean "getting this rank's own input": waiting for or loading it, as the
straggler's sentences say ("waits for its input"). Preparing batches in the training loop
(stacks.LOOP_PREP, in stacks.INPUT_LABELS) is left out here: it computes, which those words would
misname."""

SIGNAL_WINDOW_S = RANK_WINDOW_S
"""Seconds of frames behind one rank's signals (docs/THRESHOLDS.md)."""

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*):\d+\)$")


def is_collective_wait(th: ThreadStack) -> bool:
    """True when the thread waits in a collective (by its label, or by its frames until the stack
    classifier has the label)."""
    return th.label == COLLECTIVE or any(map(_collective_frame, th.frames))


@lru_cache(maxsize=8192)
def _collective_frame(text: str) -> bool:
    """One stack frame ("function (file:line)") is in a collective. Cached by the frame's text: a
    rank's main thread shows the same few frames sample after sample, and the straggler rule reads
    each sample in every window of the next SIGNAL_WINDOW_S seconds, for every rank."""
    m = _FRAME.match(text)
    func, path = (m["func"], m["file"]) if m else (text, "")
    if any(n in func for n in NATIVE_COLLECTIVES):
        return True
    for want_func, suffix in COLLECTIVE_FRAMES:
        if (suffix in path if suffix.endswith("/") else path.endswith(suffix)) and (
            not want_func or func == want_func or func.endswith("." + want_func)
        ):
            return True
    return False


# -- who belongs to which rank ---------------------------------------------------------------------

def ranks_of(frame: Frame) -> tuple[int, ...]:
    """The ranks of the frame's training processes (from procs, else from stacks), sorted."""
    if known(frame.procs):
        found = {p.rank for p in frame.procs.processes if p.role == ROLE_MAIN and p.rank is not None}
    elif known(frame.stacks):
        found = {t.rank for t in frame.stacks.threads if t.rank is not None}
    else:
        found = set()
    return tuple(sorted(found))


def scope_words(frame: Frame) -> str:
    """Where the PID given is one rank of several: what is watched instead ("PID 2227 is rank 0 of 2
    ranks: the whole job is watched, from its launcher (PID 2224)"), else "". The process walk takes
    a rank's launcher in (collectors/target.py, family_root): the other ranks belong to the job."""
    if not known(frame.procs):
        return ""
    pid = frame.target.pid
    me = next((p for p in frame.procs.processes if p.pid == pid), None)
    mains = [p for p in frame.procs.processes if p.role == ROLE_MAIN]
    top = next((p for p in frame.procs.processes if p.role == ROLE_LAUNCHER and p.pid == (me.ppid if me else None)),
               None)
    if me is None or me.role != ROLE_MAIN or len(mains) < 2 or top is None:
        return ""
    rank = f"rank {me.rank}" if me.rank is not None else "one"
    return f"PID {pid} is {rank} of {len(mains)} ranks: the whole job is watched, from its launcher (PID {top.pid})"


class ScopeNotice:
    """scope_words said once in a watch (the TUI's notice, --json's stderr line): on the first tick
    of a multi-rank job whose processes were read (ranks can show from the stacks alone, and the
    words need the processes)."""

    def __init__(self) -> None:
        self.said = False

    def once(self, frame: Frame, multirank: bool) -> str:
        """The words, the first time they can be said; "" otherwise."""
        if self.said or not multirank:
            return ""
        words = scope_words(frame)
        self.said = bool(words)
        return words


def rank_processes(procs: ProcsSample, rank: int) -> tuple[ProcInfo, ...]:
    """Rank ``rank``'s main process(es) and every process that belongs to one of them."""
    mains = {p.pid for p in procs.processes if p.role == ROLE_MAIN and p.rank == rank}
    return tuple(p for p in procs.processes if p.pid in mains or p.main_pid in mains)


def rank_pids(frame: Frame, rank: int) -> frozenset[int]:
    pids = set()
    if known(frame.procs):
        pids.update(p.pid for p in rank_processes(frame.procs, rank))
    if known(frame.stacks):
        pids.update(t.pid for t in frame.stacks.threads if t.rank == rank)
    return frozenset(pids)


def gpus_of(gpus: Sequence[GpuSample], pids: frozenset[int]) -> tuple[int, ...]:
    """Indexes of the GPUs on which NVML lists one of ``pids`` (our PID namespace, else NVML's)."""
    return tuple(
        g.index for g in gpus
        if any((p.local_pid if p.local_pid is not None else p.pid) in pids for p in g.processes)
    )


def frame_for_rank(frame: Frame, rank: int | None, devices: Sequence[int] | None = None) -> Frame:
    """The frame seen from one rank: its main and that main's workers and other children (no
    launcher), their stacks and py-spy dumps, the GPUs it uses (NVML lists one of its processes,
    else ``devices``, e.g. from :func:`read_rank_devices`) and their PCIe links, and the rank's own
    read rate as the job's. Host and block devices are shared, so they stay whole. ``rank=None``:
    the frame unchanged (a single-process job)."""
    if rank is None:
        return frame
    pids = rank_pids(frame, rank)
    procs = frame.procs
    main: ProcInfo | None = None
    if known(procs):
        mine = tuple(p for p in procs.processes if p.pid in pids)
        main = next((p for p in mine if p.role == ROLE_MAIN), None)
        # The other ranks' CPU stays the job's: the host's busy time less this rank's alone named
        # a sibling rank as contention "outside the job" (trial 24's two-rank DDP job).
        # The CPU of processes that exited within the tick is the job's but no rank's in particular:
        # it goes with the siblings', so a rank is not told of commands another rank ran.
        siblings = sum(p.cpu_pct for p in procs.processes if p.pid not in pids) + procs.exited_cpu_pct
        procs = dataclasses.replace(procs, processes=mine, exited_cpu_pct=0.0,
                                    siblings_cpu_pct=procs.siblings_cpu_pct + siblings)
    stacks = frame.stacks
    if known(stacks):
        stacks = dataclasses.replace(
            stacks,
            threads=tuple(t for t in stacks.threads if t.pid in pids or t.rank == rank),
            dumps=tuple(d for d in stacks.dumps if d.pid in pids),
        )
    gpus, pcie = frame.gpus, frame.pcie
    if known(gpus) and gpus:
        used = set(gpus_of(gpus, pids)) or set(devices or ())
        if used:
            gpus = tuple(g for g in gpus if g.index in used)
            if known(pcie):
                pcie = tuple(s for s in pcie if s.index in used)
        else:
            why = Unsupported(f"no GPU could be tied to rank {rank}: NVML lists none of its processes and "
                              "its environment names none (LOCAL_RANK, CUDA_VISIBLE_DEVICES)")
            gpus = why
            pcie = why if known(pcie) else pcie
    disk = frame.disk
    if known(disk) and known(procs):
        rates = [p.read_bps for p in procs.processes]
        bad = next((r for r in rates if not known(r)), None)
        if not rates:
            bad = Unsupported(f"rank {rank} has no processes in this frame")
        disk = dataclasses.replace(disk, target_read_bps=bad if bad is not None else float(sum(rates)))
    target = frame.target
    if main is not None:
        target = TargetInfo(pid=main.pid, cmdline=main.cmdline, alive=target.alive, exit_reason=target.exit_reason)
    return dataclasses.replace(frame, target=target, procs=procs, stacks=stacks, gpus=gpus, pcie=pcie, disk=disk)


# -- GPUs from the environment (live fallback) -----------------------------------------------------

def devices_from_env(env: Mapping[str, str], gpus: Sequence[GpuSample]) -> tuple[int, ...] | None:
    """NVML indexes of the GPU a rank uses, by the torchrun convention ``cuda:LOCAL_RANK`` within
    CUDA_VISIBLE_DEVICES. None when the environment does not say.

    CUDA_VISIBLE_DEVICES entries are indexes or UUID prefixes (``GPU-8f3c...``). CUDA numbers devices
    fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML by PCI bus: on a machine of identical
    GPUs (the usual DDP node) the two orders agree."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    local_rank = small_int(env.get("LOCAL_RANK", ""))
    if visible is None:
        return (local_rank,) if local_rank is not None and any(g.index == local_rank for g in gpus) else None
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if len(entries) == 1:
        pick = entries[0]
    elif local_rank is not None and local_rank < len(entries):
        pick = entries[local_rank]
    else:
        return None
    idx = small_int(pick)
    if idx is not None:
        return (idx,) if any(g.index == idx for g in gpus) else None
    match = [g.index for g in gpus if g.uuid.startswith(pick)]
    return (match[0],) if len(match) == 1 else None


def read_rank_devices(frame: Frame) -> dict[int, tuple[int, ...]]:
    """rank -> GPU indexes from each rank main's environment (blocking /proc reads: call it off the
    event loop, once per rank; it is for ranks whose GPU NVML does not show, e.g. before the first
    CUDA call or in a container whose PIDs NVML cannot map)."""
    import psutil

    out: dict[int, tuple[int, ...]] = {}
    if not (known(frame.procs) and known(frame.gpus)):
        return out
    for p in frame.procs.processes:
        if p.role != ROLE_MAIN or p.rank is None:
            continue
        try:
            env = psutil.Process(p.pid).environ()
        except (psutil.Error, OSError):
            continue
        devs = devices_from_env(env, frame.gpus)
        if devs:
            out[p.rank] = devs
    return out


# -- per-rank signals and verdicts -----------------------------------------------------------------

def rank_signals(frames: Sequence[Frame], rank: int, window_s: float = SIGNAL_WINDOW_S) -> RankSignals:
    """What rank ``rank``'s main thread did over the last ``window_s`` seconds of ``frames``, and its
    DataLoader workers' CPU."""
    window = recent(frames, window_s)
    mains = threads(stack_samples(window), lambda th: th.rank == rank and th.role == ROLE_MAIN_THREAD)
    labels = count(mains, lambda th: COLLECTIVE if is_collective_wait(th) else th.label)
    n = sum(labels.values())
    worker_cpu, main_cpu = [], []
    idle_out = 0
    for procs in unique_samples(window, "procs"):
        mine = rank_processes(procs, rank)
        workers = [p for p in mine if p.role == ROLE_WORKER]
        if workers:
            sets = sample_cpu(workers)
            worker_cpu.append(sets.cpu)
            idle_out += sets.idle_out
        main_cpu += [p.cpu_pct / 100.0 for p in mine if p.role == ROLE_MAIN]
    # A rank's compute is its CPU only where it holds no GPU: on a GPU its step costs the CPU little.
    # A GPU host that lists none of the rank's processes runs it on the CPU (a gloo job beside it).
    gpu_seen = any(known(f.gpus) and gpus_of(f.gpus, rank_pids(f, rank)) for f in window)
    own = Counter({k: v for k, v in labels.items() if k != COLLECTIVE})
    return RankSignals(
        rank=rank,
        samples=n,
        input_share=sum(labels[k] for k in INPUT_LABELS) / n if n else None,
        collective_share=labels[COLLECTIVE] / n if n else None,
        top_label=own.most_common(1)[0][0] if own else None,
        worker_cpu=sum(worker_cpu) / len(worker_cpu) if worker_cpu else None,
        idle_out=2 * idle_out >= len(worker_cpu) > 0,
        cpu_only_main_cpu=median(main_cpu) if main_cpu and not gpu_seen else None,
    )


class RankAnalyses:
    """One :class:`Analysis` per rank, fed with :func:`frame_for_rank` frames; call :meth:`update` once
    per frame. Ranks are added as they appear; a rank that leaves keeps its last verdict."""

    def __init__(self, history: int = HISTORY_FRAMES, devices: Mapping[int, Sequence[int]] | None = None) -> None:
        self.history = history
        self.devices: dict[int, tuple[int, ...]] = {r: tuple(d) for r, d in (devices or {}).items()}
        """rank -> GPU indexes from outside the frame (:func:`read_rank_devices`); NVML wins."""
        self.by_rank: dict[int, Analysis] = {}
        self._history = History(history)
        self._frames: deque[Frame] = self._history.frames

    def update(self, frame: Frame) -> dict[int, Verdict]:
        self._history.append(frame)
        out = {}
        for rank in ranks_of(frame):
            analysis = self.by_rank.setdefault(rank, Analysis(self.history, rank=rank))
            out[rank] = analysis.update(frame_for_rank(frame, rank, self.devices.get(rank)))
        return out

    def straggler(self, window_s: float = SIGNAL_WINDOW_S) -> Straggler | None:
        """The rank that holds the others back over the last ``window_s`` seconds, if one does."""
        if not self._frames:
            return None
        frames = self._history.last(window_s)  # holds the window each rank's signals cut (history.py)
        ranks = sorted({r for f in recent(frames, window_s) for r in ranks_of(f)})
        return find_straggler([rank_signals(frames, r, window_s) for r in ranks])
