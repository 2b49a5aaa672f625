"""Capture real py-spy dumps of known jobs as test fixtures (tests/data/pyspy/), with what each costs.

On the H200 (python 3.12, torch with CUDA, pillow, numpy, py-spy on PATH), from the repo root:

    python bench/capture_stacks.py --out /tmp/pyspy-h200

runs, one after the other:
- ``cuda_train``: a CUDA training step fed by 4 DataLoader workers that decode JPEGs with PIL
  (``pin_memory=True``, so the pin thread shows): main should wait for data, workers be busy;
- ``gpu_bound``: bf16 8192^2 matmuls with ``.item()`` per step, workers idle;
and on a machine without CUDA the CPU jobs ``jpeg``, ``train``, ``inline``, ``slow_read`` instead
(``--jobs`` picks any; all come from tests/jobs/stack_targets.py). For each job it takes ~10 ``py-spy dump --json
--nonblocking`` of the main process and of each worker, one blocking dump of the main process,
and on CUDA one blocking ``--native`` dump of the main process (to see the native sync frames).
Everything goes into one JSON file under ``--out`` (kept under 1 MB), with the job, the pid roles,
what each job is expected to show, and the wall and CPU time of every py-spy call.

Standalone on purpose (no gpuwatch import): the device machine runs it from a plain checkout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "tests" / "jobs" / "stack_targets.py"
MAX_BYTES = 1_000_000
DUMP_TIMEOUT_S = 10.0  # a dump takes ~10 ms; this only catches a hung py-spy
NATIVE_TIMEOUT_S = 60.0  # a first --native dump of a CUDA process reads the unwind tables of libtorch_cuda
READY_TIMEOUT_S = 180.0  # CUDA init, cuBLAS handles and the first batch

# name, stack_targets args, workers, CUDA needed, expected labels per stack role (majority must be one).
JOBS = [
    ("cuda_train", ["train", "--device", "cuda", "--pin"], 4, True,
     {"main": ["data_wait", "data_ipc"], "worker": ["busy"], "pin": ["pin_idle", "pin_busy"]}),
    ("gpu_bound", ["gpu_bound"], 4, True, {"main": ["dispatch", "sync"], "worker": ["idle"]}),
    ("jpeg", ["jpeg"], 2, False, {"main": ["data_wait", "data_ipc"], "worker": ["busy"]}),
    ("train", ["train"], 1, False, {"main": ["optimizer", "backward", "dispatch", "data_ipc", "data_wait"]}),
    ("inline", ["inline"], 0, False, {"main": ["inline_load"]}),
    ("slow_read", ["slow_read"], 2, False, {"main": ["data_wait"], "worker": ["io"]}),
]


def run_pyspy(pyspy: str, pid: int, *extra: str) -> dict:
    """One py-spy dump: its JSON (or error), wall ms and CPU ms of the py-spy process."""
    args = [pyspy, "dump", "--pid", str(pid), "--json", *extra]
    timeout = NATIVE_TIMEOUT_S if "--native" in extra else DUMP_TIMEOUT_S
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, RUST_BACKTRACE="0"))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timeout after {timeout} s", "ms": timeout * 1000, "args": args[1:]}
    ms = (time.perf_counter() - t0) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_ms = ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000
    rec = {"ms": round(ms, 2), "cpu_ms": round(cpu_ms, 2), "args": args[1:]}
    if proc.returncode != 0:
        rec["error"] = (err or out).decode("utf-8", "replace").strip()[:500]
        return rec
    try:
        rec["output"] = json.loads(out)
    except ValueError:
        rec["error"] = "not JSON: " + out[:200].decode("utf-8", "replace")
    return rec


def start_job(args: list[str], workers: int) -> tuple[subprocess.Popen, dict]:
    cmd = [sys.executable, str(TARGETS), *args, "--seconds", "120", "--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"job {args} exited (rc {proc.wait()}) before it was ready")
        if line.startswith("READY "):
            return proc, json.loads(line[6:])
    proc.kill()
    raise RuntimeError(f"job {args} not ready after {READY_TIMEOUT_S} s")


def capture_job(pyspy: str, name: str, args: list[str], workers: int, cuda: bool, expect: dict,
                rounds: int) -> dict:
    proc, info = start_job(args, workers)
    try:
        time.sleep(3.0)  # past the first batches: steady state
        dumps = []
        t0 = time.monotonic()
        for _ in range(rounds):
            for role, pid in [("main", info["pid"])] + [("worker", w) for w in info["workers"]]:
                rec = run_pyspy(pyspy, pid, "--nonblocking")
                dumps.append({"pid": pid, "process_role": role, "mode": "nonblocking",
                              "t": round(time.monotonic() - t0, 3), **rec})
            time.sleep(0.25)
        rec = run_pyspy(pyspy, info["pid"])
        dumps.append({"pid": info["pid"], "process_role": "main", "mode": "blocking",
                      "t": round(time.monotonic() - t0, 3), **rec})
        if cuda:
            rec = run_pyspy(pyspy, info["pid"], "--native")
            if "output" in rec:  # native stacks are long: keep the main thread only
                rec["output"] = [t for t in rec["output"] if t.get("os_thread_id") == info["pid"]]
            dumps.append({"pid": info["pid"], "process_role": "main", "mode": "blocking-native",
                          "t": round(time.monotonic() - t0, 3), **rec})
    finally:
        proc.kill()
        proc.wait()
    return {"name": name, "command": ["stack_targets.py", *args, "--workers", str(workers)],
            "main_pid": info["pid"], "worker_pids": info["workers"], "expect": expect, "dumps": dumps}


def describe_host(pyspy: str, label: str | None) -> dict:
    try:
        import torch
        torch_version = torch.__version__
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        torch_version, gpu = None, None
    version = subprocess.run([pyspy, "--version"], capture_output=True, text=True).stdout.strip()
    today = datetime.date.today().isoformat()
    auto = f"{gpu or 'CPU-only'} host, {os.cpu_count()} cores, torch {torch_version}, {today}"
    return {"source": label or auto, "date": today, "cpu_count": os.cpu_count(), "gpu": gpu,
            "python": platform.python_version(), "torch": torch_version, "pyspy": version,
            "platform": platform.platform()}


def shrink(doc: dict) -> bytes:
    """Compact JSON; while over MAX_BYTES, drop every other nonblocking dump of the biggest job."""
    while True:
        data = json.dumps(doc, separators=(",", ":")).encode()
        if len(data) <= MAX_BYTES:
            return data
        job = max(doc["jobs"], key=lambda j: len(json.dumps(j)))
        nb = [d for d in job["dumps"] if d["mode"] == "nonblocking"]
        if len(nb) < 4:
            return data
        drop = {id(d) for d in nb[1::2]}
        job["dumps"] = [d for d in job["dumps"] if id(d) not in drop]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for the JSON file")
    p.add_argument("--pyspy", default=shutil.which("py-spy"), help="py-spy binary (default: on PATH)")
    p.add_argument("--label", help="where this ran, e.g. 'H200 VM, torch 2.11, 2026-12-02' (default: auto)")
    p.add_argument("--rounds", type=int, default=10, help="nonblocking dumps per process")
    p.add_argument("--jobs", nargs="*", help="only these jobs (default: all that fit this machine)")
    a = p.parse_args(argv)
    if not a.pyspy:
        print("py-spy not found: pip install py-spy or pass --pyspy", file=sys.stderr)
        return 1
    host = describe_host(a.pyspy, a.label)
    doc = {"schema": 1, "kind": "pyspy-fixtures", "host": host, "jobs": []}
    for name, args, workers, cuda, expect in JOBS:
        if cuda and not host["gpu"]:
            continue
        if (name not in a.jobs) if a.jobs else (cuda != bool(host["gpu"])):
            continue
        print(f"capturing {name} ...", file=sys.stderr, flush=True)
        doc["jobs"].append(capture_job(a.pyspy, name, args, workers, cuda, expect, a.rounds))
    data = shrink(doc)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    fname = out / ("gpu-stacks.json" if host["gpu"] else "cpu-stacks.json")
    fname.write_bytes(data)
    all_dumps = [d for j in doc["jobs"] for d in j["dumps"] if d["mode"] == "nonblocking" and "cpu_ms" in d]
    if all_dumps:
        ms = sorted(d["ms"] for d in all_dumps)
        cpu = sorted(d["cpu_ms"] for d in all_dumps)
        print(f"nonblocking dumps: {len(ms)}, wall median {ms[len(ms) // 2]:.1f} ms (max {ms[-1]:.1f}), "
              f"CPU median {cpu[len(cpu) // 2]:.1f} ms (max {cpu[-1]:.1f})", file=sys.stderr)
    print(f"wrote {fname} ({len(data)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
