"""A fake ``pynvml`` module that replays a real NVML capture (``bench/capture_nvml.py`` format).

Pass an instance wherever the collectors take the pynvml module: ``NvmlSession(nvml=FakeNvml(path))``.
It implements exactly the functions and constants the GPU and PCIe collectors use, with pynvml's
own exception classes, constants and ctypes structs, and driver-like state:

- ``nvmlDeviceGetSamples`` / ``nvmlDeviceGetProcessUtilization`` keep a driver buffer filled
  from the ticks replayed so far and answer "samples newer than the cursor" (NotFound when none),
  so cursor handling is exercised the way the real driver does it.
- GPM samples remember the tick they were taken at; ``nvmlGpmMetricsGet`` answers the metrics the
  capture recorded for the window ending at the second sample's tick.

Time moves only when a test says so: ``advance()`` / ``goto(workload, offset)``.
Scenario switches: ``scenario=`` "no_library", "driver_not_loaded", "version_mismatch",
"no_permission", "no_gpu"; ``not_supported(key)``; ``lose_gpu(i)``; ``set(key, ...)`` /
``set_field(id, ...)`` to override one value (synthetic values belong in the test that sets them).
``gpus=N`` replays the captured GPU on N devices; the copies have no compute processes, unless
``gpu_pids`` names one PID per GPU: each GPU then runs the captured process under that PID (one
rank per GPU, as a DDP job places them).

A key the capture lacks raises NVMLError_NoData and is listed in ``gaps``. The real capture
holds every call the collectors make except ``nvmlDeviceGetMemoryInfo`` v2 (it recorded v1).
"""

from __future__ import annotations

import ctypes
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

DATA = Path(__file__).parent / "data" / "nvml"
SEED = DATA / "h200_seed_2026-12-02.json"
CAPTURE = DATA / "h200_capture_2026-12-02.json"
"""The capture the tests replay: real, bench/capture_nvml.py on an NVIDIA H200 (driver 580.159.04),
2026-12-02; see tests/data/nvml/README.md. ``SEED`` (built from h200-signatures.md) is kept for
what the capture lacks."""

UNION = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
FIELD_KEYS = {"fields_throttle": (74, 76, 269, 270, 271), "fields_pcie": (197, 198)}
BUFFER_DEPTH = 100
"""Utilization samples the driver keeps (GoogleCloudPlatform container-engine-accelerators
metrics/util.go saw 100 for utilization samples)."""

SCENARIOS = {
    "no_library": pynvml.NVML_ERROR_LIBRARY_NOT_FOUND,
    "driver_not_loaded": pynvml.NVML_ERROR_DRIVER_NOT_LOADED,
    "version_mismatch": pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
    "no_permission": pynvml.NVML_ERROR_NO_PERMISSION,
}

_EXPORTED = (
    "NVMLError", "NVMLLibraryMismatchError", "NVML_SUCCESS", "NVML_ERROR_GPU_IS_LOST", "nvmlMemory_v2",
    "NVML_ERROR_INSUFFICIENT_SIZE", "NVML_ERROR_NOT_FOUND", "c_nvmlSample_t", "c_nvmlProcessUtilizationSample_t",
    "NVML_GPU_UTILIZATION_SAMPLES", "NVML_MEMORY_UTILIZATION_SAMPLES", "NVML_CLOCK_SM",
    "NVML_CLOCK_MEM", "NVML_TEMPERATURE_GPU", "NVML_GPM_METRICS_GET_VERSION", "c_nvmlGpmMetricsGet_t",
)


