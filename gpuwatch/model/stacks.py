"""What the stack collector sees: one py-spy dump of each process, each thread labelled."""

from __future__ import annotations

from dataclasses import dataclass

# Activity labels. Main thread (and other threads of a main process):
DATA_WAIT = "data_wait"
DATA_IPC = "data_ipc"
INLINE_LOAD = "inline_load"
H2D = "h2d"
SYNC = "sync"
BACKWARD = "backward"
OPTIMIZER = "optimizer"
DISPATCH = "dispatch"
CHECKPOINT = "checkpoint"
COLLECTIVE = "collective"
"""Waiting in a distributed collective (all-reduce, broadcast, barrier): another rank is slower."""
OTHER = "other"
# DataLoader workers:
W_BUSY = "busy"
W_IO = "io"
W_IDLE = "idle"
# The pin-memory thread:
PIN_BUSY = "pin_busy"
PIN_IDLE = "pin_idle"

MAIN_LABELS = (DATA_WAIT, DATA_IPC, INLINE_LOAD, H2D, SYNC, BACKWARD, OPTIMIZER, DISPATCH, CHECKPOINT, COLLECTIVE,
               OTHER)
WORKER_LABELS = (W_BUSY, W_IO, W_IDLE)
PIN_LABELS = (PIN_BUSY, PIN_IDLE)

# Stack roles (which thread a share is about).
ROLE_MAIN_THREAD = "main"
ROLE_WORKER = "worker"
ROLE_PIN = "pin"
ROLE_OTHER_THREAD = "other"


@dataclass(frozen=True, slots=True)
class ThreadStack:
    pid: int
    tid: int
    role: str
    """main (the main thread of a main process), worker, pin, other."""
    rank: int | None
    thread_name: str
    label: str
    detail: str
    """The hot function behind the label, e.g. ``Image.convert``, or the user line for sync."""
    active: bool
    owns_gil: bool
    frames: tuple[str, ...]
    """Leaf-first, ``function (file:line)``, at most a dozen."""


@dataclass(frozen=True, slots=True)
class DumpResult:
    """How one py-spy call went."""

    pid: int
    ok: bool
    ms: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class StackSample:
    t: float
    threads: tuple[ThreadStack, ...]
    dumps: tuple[DumpResult, ...]
