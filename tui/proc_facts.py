"""What the process screen says about one process: why it has its role, and its history.

Pure functions over frames, so the screen stays a layout and the tests read the words directly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuProcess
from gpuwatch.model.procs import ROLE_LAUNCHER, ROLE_MAIN, ROLE_WORKER, ProcInfo, ProcsSample

STATE_WORDS = {
    "R": "running", "S": "sleeping", "D": "in uninterruptible wait (disk)", "Z": "zombie",
    "T": "stopped", "t": "traced", "I": "idle",
}


def find(frame: Frame, pid: int) -> ProcInfo | None:
    procs = frame.procs
    if not isinstance(procs, ProcsSample):
        return None
    return next((p for p in procs.processes if p.pid == pid), None)


def gpu_uses(frame: Frame, pid: int) -> list[tuple[int, GpuProcess]]:
    """(GPU index, NVML's entry) for each GPU that lists ``pid`` (our PID, else the host PID)."""
    gpus = frame.gpus
    if not isinstance(gpus, tuple):
        return []
    return [(g.index, p) for g in gpus for p in g.processes
            if (p.local_pid if p.local_pid is not None else p.pid) == pid]


def role_reason(p: ProcInfo, frame: Frame) -> str:
    """Why the collector gave ``p`` its role, in the words of its rules (collectors/target.py)."""
    procs = frame.procs
    assert isinstance(procs, ProcsSample)
    target = frame.target.pid
    rank = f" It is rank {p.rank} (RANK / LOCAL_RANK in its environment, or its start order)." \
        if p.rank is not None else ""
    if p.role == ROLE_LAUNCHER:
        return ("Launcher: it starts the training processes (a launcher command such as torchrun, or a "
                "process whose children lead ranks or own DataLoader workers); it trains nothing itself.")
    if p.role == ROLE_MAIN:
        if p.pid == target:
            return "Main: the process gpuwatch was asked to watch (--pid), and it trains." + rank
        workers = sum(1 for q in procs.processes if q.main_pid == p.pid and q.role == ROLE_WORKER)
        why = f"it owns {workers} DataLoader workers" if workers else "a Python child of the launcher"
        return f"Main: a training process of the job ({why})." + rank
    if p.role == ROLE_WORKER:
        return (f"DataLoader worker of PID {p.main_pid}: PyTorch names its workers pt_data_worker, and "
                "this one's parent is that training process. Workers load and prepare the batches the "
                "main process waits for.")
    return ("Other: a child of the job that is neither a training process nor a DataLoader worker "
            "(a multiprocessing helper, a shell, a compiler).")


def history(frames: Sequence[Frame], pid: int) -> list[ProcInfo | None]:
    """The process in each frame (None where it was not listed)."""
    return [find(f, pid) for f in frames]


def state_line(seen: Sequence[ProcInfo | None], width: int) -> str:
    """One letter per frame, newest right (``·`` where it was not listed), at most ``width``."""
    return "".join((p.state[:1].upper() or "?") if p is not None else "·" for p in seen[-width:])


def state_shares(seen: Sequence[ProcInfo | None]) -> str:
    """``R 62 % running · S 38 % sleeping`` over the frames it was listed in."""
    states = Counter((p.state[:1].upper() or "?") for p in seen if p is not None)
    n = sum(states.values())
    if not n:
        return "no state read"
    return " · ".join(f"{s} {100 * c / n:.0f} % {STATE_WORDS.get(s, '')}".rstrip()
                      for s, c in states.most_common())
