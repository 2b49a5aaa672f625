"""CPU time of each collector's sample, and of each NVML call, watching the steady job.

The profile of the whole process (bench/profile_self.py) samples at 100 Hz and leaves a few hundred
busy samples per run: too few to rank collectors that each cost under 1 % of a core. Here each
collector's ``sample()`` runs on this thread, one after the other once per ``--interval``, and
``time.thread_time()`` around it measures its CPU (user and system: an NVML call that the kernel
driver answers counts too) exactly. NVML calls are timed one by one the same way, by wrapping the
session's single entry point. py-spy's own CPU (the stack collector's subprocesses) is not in the
thread's time: it is counted apart, from the reaped children's CPU around the stack collector's
sample, and both are given per dump.

On a machine without a GPU (``--device cpu``) the GPU and PCIe collectors read the fake NVML that
replays the real H200 capture (tests/fake_nvml.py, one capture tick per tick, from the bf16 matmul
on), with the job's process on the GPU. The fake's CPU per call says nothing about the driver's,
so the NVML table then gives the calls per tick and, beside them, what those calls cost on the
H200: each call's median CPU in the H200 run named by H200_REFERENCE, times the calls per tick.

    python -m bench.collector_cost --device cuda --ticks 30 --out DIR
    python -m bench.collector_cost --device cpu --ticks 30 --out DIR     # fake NVML, H200 estimate

``--pace relaxed`` hands the collectors that follow the pace (collectors/base.py Paced) the relaxed
pace of gpuwatch/pace.py from the second tick on, as a watch of the steady GPU-bound job does
after ten ticks: fewer stack dumps, the GPU utilization buffer read every second tick. The stacks
line gives stack sampling's whole CPU a tick (gpuwatch's and py-spy's) at the pace's factors.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import statistics
import sys
import time
from collections import defaultdict

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe

H200_REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "2026-12-04-h200", "run29",
                              "collector_cost", "collector_cost.json")
"""The H200 run whose per-call NVML CPU prices the fake's call counts (run 29, 44da06d's collectors,
the buffered reads in one driver call each, 30 ticks)."""
H200_PRICES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "2026-12-04-h200", "run27",
                           "nvml_prices", "nvml_prices.json")
"""Prices of calls the reference run did not make (bench/nvml_prices.py on the same kind of H200)."""
GPM_METRICS_GET_MS = 1.6
"""nvmlGpmMetricsGet's CPU a call on the H200 (run 35's cProfile on thread CPU: 32 ms over 20 calls,
bench/results/2026-12-04-h200/run35): neither price file holds it (the call was not timed then)."""
FAKE_START = "matmul_bf16"
"""The capture's workload the fake NVML starts from (a busy GPU, as the steady job's)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--ticks", type=int, default=30)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--out", required=True)
    p.add_argument("--pace", choices=("full", "relaxed"), default="full",
                   help="the sampling pace from the second tick on (gpuwatch/pace.py; default: full)")
    p.add_argument("--profile", action="store_true",
                   help="also profile the collectors' samples (cProfile on thread CPU time) on every other tick from the "
                        "second on, into OUT/collector_cost.prof, its top lines by own time in the .md; cProfile slows "
                        "Python code, not the driver's, so the profiled ticks are left out of the timings")
    p.add_argument("--nvml", choices=("real", "fake"), default=None,
                   help="NVML to read: the driver's, or the fake replaying the H200 capture (default: real on cuda, "
                        "fake on cpu)")
    ns = p.parse_args(argv)
    fake_nvml = (ns.nvml or ("real" if ns.device == "cuda" else "fake")) == "fake"

    from gpuwatch.assemble import WatchOptions, build_collectors  # noqa: PLC0415 - after sys.path
    from gpuwatch.collectors.base import Paced  # noqa: PLC0415
    from gpuwatch.collectors.target import Target  # noqa: PLC0415
    from gpuwatch.pace import FULL, RELAXED  # noqa: PLC0415

    pace = RELAXED if ns.pace == "relaxed" else FULL

    reader, job = observe.launch_job(ns)
    per: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, list[float]] = defaultdict(list)
    dumps: list[int] = []
    """py-spy dumps per tick (at the pace --pace sets)."""
    pyspy_ms: list[float] = []
    """CPU of the py-spy processes each tick (reaped children; the job is reaped only at the end)."""
    try:
        observe.wait_warm(reader, job, observe.warmup_s(ns))
        target = Target(job.pid)
        collectors = build_collectors(target, WatchOptions(interval=ns.interval))
        fake = _use_fake_nvml(collectors, target, job.pid, ns.interval) if fake_nvml else None
        timing = {"on": True}
        timed_ticks = 0
        """Ticks whose NVML calls are timed (all but the profiled ones): calls per tick divide by it."""
        prof = cProfile.Profile(time.thread_time) if ns.profile else None
        for c in collectors:
            c.probe()
        _time_nvml_calls(collectors, calls, timing)  # after the probes: NVML is loaded by then
        for tick in range(ns.ticks + 1):
            profiled = prof is not None and tick and tick % 2 == 0
            timing["on"] = not profiled
            timed_ticks += not profiled
            start = time.monotonic()
            if fake is not None and fake.tick + 1 < len(fake.ticks):
                fake.advance()  # one capture tick per tick (the capture's last tick is held)
            for c in collectors:  # the stack collector spreads its dumps over the tick (sleeps: no CPU)
                k0 = _children_cpu_ms()
                t0 = time.thread_time()
                if profiled:
                    got = prof.runcall(c.sample)
                else:
                    got = c.sample()
                if tick and not profiled:  # the first tick opens rate windows and caches: not steady
                    per[c.field].append((time.thread_time() - t0) * 1e3)
                    if c.field == "stacks":
                        dumps.append(len(getattr(got, "dumps", ())))
                        pyspy_ms.append(_children_cpu_ms() - k0)
            if tick == 0:
                for c in collectors:
                    if isinstance(c, Paced):
                        c.set_pace(*pace)
            time.sleep(max(0.0, ns.interval - (time.monotonic() - start)))
        for c in collectors:
            c.close()
    finally:
        observe.stop_job(job)

    rows = [(field, len(v), statistics.median(v), statistics.mean(v), max(v)) for field, v in per.items()]
    total = sum(r[3] for r in rows)
    md = [observe.table(("collector", "samples", "median ms CPU", "mean ms CPU", "max ms", "≈ % of a core at 1 Hz"),
                        [(f, n, f"{med:.2f}", f"{mean:.2f}", f"{mx:.2f}", f"{mean / 10 / ns.interval:.2f}")
                         for f, n, med, mean, mx in sorted(rows, key=lambda r: -r[3])]),
          f"\nAll collectors: {total:.2f} ms of CPU per tick, {total / 10 / ns.interval:.2f} % of a core "
          "(py-spy's processes not included).\n"]
    if dumps and sum(dumps):
        n = sum(dumps)
        md.append(f"Stacks: {n / len(dumps):.2f} py-spy dumps a tick ({ns.pace} pace); per dump {sum(per['stacks']) / n:.2f} ms "
                  f"of gpuwatch's CPU (starting py-spy, reading, parsing, labelling, the tick's planning) and "
                  f"{sum(pyspy_ms) / n:.2f} ms of py-spy's own.\n")
        both = (sum(per["stacks"]) + sum(pyspy_ms)) / len(dumps)
        md.append(f"Stack sampling in all (gpuwatch's and py-spy's CPU, pace factors main {pace.main:.3g}, workers "
                  f"{pace.workers:.3g}): {both:.2f} ms of CPU a tick, {both / 10 / ns.interval:.2f} % of a core.\n")
    estimate = None
    if calls and fake_nvml:
        estimate = _h200_estimate(calls, timed_ticks)
        md.append(f"NVML: the fake replaying the H200 capture. Calls per tick (all {timed_ticks} timed ticks, the first "
                  f"included) priced at each call's median CPU in {os.path.relpath(H200_REFERENCE)}:\n")
        md.append(observe.table(("NVML call", "calls per tick", "H200 median ms CPU a call", "≈ H200 ms CPU per tick"),
                                [(fn, f"{n:.2f}", "?" if ms is None else f"{ms:.3f}", "?" if ms is None else f"{n * ms:.2f}")
                                 for fn, n, ms in estimate["rows"]]))
        md.append(f"\n≈ H200 NVML calls per tick: {estimate['ms_per_tick']:.2f} ms of CPU, "
                  f"{estimate['ms_per_tick'] / 10 / ns.interval:.2f} % of a core (the Python "
                  f"around the calls not included; a call the reference did not make priced from "
                  f"{os.path.relpath(H200_PRICES)}).\n")
    elif calls:
        per_tick = {fn: sum(v) / timed_ticks for fn, v in calls.items()}
        md.append(observe.table(("NVML call", "calls per tick", "median ms CPU", "ms CPU per tick"),
                                [(fn, f"{len(calls[fn]) / timed_ticks:.1f}", f"{statistics.median(calls[fn]):.3f}",
                                  f"{ms:.2f}") for fn, ms in sorted(per_tick.items(), key=lambda kv: -kv[1])]))
    if prof is not None:
        os.makedirs(ns.out, exist_ok=True)
        prof.dump_stats(os.path.join(ns.out, "collector_cost.prof"))
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
        md.append(f"\ncProfile of the collectors' samples on every other tick from the second on (collector_cost.prof), "
                  "top 30 by own CPU time (cProfile's overhead inflates Python code, not the driver's):\n\n```\n"
                  + text.getvalue().strip() + "\n```\n")
    result = {"schema": 1, "bench": "collector_cost", "device": ns.device, "ticks": ns.ticks, "interval_s": ns.interval,
              "pace": ns.pace, "pace_factors": list(pace),
              "workers": ns.workers, "machine": observe.machine(),
              "collectors_ms": {f: v for f, v in per.items()}, "nvml_calls_ms": {f: v for f, v in calls.items()},
              "stack_dumps": dumps, "pyspy_children_ms": pyspy_ms,
              "nvml": "fake (H200 capture)" if fake_nvml else "real", "h200_estimate": estimate}
    observe.write_results(ns.out, "collector_cost", result,
                          f"CPU per collector sample ({ns.device}, job with {ns.workers} workers, {ns.pace} pace)",
                          "\n".join(md))
    return 0


