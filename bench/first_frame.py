"""Time to first frame, several starts each: gpuwatch's TUI and --json beside nvitop, on the steady job.

``bench.self`` reads one start per observer, inside a longer run; one start is a noisy figure (it
spread 1.41-1.79 s over four runs of the same code). Here each observer is started ``--starts``
times in turn, and stopped as soon as its first frame shows (the markers of ``bench.observe``).

    python -m bench.first_frame --device cuda --starts 5 --out DIR
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe
from bench.self import TARGET_FIRST_FRAME_S

TIMEOUT_S = 30.0


def observers(pid: int) -> list[observe.Observer]:
    return [
        observe.gpuwatch_tui(pid),
        observe.gpuwatch_headless(pid),
        observe.external("nvitop --interval 1", "nvitop", ("--interval", "1"), True, "Driver Version:"),
    ]


def time_starts(o: observe.Observer, starts: int) -> list[float | None]:
    out = []
    for _ in range(starts):
        run = observe.start(o)
        try:
            out.append(run.wait_marker(TIMEOUT_S))
        finally:
            run.stop()
        time.sleep(1.0)  # let the stopped one's exit settle before the next start
    return out


def summary(times: list[float | None]) -> dict:
    ok = [t for t in times if t is not None]
    return {"starts": len(times), "seen": len(ok), "times_s": [None if t is None else round(t, 3) for t in times],
            "median_s": round(statistics.median(ok), 3) if ok else None,
            "min_s": round(min(ok), 3) if ok else None, "max_s": round(max(ok), 3) if ok else None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--starts", type=int, default=5)
    p.add_argument("--out", required=True)
    ns = p.parse_args(argv)
    reader, job = observe.launch_job(ns)
    rows = []
    try:
        observe.wait_warm(reader, job, observe.warmup_s(ns))
        for o in observers(job.pid):
            if o.argv is None:
                rows.append({"observer": o.name, "missing": o.missing})
                continue
            rows.append({"observer": o.name, **summary(time_starts(o, ns.starts))})
            print(rows[-1], flush=True)
    finally:
        observe.stop_job(job)
    body = [[r["observer"], r.get("missing", ""), r.get("median_s", ""), r.get("min_s", ""), r.get("max_s", ""),
             " ".join("–" if t is None else f"{t:.2f}" for t in r.get("times_s", []))] for r in rows]
    md = observe.table(["observer", "missing", "median s", "min s", "max s", "each start, s"], body)
    tui = next((r for r in rows if r["observer"].startswith("gpuwatch TUI")), {})
    med, slowest = tui.get("median_s"), tui.get("max_s")
    verdict = "not measured" if med is None else "met" if med <= TARGET_FIRST_FRAME_S else "NOT met"
    md += f"\n\nTarget: first frame of the TUI <= {TARGET_FIRST_FRAME_S:g} s: {verdict} (median)"
    md += "" if slowest is None else f"; slowest start {slowest:.2f} s"
    md += ".\n"
    result = {"schema": 1, "bench": "first_frame", "device": ns.device, "workers": ns.workers,
              "starts": ns.starts, "machine": observe.machine(), "rows": rows}
    observe.write_results(ns.out, "first_frame", result, f"Time to first frame ({ns.device}, job with {ns.workers} workers)", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
