"""Hog processes from outside the job: busy CPU loops, or bf16 matmuls on the job's GPU.

The hogs must not belong to the watched job's process tree (a real noisy neighbour does not), so a
short-lived launcher forks them and exits at once: they are re-parented away from the scenario.
They stay in its process group, so killing the group kills them, and each one exits by itself when
its owner (the scenario process) is gone or after ``--max-seconds``: a killed scenario leaves none.

Run as a file (it imports nothing from ``bench``):
``python _hog.py --owner PID --kind cpu|gpu --count N --max-seconds S`` prints the hog PIDs as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

CHECK_EVERY_S = 0.25
"""How often a hog checks that its owner lives: a hog outlives a killed scenario by at most this."""
GPU_SIDE = 8192
"""bf16 8192 x 8192 matmuls: the shape h200-signatures.md measured at ~100 % SM and tensor use."""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat): guards against PID reuse."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else fields[19]
    except (OSError, IndexError):
        return None


def _owner_alive(pid: int, started: str | None) -> bool:
    return started is not None and _start_time(pid) == started


def _cpu_hog(alive, ready) -> None:
    x = 0
    ready()
    while alive():
        end = time.monotonic() + CHECK_EVERY_S
        while time.monotonic() < end:
            for i in range(10_000):
                x = (x * 1_103_515_245 + i) & 0xFFFFFFFF


def _gpu_hog(alive, ready, device: str) -> None:
    import torch

    a = torch.randn(GPU_SIDE, GPU_SIDE, device=device, dtype=torch.bfloat16)
    b = a @ a
    torch.cuda.synchronize(device)
    ready()
    while alive():
        end = time.monotonic() + CHECK_EVERY_S
        while time.monotonic() < end:
            for _ in range(10):
                b = a @ a
            torch.cuda.synchronize(device)
    del b


def _run_hog(kind: str, owner: int, started: str | None, max_seconds: float, device: str, ready_fd: int) -> None:
    deadline = time.monotonic() + max_seconds

    def alive() -> bool:
        return time.monotonic() < deadline and _owner_alive(owner, started)

    def ready() -> None:
        os.write(ready_fd, b"r")
        os.close(ready_fd)

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if kind == "gpu":
        _gpu_hog(alive, ready, device)
    else:
        _cpu_hog(alive, ready)


def spawn_hogs(kind: str, count: int, max_seconds: float, device: str = "cuda") -> list[int]:
    """Start ``count`` hogs owned by this process; returns their PIDs."""
    out = subprocess.run(  # the launcher returns once every hog has done its first round of work
        [sys.executable, os.path.abspath(__file__), "--owner", str(os.getpid()), "--kind", kind,
         "--count", str(count), "--max-seconds", str(max_seconds), "--device", device],
        stdout=subprocess.PIPE, text=True, timeout=180, check=True,
    )
    return [int(p) for p in json.loads(out.stdout)]


def stop_hogs(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="start hog processes that outlive this launcher")
    p.add_argument("--owner", type=int, required=True)
    p.add_argument("--kind", choices=("cpu", "gpu"), required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--max-seconds", type=float, default=600.0)
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    started = _start_time(args.owner)
    pids = []
    ready_r, ready_w = os.pipe()
    for _ in range(args.count):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(ready_r)
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)
                os.dup2(devnull, 1)  # the launcher's stdout is a pipe its caller reads to EOF
                _run_hog(args.kind, args.owner, started, args.max_seconds, args.device, ready_w)
            except BaseException as e:  # noqa: BLE001 - a hog reports and leaves, never lingers
                print(f"hog {os.getpid()}: {type(e).__name__}: {e}", file=sys.stderr)
                code = 1
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(ready_w)
    got = 0
    while got < args.count:  # every hog at work (or dead: EOF) before the caller goes on
        chunk = os.read(ready_r, args.count)
        if not chunk:
            break
        got += len(chunk)
    print(json.dumps(pids), flush=True)
    return 0 if got == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
