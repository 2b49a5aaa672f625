"""NVML's two buffered histories read in one driver call each, into buffers kept between ticks.

``nvmlDeviceGetSamples`` (the driver's utilization samples) and
``nvmlDeviceGetProcessUtilization`` (per-process SM use) take a caller's buffer and a count. The
nvml.h recipe, which nvidia-ml-py follows on every call, is to call once with no buffer to learn
the size, allocate, and call again: two trips into the driver per read. On the H200 each of these
reads cost ~2.3 ms of CPU (bench/results/2026-12-03-h200/run14/collector_cost), the largest NVML
cost gpuwatch has. Here a buffer sized by the driver's first answer is kept, and each later read is
one call with that buffer ("invoke the function again with the allocated buffer ... and the count
set to the number of entries the buffer is sized for", nvml.h); a buffer that has become too small
is answered ``NVML_ERROR_INSUFFICIENT_SIZE`` with the size needed, and is grown and read again.

Both functions come from the binding's own function-pointer lookup (``_nvmlGetFunctionPointer``,
the way nvidia-ml-py calls every NVML function); a binding without it (an older nvidia-ml-py, a
test double) is read through its public two-call functions instead, with the same results.
"""

from __future__ import annotations

import ctypes
from typing import Any

from gpuwatch.collectors.nvml_session import union_value

FIRST_CAPACITY = 128
"""Entries of a new buffer: the driver keeps ~100 utilization samples (20 s at the H200's 200 ms)
and a sample per process per period; a larger need is answered INSUFFICIENT_SIZE and met."""

Sample = tuple[int, float]
"""(driver timestamp in us, value)."""
ProcSample = tuple[int, int, float]
"""(host PID, driver timestamp in us, SM utilization %)."""


class NvmlBuffers:
    """One-call reads of the two buffered NVML histories; raises the binding's NVMLError classes."""

    def __init__(self, nvml: Any) -> None:
        self.nv = nvml
        self._bufs: dict[str, Any] = {}
        self.direct = hasattr(nvml, "_nvmlGetFunctionPointer") and hasattr(nvml, "c_nvmlSample_t")
        """True: one driver call a read; False: the binding's two-call functions."""

    def samples(self, handle: Any, kind: int, cursor: int) -> tuple[int, list[Sample]]:
        """``(value type, [(timestamp, value)])`` of the samples newer than ``cursor``.
        No newer sample raises NVMLError_NotFound, as nvmlDeviceGetSamples does."""
        nv = self.nv
        if not self.direct:
            vtype, raw = nv.nvmlDeviceGetSamples(handle, kind, cursor)
            return vtype, [(int(s.timeStamp), union_value(s.sampleValue, vtype)) for s in raw]
        fn = nv._nvmlGetFunctionPointer("nvmlDeviceGetSamples")
        vtype = ctypes.c_uint(0)
        key = f"samples{kind}"
        while True:
            buf = self._buffer(key, nv.c_nvmlSample_t)
            count = ctypes.c_uint(len(buf))
            ret = fn(handle, ctypes.c_uint(kind), ctypes.c_ulonglong(cursor), ctypes.byref(vtype),
                     ctypes.byref(count), buf)
            if ret == nv.NVML_ERROR_INSUFFICIENT_SIZE and count.value > len(buf):
                self._bufs[key] = (nv.c_nvmlSample_t * count.value)()
                continue
            if ret != nv.NVML_SUCCESS:
                raise nv.NVMLError(ret)
            v = vtype.value
            return v, [(int(buf[k].timeStamp), union_value(buf[k].sampleValue, v)) for k in range(count.value)]

    def process_util(self, handle: Any, cursor: int) -> list[ProcSample]:
        """``[(pid, timestamp, SM %)]`` of the per-process samples newer than ``cursor``.
        None newer raises NVMLError_NotFound (the driver's own answer on most drivers; a driver that
        answers success with no entries is answered the same way here)."""
        nv = self.nv
        if not self.direct:
            raw = nv.nvmlDeviceGetProcessUtilization(handle, cursor)
            return [(int(s.pid), int(s.timeStamp), float(s.smUtil)) for s in raw]
        fn = nv._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
        key = "procs"
        while True:
            buf = self._buffer(key, nv.c_nvmlProcessUtilizationSample_t)
            count = ctypes.c_uint(len(buf))
            ret = fn(handle, buf, ctypes.byref(count), ctypes.c_ulonglong(cursor))
            if ret == nv.NVML_ERROR_INSUFFICIENT_SIZE and count.value > len(buf):
                self._bufs[key] = (nv.c_nvmlProcessUtilizationSample_t * count.value)()
                continue
            if ret != nv.NVML_SUCCESS:
                raise nv.NVMLError(ret)
            if count.value == 0:
                raise nv.NVMLError(nv.NVML_ERROR_NOT_FOUND)
            return [(int(buf[k].pid), int(buf[k].timeStamp), float(buf[k].smUtil)) for k in range(count.value)]

    def _buffer(self, key: str, struct: Any) -> Any:
        buf = self._bufs.get(key)
        if buf is None:
            buf = self._bufs[key] = (struct * FIRST_CAPACITY)()
        return buf
