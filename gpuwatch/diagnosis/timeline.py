"""The job tick by tick: for each frame, what the main thread did and which workers were alive.

Window means mix busy and idle phases (a loader whose workers decode flat out while the main
thread waits, then idle while it trains, averages 0.4 core a worker). Judging by tick keeps the
readings of one instant together: the procs sample and the stack sample of one frame cover the
same ~1 s, so the workers' CPU and states in a tick where the main thread waited are what the
workers did *while* it waited. Both the aligned evidence (aligned.py) and the epoch structure
(phases.py) read this timeline.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuwatch.diagnosis.host_signals import D_STATES
from gpuwatch.diagnosis.sample_memo import SampleMemo
from gpuwatch.model import stacks as lb
from gpuwatch.model.evaluation import in_evaluation
from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ROLE_MAIN, ROLE_WORKER, forking, spawned
from gpuwatch.model.values import known

DECODER_WORDS = re.compile(
    r"ImageFile\.load|decode_jpeg|decode_png|decode_image|decode_webp|decode_avif|decode_heic|read_image|"
    r"imdecode|imread|simplejpeg|TurboJPEG\.decode|jpeg4py|VideoReader|decode_video|av/container|PyAV", re.IGNORECASE)
"""A worker frame inside an image or video decoder: PIL decodes in ``ImageFile.load`` (``Image.open``
only reads the header; ``convert``/``resize`` and the transforms call ``load`` first), torchvision's
``torchvision.io`` decoders, OpenCV, simplejpeg, PyTurboJPEG, jpeg4py, PyAV and torchvision's video
reader. The share of worker samples in one is what a cheaper decode can take off a batch
(fix_gains.py)."""
STARTING = "workers starting"
"""stack_labels.py's detail for a main thread inside the DataLoader iterator's start or shutdown."""
WAIT_LABELS = (lb.DATA_WAIT, lb.DATA_IPC)
COMPILED_FRAMES = ("OptimizedModule.__call__ (torch/_dynamo/", "compile_wrapper (torch/_dynamo/",
                   "CompiledFxGraph.__call__ (torch/_inductor/", "torch/_functorch/_aot_autograd/")
"""Frames of a model that runs under torch.compile: the compiled module's call, Dynamo's wrapper
around a compiled function, Inductor's compiled graph and AOTAutograd's runtime wrappers. Not
``eval_frame.py``'s ``DisableContext``, which wraps torch's own optimizer steps in any job. On the H100
compile job 5 of its 24 main-thread samples after the compile held one."""


@dataclass(frozen=True, slots=True)
class Tick:
    t: float
    dt: float
    workers: frozenset[int] = frozenset()
    worker_cpu: tuple[float, ...] = ()
    """CPU (cores) of each live worker over the tick."""
    worker_pids: tuple[int, ...] = ()
    """The live workers' PIDs in ``worker_cpu``'s order (aligned.py reads a set's CPU by them)."""
    worker_started: tuple[tuple[int, float], ...] = ()
    """(pid, start time in Unix seconds) of the live workers forked straight from the training
    process whose start is known, by pid (phases._sets tells sets apart by them). Not spawned or
    forkserver workers (procs.spawned), whose starts wait on pickling the dataset."""
    worker_d: float | None = None
    """Share of the live workers with a thread in D state at the sample."""
    worker_read_bps: float | None = None
    main_write_bps: float | None = None
    main: Counter = field(default_factory=Counter)
    """Main-thread stack labels sampled in this tick."""
    worker_labels: Counter = field(default_factory=Counter)
    starting: int = 0
    """Main-thread samples inside the DataLoader's worker start/shutdown."""
    validation: int = 0
    """Main-thread samples inside an evaluation pass."""
    validation_wait: int = 0
    """Of those, the samples waiting for a batch (WAIT_LABELS): the validation loader's waits."""
    worker_decoding: int = 0
    """Worker samples with a decoder frame in their stack (DECODER_WORDS)."""
    main_decoding: int = 0
    """Main-thread samples loading data itself (num_workers=0) with a decoder frame in their stack."""
    compiled: int = 0
    """Main-thread samples in torch.compile's compiler or in a compiled model (COMPILED_FRAMES)."""
    procs: bool = False
    """A new procs sample of the job came in this tick (CPU and states are this tick's own)."""
    stacks: bool = False
    n_main: int = field(init=False, compare=False, repr=False)
    """Main-thread samples in this tick (``main``'s total)."""
    wait: float | None = field(init=False, compare=False, repr=False)
    """Their share in a data wait (WAIT_LABELS). Both worked out once as the Tick is made: the
    epoch structure and the aligned readings ask each tick of the minute for them every tick."""

    def __post_init__(self) -> None:
        n = sum(self.main.values())
        object.__setattr__(self, "n_main", n)
        object.__setattr__(self, "wait", sum([self.main.get(x, 0) for x in WAIT_LABELS]) / n if n else None)

    def share(self, label: str) -> float | None:
        n = self.n_main
        return self.main.get(label, 0) / n if n else None


def timeline(frames: Sequence[Frame], rank: int | None) -> list[Tick]:
    """One Tick per frame that brought a new procs or stack sample, oldest first."""
    if not frames:
        return []
    first, last = frames[0], frames[-1]
    key = (id(first), id(last), len(frames), rank)
    hit = _WINDOWS.get(key)
    if hit is not None and hit[0] is first and hit[1] is last:
        return hit[2]
    if len(_WINDOWS) >= 8:
        _WINDOWS.clear()
    out = _timeline(frames, rank)
    _WINDOWS[key] = (first, last, out)
    return out


_WINDOWS: dict[tuple, tuple[Frame, Frame, list[Tick]]] = {}
"""The last few windows' timelines, by their first and last frame (held) and length: a window is
a run of the history's frames, so those three name it. A tick reads the same pool's timeline up
to three times (the candidate's, the sooner test's and the verdict's extract); callers only read it."""


def _timeline(frames: Sequence[Frame], rank: int | None) -> list[Tick]:
    out: list[Tick] = []
    seen_p: set[float] = set()
    seen_s: set[float] = set()
    prev_t: float | None = None
    for f in frames:
        p = f.procs if known(f.procs) and f.procs.t not in seen_p else None
        s = f.stacks if known(f.stacks) and f.stacks.t not in seen_s else None
        if p is None and s is None:
            continue
        dt = f.t - prev_t if prev_t is not None else f.interval
        prev_t = f.t
        if p is not None:
            seen_p.add(p.t)
        if s is not None:
            seen_s.add(s.t)
        out.append(_tick(f, rank, p is not None, s is not None, max(dt, 1e-3)))
    return out


def _tick(f: Frame, rank: int | None, new_p: bool, new_s: bool, dt: float) -> Tick:
    """The Tick of frame ``f`` in a window where its procs and stack samples are new or not and
    the window's previous tick lies ``dt`` before: all a Tick depends on, so every window of this
    tick and of the next minute's ticks that reads ``f`` the same way shares one."""
    return _TICKS.get(f, (id(f), rank, new_p, new_s, dt), lambda: _make_tick(f, rank, new_p, new_s, dt))


def _make_tick(f: Frame, rank: int | None, new_p: bool, new_s: bool, dt: float) -> Tick:
    fields: dict = {}
    if known(f.procs):  # a repeated procs sample still says which workers live (not counted twice: new)
        fields.update(_procs_fields(f.procs, rank, new=new_p))
    if new_s:
        fields.update(_stack_fields(f.stacks, rank))
    return Tick(t=f.t, dt=dt, **fields)


_TICKS: SampleMemo[Tick] = SampleMemo(2048)
"""Ticks by frame and how the window reads it. A frame stays in the minute's window for sixty
ticks and in the shorter windows too, read the same way in all but the windows it starts (its
first tick's ``dt`` and whether its samples were seen before then differ): about one entry a
frame and rank, a few more a tick. 2048 hold a single job's last few hundred ticks and an 8-rank
job's last few dozen."""


_MEMO: SampleMemo[dict] = SampleMemo(2048)
"""What one sample gives a tick, by the sample and the rank: the diagnosis reads the timeline of
its whole window five times a tick (replaying the H200 benchmark job on the CPU VM this was 4.7 ms
of a 10.6 ms tick before). 2048 entries hold a single job's last ~800 ticks (two or three entries
a tick: fewer than the 900 frames the history keeps alive anyway, so no sample outlives its frame
by much) and an 8-rank job's last ~75 (27 a tick: more than the minute the epoch window reads)."""


def _procs_fields(p, rank: int | None, new: bool) -> dict:
    return _MEMO.get(p, (id(p), "procs", rank, new), lambda: _with_procs(p, rank, new))


def _stack_fields(s, rank: int | None) -> dict:
    return _MEMO.get(s, (id(s), "stacks", rank), lambda: _with_stacks(s, rank))


def _with_procs(p, rank: int | None, new: bool) -> dict:
    mains = [x for x in p.processes if x.role == ROLE_MAIN and (rank is None or x.rank == rank)]
    pids = {m.pid for m in mains}
    workers = [w for w in p.processes if w.role == ROLE_WORKER
               and (w.main_pid in pids or (w.main_pid is None and len(mains) == 1))]
    d = None
    if workers:
        vfork = forking(p)  # a worker waiting for its own fork's exec is in D state with no disk I/O
        d = sum(w.pid not in vfork and any(st in D_STATES for st in [w.state, *(t.state for t in w.threads)])
                for w in workers) / len(workers)
    reads = [w.read_bps for w in workers if known(w.read_bps)]
    writes = [m.write_bps for m in mains if known(m.write_bps)]
    return dict(workers=frozenset(w.pid for w in workers), worker_cpu=tuple(w.cpu_pct / 100 for w in workers),
                worker_pids=tuple(w.pid for w in workers),
                worker_started=tuple(sorted((w.pid, w.started) for w in workers if w.started is not None and not spawned(w))),
                worker_d=d, worker_read_bps=float(sum(reads)) if reads else None,
                main_write_bps=float(sum(writes)) if writes else None, procs=bool(mains) and new)


def _with_stacks(s, rank: int | None) -> dict:
    main: Counter = Counter()
    workers: Counter = Counter()
    starting = validation = validation_wait = decoding = main_decoding = compiled = 0
    for th in s.threads:
        if rank is not None and th.rank is not None and th.rank != rank:
            continue
        if th.role == lb.ROLE_MAIN_THREAD:
            main[th.label] += 1
            starting += STARTING in (th.detail or "")
            in_pass = in_evaluation(th)
            validation += in_pass
            validation_wait += in_pass and th.label in WAIT_LABELS
            if th.label == lb.INLINE_LOAD:
                main_decoding += any(DECODER_WORDS.search(fr) for fr in th.frames)
            compiled += th.label == lb.COMPILE or any(c in fr for fr in th.frames for c in COMPILED_FRAMES)
        elif th.role == lb.ROLE_WORKER:
            workers[th.label] += 1
            decoding += any(DECODER_WORDS.search(fr) for fr in th.frames)
    return dict(main=main, worker_labels=workers, starting=starting, validation=validation,
                validation_wait=validation_wait,
                worker_decoding=decoding, main_decoding=main_decoding, compiled=compiled, stacks=bool(main))
