#!/usr/bin/env python3
"""Capture the raw NVML answers gpuwatch's GPU and PCIe collectors get, on a real GPU.

Run it on the GPU machine (needs torch with CUDA, nvidia-ml-py; about 50 s, under 60 s):

    python bench/capture_nvml.py --out /tmp/out/h200_capture.json

A child process runs seven ~5 s workloads one after another on one GPU (idle; bf16 8192^2
matmuls; pinned 256 MiB H2D non_blocking; pageable H2D; 200 tiny kernels per step; a
``big.t().contiguous()`` layout copy; 45 ms sleep + 3 matmuls). Meanwhile this process makes,
every ``--period`` seconds, exactly the NVML calls the collectors make (same cursors, same GPM
ping-pong) and records each call's raw result, or the NVML error's class name, and its cost in
microseconds. ``nvidia-smi --query-gpu=...`` runs once per workload for comparison. The output is
what ``tests/fake_nvml.py`` replays: copy it to ``tests/data/nvml/``.

Format (schema ``gpuwatch-nvml-capture/1``): ``source``, ``versions``, ``pids`` {capture,
workload}, ``gpu`` (the NVML index captured), ``static`` {key: result} read once, ``workloads``
[{name, what, t_start, t_end, nvidia_smi}], ``ticks`` [{workload, t_unix, t_mono, calls {key:
result}}]. A result is ``{"v": value, "us": cost}`` or ``{"err": "NVMLError_NotFound", "us": cost}``.
Ticks run continuously; between two workloads they are labelled ``"switch"``.

Standalone on purpose: no gpuwatch import, so it runs from a bare checkout on the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

WORKLOADS = (
    ("idle", "CUDA context open, the process sleeps"),
    ("matmul_bf16", "bf16 8192x8192 matmuls (healthy, compute-bound)"),
    ("h2d_pinned", "256 MiB pinned host tensor copied to device, non_blocking"),
    ("h2d_pageable", "256 MiB pageable host tensor copied to device"),
    ("launch_bound", "200 tiny elementwise kernels per step on 64 floats"),
    ("transpose_copy", "big.t().contiguous() on a 16384^2 fp32 tensor (layout copy)"),
    ("starved", "45 ms sleep then 3 bf16 8192^2 matmuls (starved for input)"),
)
THROTTLE_FIELDS = (74, 76, 269, 270, 271)  # NVML_FI_DEV_CLOCKS_EVENT_REASON_* (ns counters)
PCIE_FIELDS = (198, 197)  # NVML_FI_DEV_PCIE_COUNT_RX_BYTES, _TX_BYTES
GPM_METRICS = (1, 2, 3, 5, 10, 20, 21)  # GRAPHICS, SM_UTIL, SM_OCC, ANY_TENSOR, DRAM_BW, PCIE_TX, PCIE_RX
SMI_QUERY = "utilization.gpu,memory.used,temperature.gpu,power.draw,clocks.sm"
DEADLINE_S = 58.0  # the whole run stays under a minute
UNION = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


# -- the child: workloads ---------------------------------------------------------------------
SIZES = {"cuda": (8192, 16384, 256 * 2**20), "cpu": (256, 512, 2**20)}
"""(matmul n, transpose n, copy bytes). "cpu" only dry-runs the orchestration on a machine without GPU."""


def child(gpu: int, seconds: float, device: str) -> None:
    import torch

    cuda = device == "cuda"
    dev = torch.device("cuda", gpu) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    n = SIZES[device][0]
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    (a @ b).sum().item()  # warm up cuBLAS before any workload is timed
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    print(f"READY torch={torch.__version__} cuda={torch.version.cuda}", flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name == "quit":
            return
        state = _prepare(torch, dev, name, SIZES[device])
        print(f"START {name}", flush=True)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            _step(name, state, a, b)
            sync()
        state.clear()
        if cuda:
            torch.cuda.empty_cache()
        print(f"END {name}", flush=True)


def _prepare(torch, dev, name: str, sizes: tuple) -> dict:
    n = sizes[2]
    if name == "h2d_pinned":
        host = torch.empty(n, dtype=torch.uint8)
        return {"host": host.pin_memory() if dev.type == "cuda" else host, "dev": torch.empty(n, dtype=torch.uint8, device=dev)}
    if name == "h2d_pageable":
        return {"host": torch.empty(n, dtype=torch.uint8), "dev": torch.empty(n, dtype=torch.uint8, device=dev)}
    if name == "launch_bound":
        return {"x": torch.zeros(64, device=dev)}
    if name == "transpose_copy":
        return {"big": torch.randn(sizes[1], sizes[1], device=dev)}
    return {}


def _step(name: str, s: dict, a, b) -> None:
    if name == "idle":
        time.sleep(0.05)
    elif name == "matmul_bf16":
        for _ in range(10):
            a @ b
    elif name == "h2d_pinned":
        s["dev"].copy_(s["host"], non_blocking=True)
    elif name == "h2d_pageable":
        s["dev"].copy_(s["host"])
    elif name == "launch_bound":
        for _ in range(200):
            s["x"].add_(1.0)
    elif name == "transpose_copy":
        s["big"].t().contiguous()
    elif name == "starved":
        time.sleep(0.045)
        for _ in range(3):
            a @ b


# -- the parent: NVML calls, exactly as the collectors make them ------------------------------
class Recorder:
    def __init__(self, nv, gpu: int) -> None:
        self.nv = nv
        self.h = nv.nvmlDeviceGetHandleByIndex(gpu)
        self.cursors = {nv.NVML_GPU_UTILIZATION_SAMPLES: 0, nv.NVML_MEMORY_UTILIZATION_SAMPLES: 0}
        self.proc_cursor = 0
        self.gpm_bufs = None
        self.gpm_prev = None
        self.gpm_prev_t = 0.0

    def call(self, fn, *args, conv=lambda v: v) -> dict:
        t0 = time.perf_counter()
        try:
            value = fn(*args)
        except Exception as e:  # noqa: BLE001 - the error's name is the recorded result
            return {"err": type(e).__name__, "us": round((time.perf_counter() - t0) * 1e6, 1)}
        us = round((time.perf_counter() - t0) * 1e6, 1)
        return {"v": conv(value), "us": us}

    def static(self) -> dict:
        nv, h = self.nv, self.h
        return {
            "name": self.call(nv.nvmlDeviceGetName, h, conv=_text),
            "uuid": self.call(nv.nvmlDeviceGetUUID, h, conv=_text),
            "max_clock_sm": self.call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM),
            "max_clock_mem": self.call(nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM),
            "max_link_gen": self.call(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "max_link_width": self.call(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
            "gpm_support": self.call(nv.nvmlGpmQueryDeviceSupport, h, conv=lambda s: int(s.isSupportedDevice)),
        }

    def tick(self) -> dict:
        nv, h = self.nv, self.h
        c: dict = {}
        c["samples_gpu"] = self._samples(nv.NVML_GPU_UTILIZATION_SAMPLES)
        c["samples_mem"] = self._samples(nv.NVML_MEMORY_UTILIZATION_SAMPLES)
        c["memory"] = self.call(nv.nvmlDeviceGetMemoryInfo, h, conv=lambda m: {"total": m.total, "used": m.used, "free": m.free})
        temp_v = getattr(nv, "nvmlDeviceGetTemperatureV", None)  # absent from older nvidia-ml-py
        c["temperature"] = self.call(temp_v, h, nv.NVML_TEMPERATURE_GPU) if temp_v else {"err": "AttributeError", "us": 0.0}
        if c["temperature"].get("err") in ("NVMLError_FunctionNotFound", "AttributeError"):
            c["temperature_v1"] = self.call(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        c["power_usage"] = self.call(nv.nvmlDeviceGetPowerUsage, h)
        c["power_limit"] = self.call(nv.nvmlDeviceGetEnforcedPowerLimit, h)
        c["clock_sm"] = self.call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        c["clock_mem"] = self.call(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM)
        c["clock_reasons"] = self.call(nv.nvmlDeviceGetCurrentClocksEventReasons, h)
        c["fields_throttle"] = self.call(nv.nvmlDeviceGetFieldValues, h, list(THROTTLE_FIELDS), conv=_fields)
        c["fields_pcie"] = self.call(nv.nvmlDeviceGetFieldValues, h, list(PCIE_FIELDS), conv=_fields)
        c["compute_procs"] = self.call(nv.nvmlDeviceGetComputeRunningProcesses, h,
                                       conv=lambda ps: [[p.pid, p.usedGpuMemory] for p in ps])
        c["proc_util"] = self._proc_util()
        c["link_gen"] = self.call(nv.nvmlDeviceGetCurrPcieLinkGeneration, h)
        c["link_width"] = self.call(nv.nvmlDeviceGetCurrPcieLinkWidth, h)
        c["replay"] = self.call(nv.nvmlDeviceGetPcieReplayCounter, h)
        gpm = self._gpm()
        if gpm is not None:
            c["gpm"] = gpm
        return c

    def _samples(self, kind: int) -> dict:
        r = self.call(self.nv.nvmlDeviceGetSamples, self.h, kind, self.cursors[kind],
                      conv=lambda v: {"type": v[0], "s": [[s.timeStamp, getattr(s.sampleValue, UNION[v[0]])] for s in v[1]]})
        if "v" in r and r["v"]["s"]:
            self.cursors[kind] = max(self.cursors[kind], max(ts for ts, _ in r["v"]["s"]))
        return r

    def _proc_util(self) -> dict:
        r = self.call(self.nv.nvmlDeviceGetProcessUtilization, self.h, self.proc_cursor,
                      conv=lambda ss: [[s.pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil] for s in ss])
        if "v" in r and r["v"]:
            self.proc_cursor = max(self.proc_cursor, max(s[1] for s in r["v"]))
        return r

    def _gpm(self) -> dict | None:
        nv = self.nv
        if self.gpm_bufs is None:
            try:
                self.gpm_bufs = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
            except Exception as e:  # noqa: BLE001
                return {"err": type(e).__name__, "us": 0.0}
        cur = 0 if self.gpm_prev is None else 1 - self.gpm_prev
        now = time.monotonic()
        got = self.call(nv.nvmlGpmSampleGet, self.h, self.gpm_bufs[cur], conv=lambda _: None)
        if "err" in got:
            return got
        prev, prev_t = self.gpm_prev, self.gpm_prev_t
        self.gpm_prev, self.gpm_prev_t = cur, now
        if prev is None:
            return None  # first window
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = len(GPM_METRICS)
        mg.sample1, mg.sample2 = self.gpm_bufs[prev], self.gpm_bufs[cur]
        for k, mid in enumerate(GPM_METRICS):
            mg.metrics[k].metricId = mid
        r = self.call(nv.nvmlGpmMetricsGet, mg,
                      conv=lambda m: {"window_s": round(now - prev_t, 4),
                                      "m": [[m.metrics[k].metricId, m.metrics[k].nvmlReturn, m.metrics[k].value]
                                            for k in range(len(GPM_METRICS))]})
        r["us_sample_get"] = got["us"]
        return r


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _fields(values) -> list:
    return [[f.fieldId, f.nvmlReturn, f.timestamp, f.valueType, getattr(f.value, UNION.get(f.valueType, "ullVal")), f.latencyUsec]
            for f in values]


def _smi(gpu: int, out: dict) -> None:
    argv = ["nvidia-smi", "-i", str(gpu), f"--query-gpu={SMI_QUERY}", "--format=csv"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=15, check=False)
        out.update(argv=argv, rc=p.returncode, stdout=p.stdout, stderr=p.stderr[-500:], t_unix=time.time())
    except (OSError, subprocess.TimeoutExpired) as e:
        out.update(argv=argv, error=f"{type(e).__name__}: {e}")


def _versions(nv) -> dict:
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for key, fn in (("driver", "nvmlSystemGetDriverVersion"), ("nvml", "nvmlSystemGetNVMLVersion"),
                    ("cuda_driver", "nvmlSystemGetCudaDriverVersion")):
        try:
            out[key] = _text(getattr(nv, fn)())
        except Exception as e:  # noqa: BLE001
            out[key] = f"error: {type(e).__name__}"
    try:
        out["nvidia_ml_py"] = metadata.version("nvidia-ml-py")
    except metadata.PackageNotFoundError:
        out["nvidia_ml_py"] = "unknown"
    return out


def parent(args: argparse.Namespace) -> int:
    import pynvml as nv

    t_begin = time.monotonic()
    nv.nvmlInit()
    rec = Recorder(nv, args.gpu)
    doc: dict = {
        "schema": "gpuwatch-nvml-capture/1",
        "source": {"kind": "capture", "script": "bench/capture_nvml.py", "date": time.strftime("%Y-%m-%d"),
                   "hardware": "", "note": f"{args.seconds:g} s per workload, NVML read every {args.period:g} s"},
        "versions": _versions(nv),
        "gpu": args.gpu,
        "static": rec.static(),
        "workloads": [],
        "ticks": [],
    }
    doc["source"]["hardware"] = doc["static"]["name"].get("v", "unknown GPU")
    env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")  # CUDA index = NVML index
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", "--gpu", str(args.gpu),
                             "--seconds", str(args.seconds), "--device", args.device], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    doc["pids"] = {"capture": os.getpid(), "workload": proc.pid}
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x.strip()) for x in proc.stdout], daemon=True).start()
    try:
        ready = ""
        while not ready.startswith("READY"):
            ready = lines.get(timeout=40)  # torch import + CUDA init + warm-up
        doc["versions"]["child"] = ready
        phase = "switch"
        pending = list(WORKLOADS)
        current: dict | None = None
        smi_thread = None
        next_tick = time.monotonic()
        proc.stdin.write(pending[0][0] + "\n")
        proc.stdin.flush()
        while True:
            try:
                while True:
                    msg = lines.get_nowait()
                    if msg.startswith("START "):
                        phase = msg[6:]
                        current = {"name": phase, "what": dict(WORKLOADS)[phase], "t_start": time.time(), "nvidia_smi": {}}
                        doc["workloads"].append(current)
                        smi_thread = threading.Timer(args.seconds / 2, _smi, (args.gpu, current["nvidia_smi"]))
                        smi_thread.start()
                    elif msg.startswith("END ") and current is not None:
                        current["t_end"] = time.time()
                        phase = "switch"
                        pending.pop(0)
                        if pending and time.monotonic() - t_begin < DEADLINE_S - args.seconds - 1:
                            proc.stdin.write(pending[0][0] + "\n")
                            proc.stdin.flush()
                        else:
                            doc["source"]["truncated"] = [n for n, _ in pending]
                            pending = []
            except queue.Empty:
                pass
            if not pending and phase == "switch":
                break
            if proc.poll() is not None:
                doc["source"]["error"] = f"workload process exited with {proc.returncode}"
                break
            doc["ticks"].append({"workload": phase, "t_unix": round(time.time(), 6), "t_mono": round(time.monotonic(), 6),
                                 "calls": rec.tick()})
            next_tick += args.period
            time.sleep(max(0.0, next_tick - time.monotonic()))
        if smi_thread is not None:
            smi_thread.join(timeout=20)
    finally:
        if proc.poll() is None:
            try:
                proc.stdin.write("quit\n")
                proc.stdin.flush()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for buf in rec.gpm_bufs or ():
            nv.nvmlGpmSampleFree(buf)
        nv.nvmlShutdown()
    _write(doc, args.out)
    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {len(doc['ticks'])} ticks, {size / 1e6:.2f} MB, {time.monotonic() - t_begin:.1f} s")
    return 0 if size < 2e6 else 1


def _write(doc: dict, path: str) -> None:
    """Header indented; one tick per line, so a diff of two captures stays readable."""
    ticks = doc.pop("ticks")
    head = json.dumps(doc, indent=1)
    body = ",\n".join(json.dumps(t, separators=(",", ":")) for t in ticks)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[:-2] + ',\n "ticks": [\n' + body + "\n ]\n}\n")
    doc["ticks"] = ticks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--gpu", type=int, default=0, help="NVML index of the GPU to load and capture")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each workload")
    ap.add_argument("--period", type=float, default=0.5, help="seconds between two NVML reads (0.25-0.5)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.gpu, args.seconds, args.device)
        return 0
    if not args.out:
        ap.error("--out is required")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
