"""CPU time of each collector's sample, and of each NVML call, watching the steady job.

The profile of the whole process (bench/profile_self.py) samples at 100 Hz and leaves a few hundred
busy samples per run: too few to rank collectors that each cost under 1 % of a core. Here each
collector's ``sample()`` runs on this thread, one after the other once per ``--interval``, and
``time.thread_time()`` around it measures its CPU (user and system: an NVML call that the kernel
driver answers counts too) exactly. NVML calls are timed one by one the same way, by wrapping the
session's single entry point. py-spy's own CPU (the stack collector's subprocesses) is not in the
thread's time: bench/self.py counts it with the children.

    python -m bench.collector_cost --device cuda --ticks 30 --out DIR
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--ticks", type=int, default=30)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--out", required=True)
    ns = p.parse_args(argv)

    from gpuwatch.assemble import WatchOptions, build_collectors  # noqa: PLC0415 - after sys.path
    from gpuwatch.collectors.target import Target  # noqa: PLC0415

    reader, job = observe.launch_job(ns)
    per: dict[str, list[float]] = defaultdict(list)
    calls: dict[str, list[float]] = defaultdict(list)
    try:
        observe.wait_warm(reader, job, observe.warmup_s(ns))
        collectors = build_collectors(Target(job.pid), WatchOptions(interval=ns.interval))
        _time_nvml_calls(collectors, calls)
        for c in collectors:
            c.probe()
        for tick in range(ns.ticks + 1):
            start = time.monotonic()
            for c in collectors:  # the stack collector spreads its dumps over the tick (sleeps: no CPU)
                t0 = time.thread_time()
                c.sample()
                if tick:  # the first tick opens rate windows and caches: not steady
                    per[c.field].append((time.thread_time() - t0) * 1e3)
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
    if calls:
        per_tick = {fn: sum(v) / (ns.ticks + 1) for fn, v in calls.items()}
        md.append(observe.table(("NVML call", "calls per tick", "median ms CPU", "ms CPU per tick"),
                                [(fn, f"{len(calls[fn]) / (ns.ticks + 1):.1f}", f"{statistics.median(calls[fn]):.3f}",
                                  f"{ms:.2f}") for fn, ms in sorted(per_tick.items(), key=lambda kv: -kv[1])]))
    result = {"schema": 1, "bench": "collector_cost", "device": ns.device, "ticks": ns.ticks, "interval_s": ns.interval,
              "workers": ns.workers, "machine": observe.machine(),
              "collectors_ms": {f: v for f, v in per.items()}, "nvml_calls_ms": {f: v for f, v in calls.items()}}
    observe.write_results(ns.out, "collector_cost", result,
                          f"CPU per collector sample ({ns.device}, job with {ns.workers} workers)", "\n".join(md))
    return 0


def _time_nvml_calls(collectors, calls: dict[str, list[float]]) -> None:
    """Wrap the NVML session's ``call`` so that every NVML function's CPU time is recorded."""
    session = next((c.session for c in collectors if hasattr(c, "session")), None)
    if session is None:
        return
    inner = session.call

    def timed(index, fn, *args):
        t0 = time.thread_time()
        try:
            return inner(index, fn, *args)
        finally:
            calls[fn].append((time.thread_time() - t0) * 1e3)

    session.call = timed


if __name__ == "__main__":
    sys.exit(main())
