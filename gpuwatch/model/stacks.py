"""What the stack collector sees: one py-spy dump of each process, each thread labelled."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Activity labels. Main thread (and other threads of a main process):
DATA_WAIT = "data_wait"
DATA_IPC = "data_ipc"
INLINE_LOAD = "inline_load"
LOOP_PREP = "loop_prep"
"""Preparing data in the training loop itself, outside the DataLoader: a data-transform library's
frames (torchvision transforms, PIL, albumentations, a tokenizer) on the main thread's stack while no
DataLoader fetch is (that one is ``inline_load``). Time the step does not get, as a load is; read as
the step's own compute, a loop spending 76 % of its time in ColorJitter looked like the model."""
SAMPLER = "sampler"
"""Drawing the next batch's indices from the DataLoader's sampler (``_next_index``), which runs in the
training process whatever num_workers is: a sampler's own code (weights drawn each batch, an order
sorted each epoch) is time the step does not get and no worker can take over. Read as receiving
batches or as workers starting, a class-balanced sampler was told "use uint8 tensors" and a sorting
one "persistent_workers=True" (trial 38)."""
INPUT_LABELS = (DATA_WAIT, DATA_IPC, INLINE_LOAD, LOOP_PREP, SAMPLER)
"""The main thread on its input: waiting for a batch (as the diagnosis counts the wait), loading one
itself (num_workers=0), preparing one in the training loop or drawing its indices. What the TUI's and the HTML report's
"input" lines plot: with the wait alone, a CPU-prep verdict on a loop that transforms its own
batches stood over "data wait 0 %"."""
H2D = "h2d"
SYNC = "sync"
BACKWARD = "backward"
OPTIMIZER = "optimizer"
DISPATCH = "dispatch"
CHECKPOINT = "checkpoint"
COLLECTIVE = "collective"
"""Waiting in a distributed collective (all-reduce, broadcast, barrier): another rank is slower."""
COMPILE = "compile"
"""Inside torch.compile's compiler (Dynamo tracing, Inductor's lowering and code generation, C++ or
Triton builds, autotuning): the first steps, and every recompile, run no training until it ends."""
OTHER = "other"
# DataLoader workers:
W_BUSY = "busy"
W_IO = "io"
W_IDLE = "idle"
W_WAIT = "wait"
"""Off the CPU inside ``__getitem__`` with no sign of a read: a sleep, a lock, a remote call."""
W_START = "start"
"""In the worker's start-up, before its first item: the ``worker_init_fn`` the worker loop calls
(what runs in it: opening a store, loading a table, a sleep)."""
# The pin-memory thread:
PIN_BUSY = "pin_busy"
PIN_IDLE = "pin_idle"
PIN_WORK_DETAIL = "pin_memory"
"""The detail of a pin-thread sample inside ``pin_memory`` itself (the copy into page-locked memory)."""

LABEL_WORDS = {
    DATA_WAIT: "waiting for a batch", DATA_IPC: "receiving a batch", INLINE_LOAD: "loading data itself",
    LOOP_PREP: "preparing data in the loop", SAMPLER: "drawing indices in the sampler",
    H2D: "copying to the GPU", SYNC: "syncing (.item()/.cpu())", BACKWARD: "backward pass", OPTIMIZER: "optimizer step",
    DISPATCH: "running ops", CHECKPOINT: "saving a checkpoint", COLLECTIVE: "in a collective",
    COMPILE: "compiling (torch.compile)", OTHER: "other work",
    W_BUSY: "computing", W_IO: "reading", W_WAIT: "waiting, no read in its stack", W_IDLE: "idle",
    W_START: "starting up (worker_init_fn)", PIN_BUSY: "pinning", PIN_IDLE: "idle",
}
"""Activity labels in words, as the views and the report say them. A sync is said by its calls, not
as "waiting for the GPU": on a CPU-only job ``.tolist()`` in a Python loop is the same label, and a
job with no GPU read "waiting for the GPU" (trial 24)."""

MAIN_LABELS = (DATA_WAIT, DATA_IPC, INLINE_LOAD, LOOP_PREP, SAMPLER, H2D, SYNC, BACKWARD, OPTIMIZER, DISPATCH, CHECKPOINT, COLLECTIVE,
               COMPILE, OTHER)
