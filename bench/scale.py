"""A job at scale without eight GPUs: 8 CPU gloo ranks with 8 DataLoader workers each (64 workers,
tests/jobs/ddp_cpu.py), watched by gpuwatch whose GPU and PCIe collectors read a fake NVML of 8 GPUs
that replays the real H200 capture (tests/fake_nvml.py: one rank's PID on each GPU, one capture
tick per gpuwatch tick from the bf16 matmuls on). Everything else is collected live: the 73
processes, their threads, py-spy stacks of every rank, host and disk.

It records the watch (``--record``), which the TUI then replays for its scale snapshots and
``bench.tui_cost`` measures at 80x24 and 200x60, and reports gpuwatch's own CPU per tick while
watching, the collectors' threads apart from the rest (the same split as ``bench.self``).

    python -m bench.scale --duration 40 --record tests/data/scale_8gpu_8ranks.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.gpu import GpuCollector
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.pcie import PcieCollector
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.headless import stream_json
from gpuwatch.recording import Recorder
from gpuwatch.source import LiveSource
from tests.fake_nvml import CAPTURE, FakeNvml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_AT = "matmul_bf16"
"""The capture's workload the fake starts from; it then moves on a capture tick per gpuwatch tick
(pinned and pageable copies, launch-bound, ... as captured) and holds its last tick."""


class SteppingNvml(FakeNvml):
    """The fake NVML, moved one capture tick each time the GPU collector starts a tick."""

    def step(self) -> None:
        if self.tick + 1 < len(self.ticks):
            self.advance()


STEP_SLEEP_S = 0.2
"""Each rank sleeps this long a step, standing for the GPU time of the GPU-bound job the fake NVML
shows (the bf16 matmuls): eight ranks stepping flat out would only measure a 2-core machine's run
queue."""


def start_job(ranks: int, workers: int, seconds: float) -> tuple[subprocess.Popen, list[dict]]:
    """The DDP job (at a lower CPU priority than gpuwatch), and each rank's READY line (rank, pid, worker pids)
    once every rank stepped."""
    job = subprocess.Popen(["nice", "-n", "5", sys.executable, os.path.join(ROOT, "tests", "jobs", "ddp_cpu.py"),
                            "--ranks", str(ranks), "--workers", str(workers), "--seconds", f"{seconds:g}",
                            "--step-sleep", f"{STEP_SLEEP_S:g}", "--fork-workers"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    ready: list[dict] = []
    deadline = time.monotonic() + 300
    assert job.stdout is not None
    try:
        while len(ready) < ranks:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(ready)} of {ranks} ranks ready after 300 s")
            line = job.stdout.readline()
            if not line:
                raise RuntimeError(f"the job exited before its ranks were ready (exit {job.poll()})")
            if line.startswith("READY "):
                ready.append(json.loads(line[6:]))
    except BaseException:
        stop_job(job)
        raise
    threading.Thread(target=lambda: [None for _ in job.stdout], daemon=True).start()  # keep draining
    return job, sorted(ready, key=lambda r: r["rank"])


def stop_job(job: subprocess.Popen) -> None:
    """The job and everything it started (its own session and process group)."""
    try:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def watch(job_pid: int, rank_pids: list[int], gpus: int) -> tuple[LiveSource, SteppingNvml]:
    fake = SteppingNvml(CAPTURE, gpus=gpus, gpu_pids=rank_pids)
    fake.goto(START_AT)
    target = Target(job_pid)
    session = NvmlSession(nvml=fake, pid_map=lambda p: p)
    collectors = []
    for c in build_collectors(target, WatchOptions()):
        if c.field == "gpus":
            c = GpuCollector(target, session)
            inner = c.sample
            c.sample = lambda inner=inner: (fake.step(), inner())[1]  # type: ignore[method-assign]
        elif c.field == "pcie":
            c = PcieCollector(target, session)
        collectors.append(c)
    return LiveSource(Watch(target, collectors), duration=None), fake


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads by name (gpuwatch names its own, gw-*)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{os.getpid()}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        name = name if name.startswith("gw-") else "main and other"
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    t = os.times()
    out["py-spy children"] = t.children_user + t.children_system  # dumps are reaped: counted here
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--workers", type=int, default=8, help="DataLoader workers per rank")
    p.add_argument("--duration", type=float, default=40.0, help="seconds watched")
    p.add_argument("--steady-after", type=float, default=15.0, help="seconds of start-up left out of the CPU figures")
    p.add_argument("--record", required=True, help="the recording to write (refused if it exists)")
    ns = p.parse_args(argv)
    if os.path.exists(ns.record):
        p.error(f"{ns.record} exists")
    job, ready = start_job(ns.ranks, ns.workers, ns.duration + 60)
    try:
        source, fake = watch(job.pid, [r["pid"] for r in ready], ns.ranks)
        rec = Recorder(ns.record, note=f"bench/scale.py: {ns.ranks} CPU gloo ranks x {ns.workers} DataLoader workers "
                       f"(tests/jobs/ddp_cpu.py) on this machine; GPU and PCIe from a fake NVML of {ns.ranks} GPUs "
                       "replaying the real H200 capture of 2026-12-02 (tests/fake_nvml.py), one rank per GPU")
        marks: dict[str, tuple[float, dict[str, float]]] = {}

        async def run() -> None:
            stop = asyncio.Event()
            t0 = time.monotonic()

            async def timer() -> None:
                await asyncio.sleep(ns.steady_after)
                marks["a"] = (time.monotonic(), thread_cpu())
                await asyncio.sleep(max(0.0, ns.duration - ns.steady_after))
                marks["b"] = (time.monotonic(), thread_cpu())
                stop.set()

            task = asyncio.create_task(timer())
            with open(os.devnull, "w") as null:
                await stream_json(source, out=null, recorder=rec, stop=stop)
            await task
            print(f"watched {time.monotonic() - t0:.1f} s", flush=True)

        asyncio.run(run())
        rec.close()
    finally:
        stop_job(job)
    (ta, a), (tb, b) = marks["a"], marks["b"]
    dt = tb - ta
    per = {k: 100 * (b.get(k, 0.0) - a.get(k, 0.0)) / dt for k in sorted(b)}
    print(f"gpuwatch --json's own CPU over {dt:.0f} s (from {ns.steady_after:g} s on), % of a core, py-spy "
          f"children included: total {sum(per.values()):.2f}; " + ", ".join(f"{k} {v:.2f}" for k, v in per.items()))
    print(f"recording: {ns.record} ({rec.lines - 1} ticks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