def load_capture(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != "gpuwatch-nvml-capture/1":
        raise ValueError(f"{path}: not a gpuwatch NVML capture (schema {doc.get('schema')!r})")
    return doc


class _Handle:
    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<fake nvmlDevice {self.index}>"


class FakeNvml:
    """Module-like replay of a capture. See the module docstring."""

    def __init__(self, capture: str | Path | dict = CAPTURE, *, gpus: int = 1, workload_pid: int | None = None,
                 scenario: str | None = None, gpu_pids: list[int] | None = None, c_api: bool = True) -> None:
        self.doc = capture if isinstance(capture, dict) else load_capture(capture)
        self.ticks = self.doc["ticks"]
        self.static = self.doc.get("static", {})
        self.n_gpus = 0 if scenario == "no_gpu" else gpus
        self.scenario = scenario
        captured = self.doc.get("pids", {}).get("workload")
        self._pid_remap = {captured: workload_pid} if captured is not None and workload_pid is not None else {}
        self._captured_pid = captured
        self._gpu_pids = list(gpu_pids or [])
        self.tick = 0
        self.initialized = False
        self.calls: Counter[str] = Counter()
        self.gaps: set[str] = set()
        self._lost: set[int] = set()
        self._unsupported: set[tuple[str, int | None]] = set()
        self._overrides: dict[tuple[str, int], dict] = {}
        self._field_overrides: dict[tuple[int, int], list] = {}
        self._buffers: dict[tuple[int, str], list] = {}
        self._ingested: dict[tuple[int, str], int] = {}
        self._gpm: dict[int, tuple[int, int]] = {}
        self._gpm_next = 0x1000
        for name in _EXPORTED:
            setattr(self, name, getattr(pynvml, name))
        if c_api:  # an instance attribute, so that c_api=False leaves the binding without it
            self._nvmlGetFunctionPointer = self._function_pointer
        self._c_functions: dict[str, Any] = {}
        for name in dir(pynvml):
            if name.startswith("NVMLError_"):
                setattr(self, name, getattr(pynvml, name))

    # -- test controls ----------------------------------------------------------------------
    @property
    def workloads(self) -> list[str]:
        return list(dict.fromkeys(t["workload"] for t in self.ticks))

    @property
    def workload(self) -> str:
        return self.ticks[self.tick]["workload"]

    def advance(self, n: int = 1) -> None:
        if self.tick + n >= len(self.ticks):
            raise IndexError(f"the capture has {len(self.ticks)} ticks")
        self.tick += n

    def goto(self, workload: str, offset: int = 0) -> None:
        """Jump to the ``offset``-th tick of ``workload`` (forward only: the driver buffers fill up)."""
        first = next(i for i, t in enumerate(self.ticks) if t["workload"] == workload)
        if first + offset < self.tick:
            raise ValueError("goto only moves forward")
        self.tick = first + offset

    def not_supported(self, key: str, gpu: int | None = None) -> None:
        """Every call that reads ``key`` (a capture key, e.g. "power_usage", "gpm") raises NotSupported."""
        self._unsupported.add((key, gpu))

    def lose_gpu(self, gpu: int) -> None:
        self._lost.add(gpu)

    def set(self, key: str, value: Any = None, *, err: str | None = None, gpu: int = 0) -> None:
        """Override one capture key on one GPU until ``clear``: a value, or an error class name."""
        self._overrides[(key, gpu)] = {"err": err} if err else {"v": value}

    def clear(self, key: str, gpu: int = 0) -> None:
        self._overrides.pop((key, gpu), None)

    def set_field(self, fid: int, value: int | float, *, ts_us: int, vtype: int = 3, ret: int = 0,
                  gpu: int = 0) -> None:
        """Override one field value (as nvmlDeviceGetFieldValues returns it)."""
        self._field_overrides[(fid, gpu)] = [fid, ret, ts_us, vtype, value, 0]

    def raw(self, key: str, gpu: int = 0, tick: int | None = None) -> dict | None:
        """The capture's result for ``key`` at ``tick`` (default: now), overrides applied."""
        return self._raw(gpu, key, self.tick if tick is None else tick)

    # -- plumbing ---------------------------------------------------------------------------
    def _enter(self, fn: str, handle: _Handle | None = None) -> int:
        self.calls[fn] += 1
        if not self.initialized:
            raise pynvml.NVMLError_Uninitialized()
        if handle is None:
            return -1
        if handle.index in self._lost:
            raise pynvml.NVMLError_GpuIsLost()
        return handle.index

    def _raw(self, gpu: int, key: str, tick: int) -> dict | None:
        if (key, gpu) in self._overrides:
            return self._overrides[(key, gpu)]
        if (key, gpu) in self._unsupported or (key, None) in self._unsupported:
            return {"err": "NVMLError_NotSupported"}
        if gpu > 0 and key in ("compute_procs", "proc_util") and gpu >= len(self._gpu_pids):
            return {"v": []}  # copies of the captured GPU run nothing of ours
        r = self.ticks[tick]["calls"].get(key, self.static.get(key))
        return r

    def _value(self, gpu: int, key: str) -> Any:
        r = self._raw(gpu, key, self.tick)
        if r is None:
            self.gaps.add(key)
            raise pynvml.NVMLError_NoData()
        if "err" in r:
            _raise(r["err"])
        v = r["v"]
        if key == "uuid" and gpu > 0:
            v = f"{v}-copy{gpu}"
        return v

    def _pid(self, pid: int, gpu: int = 0) -> int:
        if gpu < len(self._gpu_pids) and pid == self._captured_pid:
            return self._gpu_pids[gpu]
        return self._pid_remap.get(pid, pid)

    def _buffered(self, gpu: int, key: str, entries_of) -> list:
        """Driver buffer for ``key``: every entry recorded up to now, oldest dropped past the depth."""
        r = self._raw(gpu, key, self.tick)
        if r is None:
            self.gaps.add(key)
            raise pynvml.NVMLError_NoData()
        if "err" in r and r["err"] != "NVMLError_NotFound":
            _raise(r["err"])
        buf = self._buffers.setdefault((gpu, key), [])
        start = self._ingested.get((gpu, key), -1) + 1
        for k in range(start, self.tick + 1):
            rk = self._raw(gpu, key, k)
            if rk is not None and "v" in rk:
                buf.extend(entries_of(rk["v"]))
        self._ingested[(gpu, key)] = self.tick
        del buf[:-BUFFER_DEPTH]
        return buf

    # -- init and devices ---------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] += 1
        if self.scenario in SCENARIOS:
            raise pynvml.NVMLError(SCENARIOS[self.scenario])
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self.initialized = False

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return self.n_gpus

    def nvmlDeviceGetHandleByIndex(self, index: int) -> _Handle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < self.n_gpus:
            raise pynvml.NVMLError_InvalidArgument()
        if index in self._lost:
            raise pynvml.NVMLError_GpuIsLost()
        return _Handle(index)

    def nvmlDeviceGetName(self, h: _Handle) -> str:
        return self._value(self._enter("nvmlDeviceGetName", h), "name")

    def nvmlDeviceGetUUID(self, h: _Handle) -> str:
        return self._value(self._enter("nvmlDeviceGetUUID", h), "uuid")

    # -- plain getters --------------------------------------------------------------------------
    def nvmlDeviceGetMemoryInfo(self, h: _Handle, version: int | None = None) -> Any:
        """v1 from the capture's "memory"; v2 (``version=nvmlMemory_v2``) from "memory_v2" when the
        capture recorded it, else derived from v1 only where "memory" holds "reserved" (v2 used =
        v1 used - reserved; free is the same in both). Neither: NoData, listed in ``gaps``."""
        g = self._enter("nvmlDeviceGetMemoryInfo", h)
        if not version:
            v = self._value(g, "memory")
            return pynvml.c_nvmlMemory_t(total=v["total"], free=v["free"], used=v["used"])
        if version != pynvml.nvmlMemory_v2:
            raise pynvml.NVMLError_ArgumentVersionMismatch()
        if self._raw(g, "memory_v2", self.tick) is not None:
            v2 = self._value(g, "memory_v2")
        else:
            v = self._value(g, "memory")
            if "reserved" not in v:
                self.gaps.add("memory_v2")
                raise pynvml.NVMLError_NoData()
            v2 = {"total": v["total"], "reserved": v["reserved"], "free": v["free"], "used": v["used"] - v["reserved"]}
        return pynvml.c_nvmlMemory_v2_t(version=version, total=v2["total"], reserved=v2["reserved"],
                                        free=v2["free"], used=v2["used"])

    def nvmlDeviceGetTemperatureV(self, h: _Handle, sensor: int) -> int:
        return self._value(self._enter("nvmlDeviceGetTemperatureV", h), "temperature")

    def nvmlDeviceGetTemperature(self, h: _Handle, sensor: int) -> int:
        g = self._enter("nvmlDeviceGetTemperature", h)
        return self._value(g, "temperature_v1" if self._raw(g, "temperature_v1", self.tick) else "temperature")

    def nvmlDeviceGetPowerUsage(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetPowerUsage", h), "power_usage")

    def nvmlDeviceGetEnforcedPowerLimit(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetEnforcedPowerLimit", h), "power_limit")

    def nvmlDeviceGetClockInfo(self, h: _Handle, kind: int) -> int:
        key = "clock_sm" if kind == pynvml.NVML_CLOCK_SM else "clock_mem"
        return self._value(self._enter("nvmlDeviceGetClockInfo", h), key)

    def nvmlDeviceGetMaxClockInfo(self, h: _Handle, kind: int) -> int:
        key = "max_clock_sm" if kind == pynvml.NVML_CLOCK_SM else "max_clock_mem"
        return self._value(self._enter("nvmlDeviceGetMaxClockInfo", h), key)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetCurrentClocksEventReasons", h), "clock_reasons")

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetCurrPcieLinkGeneration", h), "link_gen")

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetCurrPcieLinkWidth", h), "link_width")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetMaxPcieLinkGeneration", h), "max_link_gen")

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetMaxPcieLinkWidth", h), "max_link_width")

    def nvmlDeviceGetPcieReplayCounter(self, h: _Handle) -> int:
        return self._value(self._enter("nvmlDeviceGetPcieReplayCounter", h), "replay")

    def nvmlDeviceGetComputeRunningProcesses(self, h: _Handle) -> list:
        g = self._enter("nvmlDeviceGetComputeRunningProcesses", h)
        return [SimpleNamespace(pid=self._pid(pid, g), usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF,
                                computeInstanceId=0xFFFFFFFF) for pid, mem in self._value(g, "compute_procs")]

    def nvmlDeviceGetNumaNodeId(self, h: _Handle) -> int:
        """The capture's "numa_node" where set, else NotSupported, as the H200 answered
        (bench/results/2026-12-02-h200/diagnose_h200_decode.md): only a GPU that is a NUMA node has one."""
        g = self._enter("nvmlDeviceGetNumaNodeId", h)
        if self._raw(g, "numa_node", self.tick) is None:
            raise pynvml.NVMLError_NotSupported()
        return self._value(g, "numa_node")

    def nvmlDeviceGetFieldValues(self, h: _Handle, ids: list) -> Any:
        g = self._enter("nvmlDeviceGetFieldValues", h)
        key = next((k for k, members in FIELD_KEYS.items() if ids and ids[0] in members), "fields_other")
        try:
            recorded = {e[0]: e for e in self._value(g, key)}
        except pynvml.NVMLError_NoData:
            if not any((fid, g) in self._field_overrides for fid in ids):
                raise
            recorded = {}
        arr = (pynvml.c_nvmlFieldValue_t * len(ids))()
        for i, fid in enumerate(ids):
            e = self._field_overrides.get((fid, g)) or recorded.get(fid) or [fid, pynvml.NVML_ERROR_NO_DATA, 0, 3, 0, 0]
            arr[i].fieldId, arr[i].nvmlReturn, arr[i].timestamp, arr[i].valueType = fid, e[1], e[2], e[3]
            arr[i].latencyUsec = e[5] if len(e) > 5 else 0
            setattr(arr[i].value, UNION[e[3]], e[4])
        return arr

    # -- buffered history ------------------------------------------------------------------
    def nvmlDeviceGetSamples(self, h: _Handle, kind: int, last_seen: int) -> tuple[int, list]:
        g = self._enter("nvmlDeviceGetSamples", h)
        key = "samples_gpu" if kind == pynvml.NVML_GPU_UTILIZATION_SAMPLES else "samples_mem"
        vtypes: list[int] = []

        def entries(v: dict) -> list:
            vtypes.append(v["type"])
            return [(ts, val, v["type"]) for ts, val in v["s"]]

        buf = self._buffered(g, key, entries)
        seen, unique = set(), []
        for e in sorted(buf):
            if e[0] not in seen:  # the capture's first read returns older samples again
                seen.add(e[0])
                unique.append(e)
        new = [e for e in unique if e[0] > last_seen]
        if not new:
            raise pynvml.NVMLError_NotFound()
        out = []
        for ts, val, vtype in new:
            s = pynvml.c_nvmlSample_t()
            s.timeStamp = ts
            setattr(s.sampleValue, UNION[vtype], val)
            out.append(s)
        return new[-1][2], out

    def nvmlDeviceGetUtilizationRates(self, h: _Handle) -> Any:
        """Not in the capture: the newest sample of each buffer, i.e. the driver's latest 200 ms
        period (nvml.h allows a period of 1/6 to 1 s; the H200's is not measured yet). A test can
        make it fail through the key "utilization_rates" (``not_supported``, ``set(err=...)``), or
        give a synthetic period (``set("utilization_rates", {"gpu": 50})``)."""
        g = self._enter("nvmlDeviceGetUtilizationRates", h)
        r = self._raw(g, "utilization_rates", self.tick)
        if r is not None and "err" in r:
            _raise(r["err"])
        out = pynvml.c_nvmlUtilization_t()
        for key, attr in (("samples_gpu", "gpu"), ("samples_mem", "memory")):
            buf = self._buffered(g, key, lambda v: [(ts, val, v["type"]) for ts, val in v["s"]])
            setattr(out, attr, int(max(buf)[1]) if buf else 0)
        if r is not None and isinstance(r.get("v"), dict):
            for attr, value in r["v"].items():
                setattr(out, attr, value)
        return out

    def nvmlDeviceGetProcessUtilization(self, h: _Handle, last_seen: int) -> list:
        g = self._enter("nvmlDeviceGetProcessUtilization", h)
        buf = self._buffered(g, "proc_util", lambda v: [tuple(e) for e in v])
        new = sorted({e for e in buf if e[1] > last_seen}, key=lambda e: e[1])
        if not new:
            raise pynvml.NVMLError_NotFound()
        out = []
        for pid, ts, sm, mem, enc, dec in new:
            out.append(pynvml.c_nvmlProcessUtilizationSample_t(self._pid(pid, g), ts, sm, mem, enc, dec))
        return out

    # -- the C entry points of the buffered reads (collectors/nvml_buffers.py calls them) ---------
    def _function_pointer(self, name: str) -> Any:
        """Like pynvml's ``_nvmlGetFunctionPointer``: a C-callable with nvml.h's contract for the
        two buffered reads (count in, count out; no buffer: the size; too small a buffer:
        INSUFFICIENT_SIZE with the size needed), answering from the same driver buffers as the
        Python-level functions above. Each call counts once in ``calls``."""
        if name not in self._c_functions:
            if name == "nvmlDeviceGetSamples":
                self._c_functions[name] = _SAMPLES_FN(self._c_samples)
            elif name == "nvmlDeviceGetProcessUtilization":
                self._c_functions[name] = _PROC_UTIL_FN(self._c_proc_util)
            else:
                raise pynvml.NVMLError_FunctionNotFound()
        return self._c_functions[name]

    def _c_samples(self, h: _Handle, kind: int, last_seen: int, vtype_p: Any, count_p: Any, buf: int | None) -> int:
        try:
            vtype, out = self.nvmlDeviceGetSamples(h, kind, last_seen)
        except pynvml.NVMLError as e:
            return int(e.value)
        vtype_p[0] = vtype
        return _fill(out, count_p, buf, pynvml.c_nvmlSample_t)

    def _c_proc_util(self, h: _Handle, buf: int | None, count_p: Any, last_seen: int) -> int:
        try:
            out = self.nvmlDeviceGetProcessUtilization(h, last_seen)
        except pynvml.NVMLError as e:
            return int(e.value)
        return _fill(out, count_p, buf, pynvml.c_nvmlProcessUtilizationSample_t)

    # -- GPM -------------------------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, h: _Handle) -> Any:
        g = self._enter("nvmlGpmQueryDeviceSupport", h)
        return SimpleNamespace(version=1, isSupportedDevice=int(self._value(g, "gpm_support")))

    def nvmlGpmSampleAlloc(self) -> Any:
        self._enter("nvmlGpmSampleAlloc")
        self._gpm_next += 0x10
        self._gpm[self._gpm_next] = (-1, -1)
        return ctypes.cast(ctypes.c_void_p(self._gpm_next), pynvml.c_nvmlGpmSample_t)

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._enter("nvmlGpmSampleFree")
        self._gpm.pop(_addr(sample), None)

    def nvmlGpmSampleGet(self, h: _Handle, sample: Any) -> Any:
        g = self._enter("nvmlGpmSampleGet", h)
        r = self._raw(g, "gpm", self.tick)
        if r is not None and "err" in r:
            _raise(r["err"])
        if _addr(sample) not in self._gpm:
            raise pynvml.NVMLError_InvalidArgument()
        self._gpm[_addr(sample)] = (g, self.tick)
        return sample

    def nvmlGpmMetricsGet(self, mg: Any) -> Any:
        self._enter("nvmlGpmMetricsGet")
        (g1, t1), (g2, t2) = self._gpm.get(_addr(mg.sample1), (-1, -1)), self._gpm.get(_addr(mg.sample2), (-1, -1))
        if g1 < 0 or g1 != g2 or t1 > t2:
            raise pynvml.NVMLError_InvalidArgument()
        if g2 in self._lost:
            raise pynvml.NVMLError_GpuIsLost()
        r = self._raw(g2, "gpm", t2)
        if r is None or "err" in r:
            self.gaps.add("gpm")
            _raise(r["err"] if r else "NVMLError_NoData")
        recorded = {m[0]: m for m in r["v"]["m"]}
        for k in range(mg.numMetrics):
            m = recorded.get(mg.metrics[k].metricId)
            mg.metrics[k].nvmlReturn = m[1] if m else pynvml.NVML_ERROR_NO_DATA
            mg.metrics[k].value = m[2] if m and m[2] is not None else 0.0
        return mg


_SAMPLES_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_uint, ctypes.c_ulonglong,
                               ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint), ctypes.c_void_p)
