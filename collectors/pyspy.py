"""Running py-spy: finding the binary, one ``dump`` with a timeout, its JSON as plain records, and
why it failed (permissions, Python versions) in words a user can act on.

py-spy is a separate Rust binary, so it runs as a subprocess (an argument list, never a shell). A
call that hangs is killed and reaped; :meth:`Pyspy.kill` ends the one in flight from another thread.
"""

from __future__ import annotations

import functools
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gpuwatch.untrusted import clean

DUMP_TIMEOUT_S = 2.0
"""One dump normally takes ~10 ms (measured here: 9 ms median on a torch process with 2 workers; about
6 ms on the H200, h200-signatures.md). 200 times that means py-spy is stuck (benfred/py-spy#872
reports hangs on torch processes), so it is killed."""

ERROR_CHARS = 300
"""How much of py-spy's error text a DumpResult keeps."""

MAX_OUTPUT = 32 * 1024 * 1024
"""Bytes of py-spy output read at most (stdout and stderr together). A dump of 500 threads 40
frames deep is about 5 MB; a py-spy that prints without end is killed here instead of filling
gpuwatch's memory (one that flooded stdout drove RSS to 2.5 GB)."""


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One py-spy frame (leaf-first in :class:`ThreadRecord`)."""

    name: str
    """Qualified function name, e.g. ``ImageFile.load`` (Python 3.11+; older Pythons: ``load``)."""
    filename: str
    """The full path, as the target sees it."""
    short_filename: str
    """The path relative to its sys.path entry, e.g. ``PIL/ImageFile.py``."""
    line: int

    def text(self) -> str:
        return f"{self.name} ({self.short_filename}:{self.line})"


@dataclass(frozen=True, slots=True)
class ThreadRecord:
    pid: int
    tid: int
    """The OS thread id (equals ``pid`` for the main thread on Linux); 0 when py-spy gave none."""
    name: str
    """The Python thread name, e.g. ``MainThread``; empty when py-spy could not read it."""
    active: bool
    """py-spy's view: the thread was in state R (and not in a known wait). A D-state thread is idle."""
    owns_gil: bool
    frames: tuple[FrameRecord, ...]


@dataclass(frozen=True, slots=True)
class DumpOutcome:
    pid: int
    threads: tuple[ThreadRecord, ...]
    ms: float
    error: str | None = None
    """None when py-spy answered with parseable JSON."""

    @property
    def ok(self) -> bool:
        return self.error is None


MAX_NAME = 512
"""Characters kept of a function, file or thread name (all chosen by the job; cleaned, gpuwatch/untrusted.py)."""


class ParseError(ValueError):
    """py-spy printed something that is not its dump JSON."""


FRAME_MEMO = 8192
"""Frames kept by their raw fields (functools.lru_cache): a training loop's dumps show the same few
hundred frames again and again, and cleaning three strings per frame was a third of parsing a dump."""


def _frame(f: dict) -> FrameRecord:
    """The FrameRecord of one JSON frame; the same frame seen before comes back as the same object."""
    raw = (f.get("name"), f.get("filename"), f.get("short_filename"), f.get("line"))
    try:
        hash(raw)
    except TypeError:  # a field that is not a plain value (not py-spy's output): no memo
        return _frame_record(*raw)
    return _remembered_frame(*raw)


def _frame_record(name: object, filename: object, short_filename: object, line: object) -> FrameRecord:
    return FrameRecord(
        name=clean(str(name or "?"), MAX_NAME),
        filename=clean(str(filename or ""), MAX_NAME),
        short_filename=clean(str(short_filename or filename or ""), MAX_NAME),
        line=int(line or 0),
    )


_remembered_frame = functools.lru_cache(maxsize=FRAME_MEMO)(_frame_record)


