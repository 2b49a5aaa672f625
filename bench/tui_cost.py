"""What the TUI's own drawing and diagnosis cost per frame, without collectors and without a GPU.

``gpuwatch replay FILE`` at speed 1 runs under a pty (200x60 by default) on a real recording; its CPU
time is sampled after ``--settle`` seconds until the recording ends, and reported in ms of CPU per
frame and % of one core at one frame a second. What it leaves out is what collectors cost (measured
by ``bench.collector_cost``); what it keeps is everything a live TUI does per frame after the
frame exists: the verdict, the view and Textual's layout and rendering, plus reading the recording
(one JSON line a frame, ~0.2 ms). So it can be measured on any machine, change by change.

    python -m bench.tui_cost bench/results/2026-12-02-h200/run5/steady_job_stack_loss.jsonl.gz --runs 3
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe
from bench.pty_run import run_pty


def _plain(path: str, tmp: str) -> str:
    """The recording as a plain JSONL file (replay reads plain files)."""
    if not path.endswith(".gz"):
        return path
    out = os.path.join(tmp, os.path.basename(path)[:-3])
    with gzip.open(path, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def _frames(path: str) -> tuple[int, float]:
    """Tick count and the seconds they span."""
    import json

    ts = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "tick":
                ts.append(rec["frame"]["t"])
    return len(ts), (ts[-1] - ts[0]) if len(ts) > 1 else 0.0


def one_run(path: str, cols: int, rows: int, settle: float) -> dict:
    n, span = _frames(path)
    argv = [*observe.gpuwatch_argv(), "replay", path]
    run = run_pty(argv, cols, rows, r"REPLAY ■ ended")  # the header once the frames ran out (tui/panels/header.py)
    try:
        sampler = observe.TreeSampler(run.proc.pid, every=0.25)
        time.sleep(settle)
        a = sampler.sample()
        ended = run.wait_marker(span + 30)
        b = sampler.sample()
        sampler.finish()
    finally:
        run.stop()
    if a is None or b is None or ended is None:
        return {"error": f"no end of replay seen: {run.tail(300)}"}
    secs = b.t - a.t
    cpu = b.own_cpu - a.own_cpu
    frames = secs * n / span if span else float("nan")  # frames drawn between the two samples
    return {"frames": round(frames, 1), "seconds": round(secs, 2), "cpu_s": round(cpu, 3),
            "ms_per_frame": round(1000 * cpu / frames, 2), "pct_at_1hz": round(100 * cpu / frames, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("recording")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cols", type=int, default=200)
    p.add_argument("--rows", type=int, default=60)
    p.add_argument("--settle", type=float, default=4.0, help="seconds of start-up left out")
    ns = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = _plain(ns.recording, tmp)
        results = [one_run(path, ns.cols, ns.rows, ns.settle) for _ in range(ns.runs)]
    for r in results:
        print(r)
    ok = [r["ms_per_frame"] for r in results if "error" not in r]
    if ok:
        print(f"ms of CPU per frame: median {statistics.median(ok):.2f} (min {min(ok):.2f}, max {max(ok):.2f}),"
              f" {ns.cols}x{ns.rows}, {len(ok)} runs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