"""nvmlDeviceGetSamples(device, type, lastSeenTimeStamp, *sampleValType, *sampleCount, *samples); the
device is the fake's handle object."""
_PROC_UTIL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint),
                                 ctypes.c_ulonglong)
"""nvmlDeviceGetProcessUtilization(device, *utilization, *processSamplesCount, lastSeenTimeStamp)."""


def _fill(out: list, count_p: Any, buf: int | None, struct: Any) -> int:
    """nvml.h's buffer contract: the size when there is no buffer, INSUFFICIENT_SIZE (and the size)
    when the caller's ``*count`` entries cannot hold them, else the entries and their number."""
    if not buf:
        count_p[0] = len(out)
        return pynvml.NVML_SUCCESS
    if len(out) > count_p[0]:
        count_p[0] = len(out)
        return pynvml.NVML_ERROR_INSUFFICIENT_SIZE
    arr = ctypes.cast(buf, ctypes.POINTER(struct))
    for k, entry in enumerate(out):
        arr[k] = entry
    count_p[0] = len(out)
    return pynvml.NVML_SUCCESS


def _addr(ptr: Any) -> int:
    return ctypes.cast(ptr, ctypes.c_void_p).value or 0


def _raise(name: str) -> None:
    cls = getattr(pynvml, name, None)
    if isinstance(cls, type) and issubclass(cls, pynvml.NVMLError):
        raise cls()
    if name == "NVMLLibraryMismatchError":
        raise pynvml.NVMLLibraryMismatchError("recorded: NVMLLibraryMismatchError")
    raise pynvml.NVMLError_FunctionNotFound()  # e.g. "AttributeError": the call is missing there