def _children_cpu_ms() -> float:
    """User and system CPU of this process's reaped children (py-spy runs), in ms."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1e3


def _use_fake_nvml(collectors, target, job_pid: int, interval: float):
    """Swap the GPU and PCIe collectors for ones reading the fake NVML (the H200 capture), the job's
    process on the GPU. Returns the fake, which the tick loop moves on."""
    from gpuwatch.collectors.gpu import GpuCollector  # noqa: PLC0415 - after sys.path
    from gpuwatch.collectors.nvml_session import NvmlSession  # noqa: PLC0415
    from gpuwatch.collectors.pcie import PcieCollector  # noqa: PLC0415
    from tests.fake_nvml import CAPTURE, FakeNvml  # noqa: PLC0415

    fake = FakeNvml(CAPTURE, gpu_pids=[job_pid])
    fake.goto(FAKE_START)
    session = NvmlSession(nvml=fake, pid_map=lambda p: p)
    for k, c in enumerate(collectors):
        if c.field == "gpus":
            collectors[k] = GpuCollector(target, session, interval=interval)
        elif c.field == "pcie":
            collectors[k] = PcieCollector(target, session, interval=interval)
    return fake


def _h200_estimate(calls: dict[str, list[float]], ticks: int) -> dict:
    """Calls per tick times each call's median CPU in the H200 reference run, or in H200_PRICES for
    a call it did not make."""
    import json  # noqa: PLC0415

    with open(H200_PRICES, encoding="utf-8") as f:
        ref = {fn: statistics.median(v) for fn, v in json.load(f)["cpu_ms"].items() if v}
    with open(H200_REFERENCE, encoding="utf-8") as f:
        ref.update({fn: statistics.median(v) for fn, v in json.load(f)["nvml_calls_ms"].items() if v})
    ref.setdefault("nvmlGpmMetricsGet", GPM_METRICS_GET_MS)
    rows = [(fn, len(v) / ticks, ref.get(fn)) for fn, v in calls.items()]
    rows.sort(key=lambda r: -(r[1] * (r[2] or 0)))
    return {"reference": os.path.relpath(H200_REFERENCE), "rows": rows,
            "ms_per_tick": sum(n * ms for _, n, ms in rows if ms is not None)}


def _time_nvml_calls(collectors, calls: dict[str, list[float]], timing: dict[str, bool]) -> None:
    """Wrap the NVML session's ``invoke`` (every per-GPU NVML call goes through it) and the GPM
    metrics computation (``nvmlGpmMetricsGet`` takes no GPU handle, collectors/gpm.py calls it
    directly) so that every NVML function's CPU time is recorded while ``timing["on"]``."""
    session = next((c.session for c in collectors if hasattr(c, "session")), None)
    if session is None:
        return
    inner = session.invoke

    def timed(index, name, func, *args):
        t0 = time.thread_time()
        try:
            return inner(index, name, func, *args)
        finally:
            if timing["on"]:
                calls[name].append((time.thread_time() - t0) * 1e3)

    session.invoke = timed
    nv = session.nvml
    metrics_get = getattr(nv, "nvmlGpmMetricsGet", None)
    if metrics_get is None:
        return

    def timed_metrics(*args):
        t0 = time.thread_time()
        try:
            return metrics_get(*args)
        finally:
            if timing["on"]:
                calls["nvmlGpmMetricsGet"].append((time.thread_time() - t0) * 1e3)

    nv.nvmlGpmMetricsGet = timed_metrics  # the module is this process's own: the bench ends with it


if __name__ == "__main__":
    sys.exit(main())
