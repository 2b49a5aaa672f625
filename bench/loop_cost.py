"""What the event loop's headless work costs per frame, replaying recordings without a GPU or a TUI.

Each recording's frames go through the tick pipeline as ``--json`` runs it (gpuwatch.pipeline:
the verdict, the per-rank verdicts, the tick serialised to one JSON line), one frame at a time;
the CPU time of each step is summed (``time.process_time``) and reported in ms a frame. Reading and
decoding the recording is left out (a live watch gets its frames from the collectors instead).

``--verdicts FILE`` also writes every tick's JSON line (frame, verdict, ranks) of every recording
to FILE, so two commits can be compared byte for byte (``cmp``) on the same recordings.

    python -m bench.loop_cost                       # the default recordings, 3 passes each
    python -m bench.loop_cost REC.jsonl.gz --passes 5 --verdicts /tmp/after.jsonl
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpuwatch.analysis import Analysis
from gpuwatch.multirank import MultiRank
from gpuwatch.recording import tick_line
from gpuwatch.replay import load_frames

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [
    "bench/results/2026-12-03-h200/run11/self2/rec/json.jsonl.gz",  # the H200 benchmark job (8 workers)
    "tests/data/cpu_demo.jsonl",
    "tests/data/ddp_cpu_slow_rank1.jsonl",
    "tests/data/h200/field_imagefolder_epochs.jsonl.gz",
    "tests/data/h200/field_lightning.jsonl.gz",
    "tests/data/h200/field_checkpoint.jsonl.gz",
    "tests/data/field/short_epochs_cpu.jsonl.gz",
]


def one_pass(frames: list, out=None) -> dict[str, float]:  # noqa: ANN001 - a text file or None
    """CPU seconds of each step over all ``frames``."""
    analysis, ranks = Analysis(), MultiRank()
    spent = {"diagnosis": 0.0, "ranks": 0.0, "json": 0.0}
    clock = time.process_time
    for frame in frames:
        t0 = clock()
        verdict = analysis.update(frame)
        t1 = clock()
        rt = ranks.update(frame)
        t2 = clock()
        line = tick_line(frame, verdict, rt)
        t3 = clock()
        spent["diagnosis"] += t1 - t0
        spent["ranks"] += t2 - t1
        spent["json"] += t3 - t2
        if out is not None:
            out.write(line + "\n")
    return spent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("recordings", nargs="*", help="recordings (default: a set of committed ones)")
    p.add_argument("--passes", type=int, default=3, help="passes over each recording (the least is shown: the VM's other work only adds)")
    p.add_argument("--verdicts", help="write every tick's JSON line here (first pass only)")
    ns = p.parse_args(argv)
    paths = ns.recordings or [os.path.join(ROOT, x) for x in DEFAULT]
    out = open(ns.verdicts, "w") if ns.verdicts else None  # noqa: SIM115
    total = {"diagnosis": 0.0, "ranks": 0.0, "json": 0.0}
    n_all = 0
    print(f"{'recording':48} {'frames':>6} {'diag ms':>8} {'ranks ms':>8} {'json ms':>8}  (a frame, least of passes)")
    try:
        for path in paths:
            frames = load_frames(path)
            runs = []
            for i in range(ns.passes):
                runs.append(one_pass(frames, out if i == 0 else None))
            med = {k: min(r[k] for r in runs) for k in total}
            n = len(frames)
            n_all += n
            for k in total:
                total[k] += med[k]
            name = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
            print(f"{name[-48:]:48} {n:6d} " + " ".join(f"{1000 * med[k] / n:8.2f}" for k in total))
    finally:
        if out is not None:
            out.close()
    print(f"{'all':48} {n_all:6d} " + " ".join(f"{1000 * total[k] / n_all:8.2f}" for k in total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
