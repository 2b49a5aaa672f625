"""One NVML initialisation shared by the GPU and PCIe collectors, the reads they share (the GPUs' process
lists and used memory), and the choice of GPUs to watch.

The two collectors run on their own threads but every NVML call holds one process-wide lock
(``NvmlSession.lock``): NVML's reference calls it thread-safe, yet on the H200 a GPM sample taken
while the other thread was inside NVML crashed the process.

``pynvml`` (nvidia-ml-py) is used instead of hand-written ctypes: it is NVIDIA's own binding and
maps every return code to an exception class (``NVMLError_GpuIsLost``, ...). It is imported
lazily and can be injected (``NvmlSession(nvml=fake)``) so the tests run without a GPU.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuwatch.collectors.nspid import PidMap
from gpuwatch.model.values import Unsupported

PROCESS_TTL_S = 0.5
"""How long one read of the GPUs' compute-process lists is reused: the same as the Target's
process-tree refresh (collectors/target.py), so both collectors share one read per tick."""

MEMORY_REUSE_S = 0.1
"""How long one device-memory read is handed out again: the process lists' check and the GPU
collector's sample of the same tick, milliseconds apart, share it."""

MEMORY_V2_MISSING = ("NVMLError_FunctionNotFound", "NVMLError_ArgumentVersionMismatch", "NVMLError_NotSupported",
                     "NVMLError_NoData")
"""nvmlDeviceGetMemoryInfo_v2 answers that mean "use v1 instead": an older driver lacks
it, or it answers nothing (a replayed capture that recorded v1 only)."""

LOST_FIX = (
    "the GPU fell off the bus or stopped answering: check `dmesg` for NVIDIA Xid 79 or 48, "
    "then reset it (`nvidia-smi -r -i N`) or reboot"
)

_INIT_FIXES = {
    "NVMLError_LibraryNotFound": (
        "NVML library (libnvidia-ml.so.1) not found: install the NVIDIA driver, or run the "
        "container with the NVIDIA Container Toolkit (--gpus all)"
    ),
    "NVMLError_DriverNotLoaded": (
        "the NVIDIA kernel driver is not loaded: check `nvidia-smi`; load it with "
        "`sudo modprobe nvidia` or reboot after a driver install"
    ),
    "NVMLError_LibRmVersionMismatch": (
        "the NVML library and the loaded kernel driver are different versions (driver upgraded "
        "without a reboot?): reboot, or reload the nvidia kernel modules"
    ),
    "NVMLError_NoPermission": (
        "no permission to open the NVIDIA devices: run as root or give your user access to /dev/nvidia*"
    ),
}


def describe(err: BaseException, what: str) -> str:
    """A reason with its fix for one NVML call that failed (never GpuIsLost: see ``LOST_FIX``)."""
    name = type(err).__name__
    if name == "NVMLError_NotSupported":
        return f"{what}: not supported on this GPU or driver (NVML: Not Supported)"
    if name == "NVMLError_NoPermission":
        return f"{what}: NVML denied permission: run gpuwatch as root"
    if name in ("NVMLError_FunctionNotFound", "NVMLLibraryMismatchError"):
        return f"{what}: this driver's NVML lacks the call: update the NVIDIA driver"
    if name == "NVMLError_NoData":
        return f"{what}: NVML has no data for it"
    return f"{what}: NVML error: {err}"


_UNION_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
"""nvmlValueType_t -> the c_nvmlValue_t union member holding the value (nvml.h)."""

_MODULUS = {1: 2**32, 2: 2 ** (8 * ctypes.sizeof(ctypes.c_ulong)), 3: 2**64, 6: 2**16}
"""Where an unsigned counter of each value type wraps."""


def union_value(value: Any, vtype: int) -> float | int:
    """The number in an NVML ``c_nvmlValue_t`` union, read through the member ``vtype`` names."""
    return getattr(value, _UNION_MEMBER.get(int(vtype), "ullVal"))


