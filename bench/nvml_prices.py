"""The CPU and wall time of NVML calls gpuwatch makes or could make instead, on a busy GPU.

bench/collector_cost.py prices the calls the collectors make today. Choosing a cheaper source for a
signal needs the price of the alternatives too, measured on the same driver in the same minute:
e.g. the GPU's busy share from ``nvmlDeviceGetUtilizationRates`` (one value, the driver's last
period) against ``nvmlDeviceGetSamples`` (every 200 ms sample since a cursor, what the diagnosis's
tick-aligned evidence reads), or the same samples read into a small buffer.

Each candidate is called ``--calls`` times, the candidates taking turns (so a driver state that
drifts hits all alike), ``--gap`` seconds apart, while the steady job keeps the GPU busy;
``time.thread_time()`` (CPU: user and system, the kernel driver's share included) and
``time.perf_counter()`` (wall) are read around each call. A candidate the driver refuses is listed
with its error.

    python -m bench.nvml_prices --device cuda --calls 40 --out DIR
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from collections import defaultdict
from typing import Any, Callable

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe


def candidates(nv: Any, h: Any) -> dict[str, Callable[[], Any]]:
    """Name -> a zero-argument call. Cursored reads keep their cursor between calls, as a collector
    does (a cursor of 0 asks for the driver's whole history: priced separately)."""
    cursors: dict[str, int] = defaultdict(int)
    fn_samples = nv._nvmlGetFunctionPointer("nvmlDeviceGetSamples")

    def samples(kind: int, capacity: int, key: str, keep_cursor: bool = True) -> int:
        buf = (nv.c_nvmlSample_t * capacity)()
        vtype, count = ctypes.c_uint(0), ctypes.c_uint(capacity)
        ret = fn_samples(h, ctypes.c_uint(kind), ctypes.c_ulonglong(cursors[key] if keep_cursor else 0),
                         ctypes.byref(vtype), ctypes.byref(count), buf)
        if ret == nv.NVML_SUCCESS and count.value and keep_cursor:
            cursors[key] = max(int(buf[k].timeStamp) for k in range(count.value))
        elif ret not in (nv.NVML_SUCCESS, nv.NVML_ERROR_NOT_FOUND, nv.NVML_ERROR_INSUFFICIENT_SIZE):
            raise nv.NVMLError(ret)
        return count.value

    def gpm_sample() -> None:
        s = nv.nvmlGpmSampleAlloc()
        try:
            nv.nvmlGpmSampleGet(h, s)
        finally:
            nv.nvmlGpmSampleFree(s)

    gpm_state: dict[str, list[Any]] = {}

    def gpm_metrics(key: str, ids: tuple[int, ...]) -> Callable[[], None]:
        """A GPM sample into one of two kept buffers, then nvmlGpmMetricsGet of ``ids`` over the
        window since this candidate's previous sample (as collectors/gpm.py reads them). The price
        of nvmlGpmSampleGet alone is its own row; this row's less that is the metrics' price."""
        def call() -> None:
            st = gpm_state.setdefault(key, [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc(), None])
            cur = 0 if st[2] is None else 1 - st[2]
            nv.nvmlGpmSampleGet(h, st[cur])
            prev, st[2] = st[2], cur
            if prev is None:
                return
            mg = nv.c_nvmlGpmMetricsGet_t()
            mg.version = nv.NVML_GPM_METRICS_GET_VERSION
            mg.numMetrics = len(ids)
            mg.sample1, mg.sample2 = st[prev], st[cur]
            for k, mid in enumerate(ids):
                mg.metrics[k].metricId = mid
            nv.nvmlGpmMetricsGet(mg)
        return call

    def gpm_sample_kept() -> None:
        st = gpm_state.setdefault("sample", [nv.nvmlGpmSampleAlloc()])
        nv.nvmlGpmSampleGet(h, st[0])

    out: dict[str, Callable[[], Any]] = {
        # GPM metric sets: gpuwatch's seven (collectors/gpm.py METRICS), then fewer, to see whether
        # nvmlGpmMetricsGet's price follows the number of metrics or the call.
        "GPM sample + metrics: 7 (gpuwatch's)": gpm_metrics("m7", (1, 2, 3, 5, 10, 20, 21)),
        "GPM sample + metrics: 4 (SM active, occupancy, tensor, DRAM)": gpm_metrics("m4", (2, 3, 5, 10)),
        "GPM sample + metrics: 2 (SM active, tensor)": gpm_metrics("m2", (2, 5)),
        "GPM sample + metrics: 1 (SM active)": gpm_metrics("m1", (2,)),
        "GPM sample + metrics: 2 (PCIe TX, RX)": gpm_metrics("pcie", (20, 21)),
        "GPM sample + metrics: 1 (graphics engine)": gpm_metrics("gr", (1,)),
        "nvmlGpmSampleGet (kept buffer)": gpm_sample_kept,
        "nvmlDeviceGetUtilizationRates": lambda: nv.nvmlDeviceGetUtilizationRates(h),
        "nvmlDeviceGetSamples GPU, cursor kept, 128 entries": lambda: samples(nv.NVML_GPU_UTILIZATION_SAMPLES, 128, "g"),
        "nvmlDeviceGetSamples GPU, cursor kept, 16 entries": lambda: samples(nv.NVML_GPU_UTILIZATION_SAMPLES, 16, "g16"),
        "nvmlDeviceGetSamples GPU, cursor 0, 128 entries": lambda: samples(nv.NVML_GPU_UTILIZATION_SAMPLES, 128, "g0",
                                                                            keep_cursor=False),
        "nvmlDeviceGetSamples memory, cursor kept": lambda: samples(nv.NVML_MEMORY_UTILIZATION_SAMPLES, 128, "m"),
        "nvmlGpmSampleGet (with alloc/free)": gpm_sample,
        "nvmlDeviceGetComputeRunningProcesses": lambda: nv.nvmlDeviceGetComputeRunningProcesses(h),
        "nvmlDeviceGetPcieReplayCounter": lambda: nv.nvmlDeviceGetPcieReplayCounter(h),
        "nvmlDeviceGetFieldValues (PCIe RX, TX bytes)": lambda: nv.nvmlDeviceGetFieldValues(
            h, [nv.NVML_FI_DEV_PCIE_COUNT_RX_BYTES, nv.NVML_FI_DEV_PCIE_COUNT_TX_BYTES]),
        "nvmlDeviceGetMemoryInfo": lambda: nv.nvmlDeviceGetMemoryInfo(h),
        "nvmlDeviceGetPowerUsage": lambda: nv.nvmlDeviceGetPowerUsage(h),
    }
    if hasattr(nv, "nvmlDeviceGetProcessesUtilizationInfo"):
        out["nvmlDeviceGetProcessesUtilizationInfo"] = lambda: nv.nvmlDeviceGetProcessesUtilizationInfo(h, 0)
    if hasattr(nv, "nvmlDeviceGetProcessUtilization"):
        out["nvmlDeviceGetProcessUtilization (nvidia-ml-py, two calls)"] = (
            lambda: nv.nvmlDeviceGetProcessUtilization(h, cursors.setdefault("p", int(time.time() * 1e6) - 2_000_000)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--calls", type=int, default=40)
    p.add_argument("--gap", type=float, default=0.05, help="seconds between two calls")
    p.add_argument("--out", required=True)
    ns = p.parse_args(argv)

    import pynvml as nv  # noqa: PLC0415 - only on a machine with the driver

    reader, job = observe.launch_job(ns)
    cpu: dict[str, list[float]] = defaultdict(list)
    wall: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, str] = {}
    try:
        observe.wait_warm(reader, job, observe.warmup_s(ns))
        nv.nvmlInit()
        h = nv.nvmlDeviceGetHandleByIndex(0)
        calls = candidates(nv, h)
        for _ in range(ns.calls + 1):
            for name, call in calls.items():
                if name in errors:
                    continue
                c0, w0 = time.thread_time(), time.perf_counter()
                try:
                    call()
                except Exception as e:  # noqa: BLE001 - a refused candidate is a row, not the end
                    errors[name] = f"{type(e).__name__}: {e}"[:120]
                    continue
                c1, w1 = time.thread_time(), time.perf_counter()
                cpu[name].append((c1 - c0) * 1e3)
                wall[name].append((w1 - w0) * 1e3)
                time.sleep(ns.gap)
        nv.nvmlShutdown()
    finally:
        observe.stop_job(job)

    rows = []
    for name in cpu:
        c, w = cpu[name][1:], wall[name][1:]  # the first call of each warms the driver's path
        rows.append((name, len(c), f"{statistics.median(c):.3f}", f"{max(c):.3f}", f"{statistics.median(w):.3f}"))
    rows.sort(key=lambda r: -float(r[2]))
    md = observe.table(("NVML call", "calls", "median ms CPU", "max ms CPU", "median ms wall"), rows)
    if errors:
        md += "\n\nRefused: " + "; ".join(f"{k}: {v}" for k, v in errors.items())
    result = {"schema": 1, "bench": "nvml_prices", "device": ns.device, "calls": ns.calls, "gap_s": ns.gap,
              "machine": observe.machine(), "cpu_ms": cpu, "wall_ms": wall, "errors": errors}
    observe.write_results(ns.out, "nvml_prices", result, "NVML calls priced on a busy GPU", md + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