WORKER_LABELS = (W_BUSY, W_IO, W_WAIT, W_IDLE, W_START)
READ_WORDS = ("read", "open", "load", "recv", "fetch", "download", "get_object", "imread")
"""Function names that read (``read_uncached``, ``ImageFile.load``, ``socket.recv_into``, ``np.load``):
a worker off the CPU in one of them reads; in anything else it may sleep or wait on a lock."""
PIN_LABELS = (PIN_BUSY, PIN_IDLE)
STOPPED_DETAIL = " (stopped: SIGSTOP or SIGTSTP)"
"""Ends the detail of a worker sample taken while the worker was stopped (kernel state T): it
neither reads nor computes, whatever its frames say."""
NETWORK_DETAIL = " (socket)"
"""Ends the detail of a worker or main-thread sample reading over a socket (socket, ssl, http.client,
urllib3, botocore, httpcore frames): data fetched from a server or object store, not a local disk."""
NETWORK_DETAILS = (" (socket)", " (network)")
"""NETWORK_DETAIL, and the mark recordings of 43952f8 carry."""
RECV_NAME = re.compile(r"(?:^|_)recv", re.IGNORECASE)
"""recv at the start of a function's name or after an underscore (do_recv, _sock_recv_exact), not
inside a word (precvalidate)."""
LOCAL_IPC = ("Connection._recv", "Connection._recv_bytes", "Connection.recv", "Connection.recv_bytes",
             "Connection.recv_bytes_into", "reduction.recvfds", "reduction.recv_handle")
"""multiprocessing's pipes, queues and fd passing, by their exact names: local processes, no server
(a client class of its own named Connection still counts)."""
NETWORK_FUNCS = ("SocketIO.", "socket.", "SSLSocket.", "SSLObject.", "HTTPResponse.", "HTTPConnection.",
                 "StreamingBody.", "create_connection", "urlopen")
"""Hot functions of those frames, for recordings made before the detail carried NETWORK_DETAIL."""
D_STATE_DETAIL = " (D state: blocked on I/O)"
"""Ends the detail of a worker sample labelled io for its D state alone (no frame names a read: a C
call such as os.preadv shows none): the state is the sign of I/O, which the detail keeps."""


def waits_on_command(detail: str | None) -> bool:
    """A worker's hot frame in a command it runs and waits for (subprocess's Popen): no read of its
    own, though "Popen" holds "open" (recordings made before the labeller told it apart read so)."""
    return (detail or "").startswith(("Popen.", "subprocess.", "run (subprocess"))


def on_network(detail: str | None) -> bool:
    """A reading sample's detail names a read over a socket: NETWORK_DETAIL, a socket's function, or a
    function named for ``recv`` (a client calling the socket's C method itself shows no socket frame:
    trial 37's key-value client read in ``KVClient._recv_exact``, said "on storage" beside a disk 0 %
    busy)."""
    d = detail or ""
    if d.endswith(NETWORK_DETAILS) or d.startswith(NETWORK_FUNCS):
        return True
    # the function's own name, beginning with recv (after a dot or underscores), and not
    # multiprocessing's pipes and queues between local processes (review 42: Connection._recv,
    # reduction.recvfds, and "precvalidate" read as a server's)
    name = d.split(" (", 1)[0]
    return name not in LOCAL_IPC and RECV_NAME.search(name.rsplit(".", 1)[-1]) is not None


def activity(role: str, label: str, detail: str | None, active: bool = True) -> str:
    """The label as a view or report should read it: a worker sample recorded as "io" before the
    "wait" label existed counts as a read only where its function is named for reading (READ_WORDS),
    as the diagnosis counts it; a sleep or a lock in ``__getitem__`` is a wait. A pin-thread sample
    is read by :func:`pin_activity`."""
    if (role == ROLE_WORKER and label == W_IO and not (detail or "").endswith(D_STATE_DETAIL)
            and (not any(w in (detail or "").lower() for w in READ_WORDS) or waits_on_command(detail))
            and not on_network(detail)):
        return W_WAIT
    if role == ROLE_PIN:
        return pin_activity(label, detail, active)
    return label


def pin_activity(label: str, detail: str | None, active: bool) -> str:
    """A pin-thread sample recorded as busy while off the CPU outside ``pin_memory`` is idle: it
    waits in the IPC that hands it a batch (``Connection._recv``, ``DupFd.detach``: the worker's
    side has not sent it yet), pinning nothing. Recordings made before the labeller told the two
    apart carry it as busy."""
    if label == PIN_BUSY and not active and detail != PIN_WORK_DETAIL:
        return PIN_IDLE
    return label

# Stack roles (which thread a share is about).
ROLE_MAIN_THREAD = "main"
ROLE_WORKER = "worker"
ROLE_PIN = "pin"
ROLE_OTHER_THREAD = "other"
ROLE_TITLES = {ROLE_MAIN_THREAD: "main thread", ROLE_WORKER: "DataLoader workers", ROLE_PIN: "pin-memory thread",
               ROLE_OTHER_THREAD: "other threads"}
"""Thread roles in words, as the views and the report name them."""


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
    evaluating: bool | None = None
    """A main thread whose whole stack, frames beyond the kept dozen included, is inside an
    evaluation pass (gpuwatch/model/evaluation.py); None for other threads and in recordings made
    before it, where the diagnosis reads the kept frames."""


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