NVML_LOCK = threading.RLock()
"""Serialises NVML calls process-wide (see NvmlSession.lock)."""
CLOSE_WAIT_S = 1.0
"""How long releasing NVML (shutdown, GPM buffers) waits for a call under way on a collector
thread. A call that hangs (a driver stuck on a failing GPU) holds the lock: closing the watch
waited for it on the event loop, and gpuwatch could not exit. Past this, NVML is left to the
process's exit. NVML calls take microseconds to a few milliseconds."""


@dataclass(frozen=True, slots=True)
class Field:
    """One NVML field value that was read successfully."""

    value: float | int
    ts_us: int
    """NVML's timestamp of the value (microseconds since 1970; 0 when NVML gives none)."""
    vtype: int
    mono: float
    """Our monotonic clock when we read it."""


def wrap_modulus(vtype: int) -> int:
    """Where an unsigned counter of NVML value type ``vtype`` wraps (2^64 when the type is unknown)."""
    return _MODULUS.get(int(vtype), 2**64)


def counter_delta(old: Field, new: Field) -> tuple[float, float] | Unsupported:
    """``(increase, seconds)`` of a cumulative counter between two reads, handling one wrap.

    One wrap only: whether the counter could have wrapped more than once in between is the
    caller's to judge (a 32-bit PCIe byte counter does, many times a second: collectors/pcie.py).

    The time comes from NVML's own timestamps when both have one (the counter may be refreshed
    by the driver a little before we read it), else from our monotonic clock.
    """
    if old.ts_us > 0 and new.ts_us > 0:
        dt = (new.ts_us - old.ts_us) / 1e6
    else:
        dt = new.mono - old.mono
    if dt <= 0:
        return Unsupported("the counter was not refreshed since the last tick")
    delta = new.value - old.value
    if delta < 0:
        delta += wrap_modulus(new.vtype)
    return float(delta), dt


class GpuLost(Exception):
    """Raised inside a collector when NVML says the GPU is lost; caught per GPU."""


@dataclass(frozen=True, slots=True)
class GpuProc:
    host_pid: int
    local_pid: int | None
    used_memory: int | None
    """Bytes; None where NVML cannot tell (it reports "not available")."""