def find_pyspy() -> str | None:
    """The py-spy next to this Python (the venv's bin folder), else the one on PATH."""
    # Not resolved: a venv's python is a symlink, and its bin folder is what holds py-spy.
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def parse_dump(text: str, pid: int) -> tuple[ThreadRecord, ...]:
    """The threads in ``py-spy dump --json`` output. Raises ParseError on anything else."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ParseError(f"py-spy printed something that is not JSON: {text[:80]!r}") from e
    if not isinstance(data, list):
        raise ParseError("py-spy JSON is not a list of threads")
    threads = []
    for t in data:
        try:
            frames = tuple(_frame(f) for f in t.get("frames") or ())
            threads.append(ThreadRecord(
                pid=int(t.get("pid") or pid),
                tid=int(t.get("os_thread_id") or 0),
                name=clean(str(t.get("thread_name") or ""), MAX_NAME),
                active=bool(t.get("active")),
                owns_gil=bool(t.get("owns_gil")),
                frames=frames,
            ))
        except (AttributeError, TypeError, ValueError) as e:
            raise ParseError(f"unexpected py-spy thread record: {e}") from e
    return tuple(threads)


class Pyspy:
    """Runs ``py-spy dump`` one call at a time; thread-safe :meth:`kill` for the call in flight."""

    def __init__(self, path: str, timeout: float = DUMP_TIMEOUT_S) -> None:
        self.path = path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._env = {**os.environb, b"RUST_BACKTRACE": b"0"}
        """py-spy's environment: ours (taken once: gpuwatch never changes its own), with one-line
        errors instead of Rust backtraces. Bytes, which subprocess passes on as they are."""

    def dump(self, pid: int, nonblocking: bool = True) -> DumpOutcome:
        """One dump of ``pid`` (never ``--locals``, never a shell). Failures come back as ``error``."""
        args = [self.path, "dump", "--pid", str(pid), "--json"] + (["--nonblocking"] if nonblocking else [])
        start = time.perf_counter()
        with self._lock:
            if self._closed:
                return DumpOutcome(pid, (), 0.0, "stack sampling stopped")
            try:
                # A session (and process group) of its own: whatever py-spy starts is killed with it.
                proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, env=self._env, start_new_session=True)
            except OSError as e:
                return DumpOutcome(pid, (), 0.0, f"cannot run {self.path}: {e}")
            self._proc = proc
        try:
            out, err, problem = _read_bounded(proc, self.timeout, MAX_OUTPUT)
            if problem is not None:
                _kill_and_reap(proc)
                return DumpOutcome(pid, (), _ms(start), problem)
        finally:
            with self._lock:
                self._proc = None
        ms = _ms(start)
        if proc.returncode != 0:
            if proc.returncode < 0:
                return DumpOutcome(pid, (), ms, f"py-spy was killed (signal {-proc.returncode})")
            return DumpOutcome(pid, (), ms, _error_text(err or out))
        try:
            return DumpOutcome(pid, parse_dump(out.decode("utf-8", "replace"), pid), ms)
        except ParseError as e:
            return DumpOutcome(pid, (), ms, str(e))

    def kill(self) -> None:
        """Stop for good: kill and reap the py-spy call in flight, if any; later dumps do nothing."""
        with self._lock:
            self._closed = True
            proc = self._proc
        if proc is not None:
            # The dumping thread is reading its output: it sees EOF and reaps the process itself.
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL py-spy's whole process group (py-spy and anything it started)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


def _kill_and_reap(proc: subprocess.Popen[bytes]) -> None:
    _kill_group(proc)
    for f in (proc.stdout, proc.stderr):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except (subprocess.TimeoutExpired, OSError):
        pass  # stuck in the kernel even after SIGKILL: subprocess reaps it when the next Popen starts


def _read_bounded(proc: subprocess.Popen[bytes], timeout: float, limit: int) -> tuple[bytes, bytes, str | None]:
    """py-spy's stdout and stderr until it exits, at most ``timeout`` seconds and ``limit`` bytes.
    Returns (out, err, None), or the reason it was cut off (the caller kills the group)."""
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    total = 0
    # poll(2) on the two pipes: no epoll descriptor to create and close per dump (py-spy writes its
    # JSON in one piece, so a dump is three or four wake-ups).
    poller = select.poll()
    for fd in bufs:
        poller.register(fd, select.POLLIN)
    left_open = len(bufs)
    while left_open:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", b"", f"py-spy did not answer within {timeout:g} s; killed it"
        for fd, _ in poller.poll(left * 1000.0):
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:  # end of file (POLLHUP comes with it)
                poller.unregister(fd)
                left_open -= 1
                continue
            total += len(chunk)
            if total > limit:
                return b"", b"", f"py-spy printed more than {limit // (1024 * 1024)} MiB; killed it"
            bufs[fd] += chunk
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return b"", b"", f"py-spy did not exit within {timeout:g} s; killed it"
    out, err = bytes(bufs[out_fd]), bytes(bufs[err_fd])
    proc.stdout.close()
    proc.stderr.close()
    return out, err, None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _error_text(raw: bytes) -> str:
    """py-spy's error, joined onto one line ("Error: ..." plus its "Caused by" list)."""
    lines = [ln.strip() for ln in raw.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return "py-spy failed without saying why"
    text = " ".join(ln for ln in lines if not ln.startswith("Stack backtrace"))
    return re.sub(r"\s+", " ", text)[:ERROR_CHARS]


# -- why a dump failed, and the fix ---------------------------------------------------------------

CAP_SYS_PTRACE = 19
"""Bit of CAP_SYS_PTRACE in /proc/<pid>/status CapEff (linux/capability.h)."""

PTRACE_SCOPE_FILE = "/proc/sys/kernel/yama/ptrace_scope"

PERMISSION_MARKERS = ("permission denied", "operation not permitted", "os error 1)", "os error 13)")
"""How py-spy 0.4.3 words a refused attach or memory read (its errno text, or its own
"Permission Denied: Try running again with elevated permissions")."""


@dataclass(frozen=True, slots=True)
class PtraceFacts:
    """What decides whether we may read another process's memory (Yama, capabilities, users)."""

    euid: int
    target_uid: int | None
    ptrace_scope: int | None
    """Yama's kernel.yama.ptrace_scope, None where Yama is absent."""
    cap_sys_ptrace: bool | None
    container: str | None
    """"docker", "podman", "kubernetes" or None (a guess from well-known marker files and variables)."""


def ptrace_facts(pid: int) -> PtraceFacts:
    return PtraceFacts(
        euid=os.geteuid(),
        target_uid=_uid_of(pid),
        ptrace_scope=_read_int(PTRACE_SCOPE_FILE),
        cap_sys_ptrace=_has_cap(CAP_SYS_PTRACE),
        container=_container_kind(),
    )


def permission_reason(pid: int, facts: PtraceFacts, pyspy: str = "py-spy", error: str = "") -> str:
    """Why reading ``pid`` is refused, with the fixes that apply here. Where none of the known
    walls stands (root, with the capability, no Yama), py-spy's own ``error`` is the reason given."""
    why = []
    if facts.target_uid is not None and facts.target_uid != facts.euid and facts.euid != 0:
        why.append(f"the job runs as uid {facts.target_uid}, gpuwatch as uid {facts.euid}")
    if facts.ptrace_scope is not None:
        meaning = {0: "same-user attach allowed", 1: "only a parent may attach to its children",
                   2: "only processes with CAP_SYS_PTRACE may attach", 3: "attaching is disabled until reboot"}
        why.append(f"kernel.yama.ptrace_scope is {facts.ptrace_scope} "
                   f"({meaning.get(facts.ptrace_scope, 'unknown setting')})")
    if facts.cap_sys_ptrace is False:
        why.append("gpuwatch lacks CAP_SYS_PTRACE")
    if facts.container and not facts.cap_sys_ptrace:
        why.append(f"it runs in a {facts.container} container, which drops SYS_PTRACE by default")
    fixes = [] if facts.euid == 0 else [
        "run gpuwatch with sudo", f"or grant py-spy the capability: sudo setcap cap_sys_ptrace+ep {pyspy}"]
    if facts.ptrace_scope in (1, 2):
        fixes.append("or allow same-user attach: sudo sysctl kernel.yama.ptrace_scope=0")
    if facts.container == "kubernetes":
        fixes.append("in Kubernetes add securityContext.capabilities.add: [SYS_PTRACE] to the container")
    elif facts.container:
        fixes.append("start the container with --cap-add SYS_PTRACE")
    if fixes and fixes[0].startswith("or "):
        fixes[0] = fixes[0][3:]
    if not why:
        said = error.strip().removeprefix("Error:").strip().rstrip(".") or "it failed without saying why"
        return f"py-spy could not read process {pid}: {said}" + (". Fix: " + ", ".join(fixes) if fixes else "") + "."
    return f"py-spy may not read process {pid}: {'; '.join(why)}." + (" Fix: " + ", ".join(fixes) + "." if fixes else "")


TORN_READ_MARKERS = ("bad address", "os error 14", "failed to copy")
"""py-spy 0.4.3's words when a --nonblocking read raced the running target (a frame freed or moved
while it was copied). Measured on the loaded 2-core VM (load 11), JPEG-decoding job: 1 of 300 dumps,
and its immediate retry succeeded."""


def is_torn_read(error: str | None) -> bool:
    """True for a --nonblocking read that raced the target: worth one immediate retry."""
    low = (error or "").lower()
    return any(m in low for m in TORN_READ_MARKERS)


INTERPRETER_CHECK_MARKERS = ("failed to find a python interpreter",)
"""py-spy 0.4.3's words when the interpreter it located did not pass its check: it takes an address
only once it has read every thread's stack from there ("as a final sanity check, try getting the
stack_traces", python_process_info.rs), and a --nonblocking read of that check can race the running
target like any other, after which the fallback scan of the .data section finds nothing either.
Seen once in CI, probing a pytest process busy on many threads, where the next dump read it. A
Python build py-spy cannot read answers the same on every try."""


def worth_retrying_probe(error: str | None) -> bool:
    """True for an error that a second dump at the probe may not repeat: a torn read, or a failed
    interpreter check (INTERPRETER_CHECK_MARKERS). The probe's answer holds for the whole watch."""
    low = (error or "").lower()
    return is_torn_read(error) or any(m in low for m in INTERPRETER_CHECK_MARKERS)


OWN_ERRORS = ("py-spy did not answer", "py-spy was killed", "py-spy printed", "py-spy JSON", "unexpected py-spy",
              "cannot run", "stack sampling stopped", "py-spy failed without")
"""Errors :class:`Pyspy` words itself: already plain."""


def explain_failure(error: str, pid: int, pyspy: str = "py-spy") -> str:
    """A py-spy error turned into a reason with its fix (for probe's Unsupported)."""
    if error.startswith(OWN_ERRORS):
        return error
    if is_torn_read(error):
        return f"the stack of process {pid} changed while py-spy read it without stopping it; sample skipped"
    low = error.lower()
    if any(m in low for m in PERMISSION_MARKERS) or ("executable name" in low and _exe_unreadable(pid)):
        return permission_reason(pid, ptrace_facts(pid), pyspy, error)
    if "unsupported version of python" in low:
        return (f"this py-spy cannot read the Python of process {pid} ({error}). "
                "Fix: pip install -U py-spy (0.4.0 reads 3.12/3.13, 0.4.2 reads 3.14)")
    exe = _exe_of(pid)
    if exe and re.search(r"python3\.\d+t$", os.path.basename(exe)):
        return (f"process {pid} runs a free-threaded Python ({os.path.basename(exe)}), whose stacks "
                "py-spy cannot read yet (benfred/py-spy#711); stacks are off for this job")
    if "failed to find python version" in low:
        return f"process {pid} is not a Python process py-spy can read ({exe or 'unknown executable'})"
    if "check that the process is running" in low or "no such process" in low:
        return f"process {pid} exited before py-spy could read it"
    return f"py-spy could not read process {pid}: {error}"


def _exe_unreadable(pid: int) -> bool:
    """True when the process exists but /proc/<pid>/exe is refused: the same wall py-spy hit."""
    try:
        os.readlink(f"/proc/{pid}/exe")
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def _exe_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _uid_of(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _has_cap(bit: int) -> bool | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _container_kind() -> str | None:
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.path.exists("/.dockerenv"):
        return "docker"
    try:
        with open("/proc/1/cgroup") as f:
            text = f.read()
    except OSError:
        return None
    for word, kind in (("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman")):
        if word in text:
            return kind
    return None
