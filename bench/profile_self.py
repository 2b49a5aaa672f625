"""Where gpuwatch's own CPU goes: py-spy records gpuwatch itself while it watches the steady job.

The steady job (bench/steady_job.py, 8 idle DataLoader workers) is watched by the gpuwatch TUI
(200x60 pty) and then by ``gpuwatch --json``, each for ``--duration`` seconds after a start-up of
``--settle`` seconds, with ``py-spy record`` (raw collapsed stacks) attached to the gpuwatch process.
Samples are sorted into buckets by the innermost frame of gpuwatch's own code or of a library it
calls (render, layout, collectors by field, diagnosis, JSON, ...), so the split reads at a glance.
The raw files stay in ``--out`` for flame graphs (``inferno-flamegraph`` or speedscope).

    python -m bench.profile_self --device cuda --duration 25 --out DIR
    python -m bench.profile_self --summarize DIR/tui.txt          # re-read a raw file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter

import psutil

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe

RATE_HZ = 100
"""py-spy's sampling rate on gpuwatch: 100 Hz gives ~2,500 samples in 25 s, enough for a 1 % bucket."""

# (bucket, substrings of a frame "function (file:line)"): the first bucket in this list with a
# substring in any frame of a stack takes the sample. Order matters: specific before general (a
# collector's subprocess call is "py-spy spawn", psutil called by the host collector is "collector:
# host", and asyncio's loop, at the bottom of every stack, only takes what nothing else did).
BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    ("py-spy spawn/reap", ("subprocess.py",)),
    ("collector: stacks", ("collectors/pyspy.py", "collectors/stacks.py", "collectors/stack_labels.py")),
    ("collector: gpus (NVML)", ("collectors/gpu.py", "collectors/nvml_session.py", "collectors/nvml_collector.py", "pynvml")),
    ("collector: pcie", ("collectors/pcie.py",)),
    ("collector: procs", ("collectors/procs.py", "collectors/target.py", "collectors/nspid.py")),
    ("collector: disk", ("collectors/disk.py",)),
    ("collector: host", ("collectors/host.py",)),
    ("collector: other", ("collectors/",)),
    ("diagnosis", ("gpuwatch/diagnosis/", "gpuwatch/analysis.py", "gpuwatch/ranks.py", "gpuwatch/straggler.py")),
    ("JSON / recording", ("json/", "gpuwatch/model/codec.py", "gpuwatch/recording.py", "gpuwatch/headless.py")),
    ("textual: render", ("_styles_cache.py", "_compositor.py", "rich/", "Widget.render", "Strip")),
    ("textual: layout/css", ("_arrange.py", "layouts/", "css/", "_layout.py", "box_model")),
    # tui/app.py's run_app is at the bottom of every TUI stack: only the frame handlers count here
    ("TUI: panels update", ("tui/panels/", "tui/screens/", "tui/plot.py", "tui/format.py", "render_latest (tui",
                            "consume (tui")),
    ("textual: other", ("textual/",)),
    ("psutil (other)", ("psutil/",)),
    ("asyncio", ("asyncio/", "selectors.py")),
]


def bucket(stack: list[str]) -> str:
    for name, keys in BUCKETS:
        if any(k in frame for frame in stack for k in keys):
            return name
    return "other"


def summarize(path: str) -> dict:
    """Buckets of a ``py-spy record -f raw`` file (``frame;frame;... count`` per line, outermost first)."""
    counts: Counter[str] = Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or " " not in line:
                continue
            stack, n = line.rsplit(" ", 1)
            try:
                k = int(n)
            except ValueError:
                continue
            total += k
            counts[bucket(stack.split(";"))] += k
    return {"samples": total, "buckets": dict(counts.most_common())}


def table(name: str, s: dict, cpu_pct: float | None, seconds: float, rate: int = RATE_HZ) -> str:
    rows = [f"### {name}", "",
            f"{s['samples']} samples at {rate} Hz over {seconds:g} s"
            + (f"; gpuwatch's own CPU over the same time: {cpu_pct:.1f} % of a core" if cpu_pct is not None else ""),
            "", "| where | share of busy samples | ≈ % of a core |", "|---|---|---|"]
    busy = max(1, s["samples"])
    # py-spy counts a thread blocked in a system call as busy, so samples overstate CPU: the last
    # column spreads the CPU time measured from /proc over the buckets instead.
    for b, n in s["buckets"].items():
        pct = "" if cpu_pct is None else f"{cpu_pct * n / busy:.2f}"
        rows.append(f"| {b} | {100 * n / busy:.1f} % | {pct} |")
    return "\n".join(rows) + "\n"


def _cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def profile_one(o: observe.Observer, ns, out: str, tag: str) -> tuple[dict, float | None]:
    run = observe.start(o)
    try:
        run.wait_marker(30.0)
        time.sleep(ns.settle)
        raw = os.path.join(out, f"{tag}.txt")
        c0, t0 = _cpu_s(run.pid), time.monotonic()
        subprocess.run([observe.find_tool("py-spy") or "py-spy", "record", "--pid", str(run.pid), "--duration",
                        f"{ns.duration:g}", "--rate", str(ns.rate), "--format", "raw", "--output", raw,
                        "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        cpu = 100 * (_cpu_s(run.pid) - c0) / (time.monotonic() - t0) if run.alive() else None
    finally:
        run.stop()
    return (summarize(raw) if os.path.exists(raw) else {"samples": 0, "buckets": {}}), cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--duration", type=float, default=25.0, help="seconds py-spy records each observer")
    p.add_argument("--settle", type=float, default=5.0, help="seconds after the first frame before recording")
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--only", choices=("tui", "headless"), default=None)
    p.add_argument("--rate", type=int, default=RATE_HZ,
                   help="py-spy's samples a second (default %(default)s; --json at ~1.5 %% of a core gives only "
                        "~15 busy samples a second at 100 Hz)")
    p.add_argument("--out", default=None)
    p.add_argument("--summarize", metavar="RAW", help="print the buckets of a raw py-spy file and exit")
    ns = p.parse_args(argv)
    if ns.summarize:
        print(json.dumps(summarize(ns.summarize), indent=1))
        return 0
    if not ns.out:
        p.error("--out is required")
    reader, job = observe.launch_job(ns)
    results = {}
    md = [f"# Where gpuwatch's CPU goes ({ns.device}, job with {ns.workers} workers, --interval {ns.interval:g})\n"]
    try:
        observe.wait_warm(reader, job, observe.warmup_s(ns))
        iv = ("--interval", f"{ns.interval:g}")
        todo = [("tui", observe.gpuwatch_tui(job.pid, *iv)), ("headless", observe.gpuwatch_headless(job.pid, *iv))]
        for tag, o in todo:
            if ns.only and tag != ns.only:
                continue
            s, cpu = profile_one(o, ns, ns.out, tag)
            results[tag] = {**s, "cpu_pct": cpu}
            md.append(table(o.name, s, cpu, ns.duration, ns.rate))
            print(md[-1], flush=True)
    finally:
        observe.stop_job(job)
    with open(os.path.join(ns.out, "profile.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(ns.out, "profile.md"), "w") as f:
        f.write("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