class NvmlSession:
    """Lazy, shared NVML init; device handles by index; which GPUs the watched job uses."""

    def __init__(
        self,
        nvml: Any = None,
        pid_map: Callable[[int], int | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._nvml = nvml
        self.pid_map = pid_map if pid_map is not None else PidMap()
        self.clock = clock
        self.lock = NVML_LOCK
        """Held around every NVML call (one lock for every session in the process): the GPU and PCIe collectors run on their own threads, and on
        the H200 (driver 580.159.04) an nvmlGpmSampleGet on one thread while the other was inside
        nvmlDeviceGetCurrPcieLinkWidth crashed gpuwatch with SIGSEGV (1 start in 4 of the switch
        scenario, faulthandler trace in bench/results/HISTORY.md). NVML calls take microseconds; serialising
        them costs nothing measurable."""
        self._probed = False
        self._problem: Unsupported | None = None
        self._users = 0
        self._stuck = False
        """A release found the lock held past CLOSE_WAIT_S: later releases do not wait again."""
        self._count = 0
        self._handles: dict[int, Any] = {}
        self._lost: dict[int, str] = {}
        self._procs: dict[int, tuple[GpuProc, ...] | Unsupported] = {}
        self._procs_t = float("-inf")
        self._procs_seen: dict[int, tuple[float, int]] = {}
        """GPU -> (our clock, its used memory) when its process list was read while holding."""
        self.procs_hold_s = 0.0
        """While above 0 (the relaxed pace, set by the GPU collector), a GPU's compute-process list is
        read again only once it is this old or the GPU's used memory has changed since it was read
        (collectors/gpu.py, RELAXED_PROCESSES_S)."""
        self._numa_gpu: dict[int, bool] = {}
        """GPU -> whether NVML names a NUMA node for it (the GPU is one): its lists are never held."""
        self._mem_v2 = True
        self._mem: dict[int, tuple[float, Any]] = {}
        """GPU -> (our clock, its last memory read: the struct or the NVMLError raised)."""
        self._sticky: set[int] = set()
        self.gpm: Any = None
        """The GPM window this session's collectors share (collectors/gpm.py, set by its first user)."""

    # -- init --------------------------------------------------------------------------------
    @property
    def nvml(self) -> Any:
        """The pynvml module (or the injected fake). Only valid after a successful ``probe()``."""
        return self._nvml

    @property
    def count(self) -> int:
        return self._count

    def probe(self) -> Unsupported | None:
        """Initialise NVML once; None when it works, else the precise reason and fix (cached)."""
        with self.lock:
            if not self._probed:
                self._problem = self._init()
                self._probed = True
            return self._problem

    def _init(self) -> Unsupported | None:
        if self._nvml is None:
            try:
                import pynvml  # noqa: PLC0415 - optional dependency, imported only when GPUs are watched
            except ImportError:
                return Unsupported("nvidia-ml-py is not installed: pip install nvidia-ml-py")
            self._nvml = pynvml
        nv = self._nvml
        try:
            nv.nvmlInit()
        except nv.NVMLError as e:
            fix = _INIT_FIXES.get(type(e).__name__, f"NVML init failed: {e}")
            return Unsupported(fix)
        try:
            self._count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as e:
            return Unsupported(f"NVML could not count the GPUs: {e}")
        if self._count == 0:
            return Unsupported(
                "NVML sees no GPU: check nvidia-smi -L; in a container, pass the GPUs in "
                "(--gpus all)"
            )
        return None

    def open(self) -> Unsupported | None:
        """``probe()`` plus one user: NVML is shut down when the last user ``release()``s."""
        with self.lock:
            problem = self.probe()
            if problem is None:
                self._users += 1
            return problem

    def release(self) -> None:
        if not self.lock_for_release():
            return
        try:
            if self._users == 0:
                return
            self._users -= 1
            if self._users == 0 and self._probed and self._problem is None:
                try:
                    self._nvml.nvmlShutdown()
                except Exception:  # noqa: BLE001 - shutting down must never mask the real exit
                    pass
                self._probed = False
                self._handles.clear()
        finally:
            self.lock.release()

    def lock_for_release(self) -> bool:
        """Take the lock to free what NVML holds, waiting CLOSE_WAIT_S at most (none once a wait
        has run out): False when a call under way holds it (the caller then frees nothing)."""
        if not self._stuck and self.lock.acquire(timeout=CLOSE_WAIT_S):
            return True
        self._stuck = True
        return False

    # -- devices ----------------------------------------------------------------------------
    def handle(self, index: int) -> Any:
        """The NVML device handle of GPU ``index`` (cached). Raises GpuLost or NVMLError."""
        with self.lock:
            if index in self._lost:
                raise GpuLost(self._lost[index])
            h = self._handles.get(index)
            if h is None:
                try:
                    h = self._nvml.nvmlDeviceGetHandleByIndex(index)
                except self._nvml.NVMLError_GpuIsLost:
                    raise GpuLost(self.mark_lost(index)) from None
                self._handles[index] = h
            return h

    def mark_lost(self, index: int) -> str:
        with self.lock:
            return self._lost.setdefault(index, f"GPU {index} is lost: {LOST_FIX}")

    def lost(self, index: int) -> str | None:
        return self._lost.get(index)

    def call(self, index: int, fn: str, *args: Any) -> Any:
        """``nvml.<fn>(handle(index), *args)``, turning NVMLError_GpuIsLost into GpuLost."""
        return self.invoke(index, fn, getattr(self._nvml, fn), *args)

    def invoke(self, index: int, name: str, func: Callable[..., Any], *args: Any) -> Any:
        """``func(handle(index), *args)`` under the NVML lock, turning NVMLError_GpuIsLost into
        GpuLost: every NVML call goes through here (``name`` says which, for bench/collector_cost.py)."""
        h = self.handle(index)
        try:
            with self.lock:
                return func(h, *args)
        except self._nvml.NVMLError_GpuIsLost:
            raise GpuLost(self.mark_lost(index)) from None

    def read_fields(self, index: int, ids: Sequence[int], what: str) -> dict[int, Field | Unsupported] | Unsupported:
        """Cumulative field values in one ``nvmlDeviceGetFieldValues`` call; per-field failures kept apart."""
        nv = self._nvml
        try:
            raw = self.call(index, "nvmlDeviceGetFieldValues", list(ids))
        except nv.NVMLError as e:
            return Unsupported(describe(e, what))
        mono = self.clock()
        out: dict[int, Field | Unsupported] = {}
        for fv in raw:
            fid = int(fv.fieldId)
            if fv.nvmlReturn != nv.NVML_SUCCESS:
                if fv.nvmlReturn == nv.NVML_ERROR_GPU_IS_LOST:
                    raise GpuLost(self.mark_lost(index))
                out[fid] = Unsupported(describe(nv.NVMLError(fv.nvmlReturn), f"{what} (field {fid})"))
            else:
                out[fid] = Field(union_value(fv.value, fv.valueType), int(fv.timestamp), int(fv.valueType), mono)
        return out

    def memory(self, index: int) -> Any:
        """The GPU's memory as nvidia-smi shows it (nvmlMemory_v2, whose ``used`` leaves out the
        driver's reserved memory; v1 where v2 is missing), read once for the callers of one tick
        (MEMORY_REUSE_S). Raises GpuLost, or the NVMLError of the read."""
        with self.lock:
            now = self.clock()
            hit = self._mem.get(index)
            if hit is None or now - hit[0] >= MEMORY_REUSE_S:
                try:
                    got: Any = self._read_memory(index)
                except (self._nvml.NVMLError, self._nvml.NVMLLibraryMismatchError) as e:
                    got = e
                hit = self._mem[index] = (now, got)
            if isinstance(hit[1], BaseException):
                raise hit[1]
            return hit[1]

    def _read_memory(self, index: int) -> Any:
        nv = self._nvml
        version = getattr(nv, "nvmlMemory_v2", None)
        if self._mem_v2 and version is not None:
            try:
                return self.call(index, "nvmlDeviceGetMemoryInfo", version)
            except TypeError:  # an nvidia-ml-py whose nvmlDeviceGetMemoryInfo takes no version
                self._mem_v2 = False
            except (nv.NVMLError, nv.NVMLLibraryMismatchError) as e:
                if type(e).__name__ not in MEMORY_V2_MISSING:
                    raise
                self._mem_v2 = False
        return self.call(index, "nvmlDeviceGetMemoryInfo")

    # -- processes and selection ------------------------------------------------------------
    def processes(self) -> dict[int, tuple[GpuProc, ...] | Unsupported]:
        """Every GPU's compute processes, read at most once per ``PROCESS_TTL_S`` for all callers
        (and, while ``procs_hold_s`` holds them, only where the GPU's used memory changed)."""
        with self.lock:
            now = self.clock()
            if now - self._procs_t < PROCESS_TTL_S:
                return self._procs
            out: dict[int, tuple[GpuProc, ...] | Unsupported] = {}
            for i in range(self._count):
                out[i] = self._procs_of(i, now)
            self._procs, self._procs_t = out, now
            return out

    def _procs_of(self, index: int, now: float) -> tuple[GpuProc, ...] | Unsupported:
        """GPU ``index``'s list: the last one again while held and the GPU's used memory is as it
        was when that list was read (a process that starts on the GPU or leaves it allocates or
        frees its context's memory; never where the GPU is a NUMA node, ``_is_numa_node``), else
        read now."""
        try:
            used = int(self.memory(index).used) if self.procs_hold_s > 0 and not self._is_numa_node(index) else None
        except (GpuLost, self._nvml.NVMLError, self._nvml.NVMLLibraryMismatchError, AttributeError, TypeError):
            used = None
        if used is None:
            self._procs_seen.pop(index, None)
            return self._read_procs(index)
        kept, seen = self._procs.get(index), self._procs_seen.get(index)
        if (kept is not None and not isinstance(kept, Unsupported) and seen is not None
                and now - seen[0] < self.procs_hold_s and seen[1] == used):
            return kept
        got = self._read_procs(index)
        if isinstance(got, Unsupported):
            self._procs_seen.pop(index, None)
        else:
            self._procs_seen[index] = (now, used)
        return got

    def _is_numa_node(self, index: int) -> bool:
        """Whether the GPU is a NUMA node (Grace Hopper and the like: nvmlDeviceGetNumaNodeId names
        its node; asked once). There the OS manages the GPU's memory and keeps its pages after a
        process ends (nvmlDeviceGetMemoryInfo's note in NVML's reference), so used memory need not
        change when a process starts or leaves, and the lists are read every tick. NotSupported, as
        the H200 answered (bench/results/2026-12-02-h200/diagnose_h200_decode.md), or a binding
        without the call: the driver accounts the memory itself. Raises GpuLost."""
        hit = self._numa_gpu.get(index)
        if hit is None:
            try:
                node = self.call(index, "nvmlDeviceGetNumaNodeId")
                hit = isinstance(node, int) and node >= 0
            except (AttributeError, self._nvml.NVMLError, self._nvml.NVMLLibraryMismatchError):
                hit = False
            self._numa_gpu[index] = hit
        return hit

    def _read_procs(self, index: int) -> tuple[GpuProc, ...] | Unsupported:
        nv = self._nvml
        try:
            raw = self.call(index, "nvmlDeviceGetComputeRunningProcesses")
        except GpuLost as e:
            return Unsupported(str(e))
        except (nv.NVMLError, nv.NVMLLibraryMismatchError) as e:
            return Unsupported(describe(e, "compute processes"))
        procs = []
        for p in raw:
            mem = getattr(p, "usedGpuMemory", None)
            procs.append(GpuProc(int(p.pid), self.pid_map(int(p.pid)), None if mem is None else int(mem)))
        return tuple(procs)

    def select(self, pids: Iterable[int], gpus: Sequence[int] | None = None) -> list[tuple[int, bool]] | Unsupported:
        """``[(index, used_by_target)]`` for the GPUs to watch.

        ``gpus`` given: exactly those (an index out of range is an Unsupported with the reason).
        Otherwise: the GPUs whose compute-process list holds one of ``pids`` (mapped from host
        PIDs, see nspid.py), kept once seen so a GPU that is later lost still shows; when the job
        uses none yet, every GPU with ``used_by_target`` False.
        """
        problem = self.probe()
        if problem is not None:
            return problem
        ours = set(pids)
        hits = set()
        for i, procs in self.processes().items():
            if not isinstance(procs, Unsupported) and any(p.local_pid in ours for p in procs):
                hits.add(i)
        with self.lock:
            self._sticky |= hits
            used = set(self._sticky)
        if gpus is not None:
            bad = [g for g in gpus if not 0 <= g < self._count]
            if bad:
                return Unsupported(
                    f"GPU index {bad[0]} does not exist: NVML sees {self._count} GPU(s), "
                    f"indices 0..{self._count - 1} (nvidia-smi order)"
                )
            return [(g, g in used) for g in dict.fromkeys(gpus)]
        if used:
            return [(i, True) for i in sorted(used)]
        return [(i, False) for i in range(self._count)]
