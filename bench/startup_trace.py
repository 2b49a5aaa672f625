"""Where the TUI's start-up goes: a few starts with stage timestamps, and an import-time summary.

Each start runs gpuwatch's TUI under a 200x60 pty on the steady job, as ``bench.first_frame`` does,
through bench/startup_probe.py, which marks the stages as they happen (interpreter up, command
imports, collectors started and their first samples, TUI imports, app mounted, first round, first
verdict, first frame on the widgets and painted) with wall time from exec and the main thread's
CPU, and adds up the CPU of a few steps (CSS parse and apply, layout, render, the frame onto the
widgets, the verdict) up to the first painted frame. A start ends when the header's ``PID <pid>``
marker shows (the first-frame benchmark's end) and the probe has written its last mark. Then
``python -X importtime`` of the modules the TUI loads, twice, summed by package (the fastest of
the two for each module). Together under a minute on the H200.

    python -m bench.startup_trace --device cuda --starts 3 --out DIR
    python -m bench.startup_trace --pid PID --starts 3 --out DIR    # an already running job
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe
from bench.pty_run import run_pty

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup_probe.py")
TIMEOUT_S = 30.0
LAST_MARK = "steps up to the first painted frame"
STAGES = (
    "interpreter started",
    "imported gpuwatch.cli",
    "imported gpuwatch.commands",
    "collectors prestarted",
    "prestart returned",
    "first sample: gpus",
    "first sample: pcie",
    "first sample: stacks",
    "first sample: procs",
    "first sample: disk",
    "first sample: host",
    "imported textual.app",
    "imported gpuwatch.tui.app",
    "app created",
    "app mounted",
    "main screen compose starts",
    "frames() started, waiting for the first round",
    "main screen mounted",
    "first round in",
    "first frame assembled",
    "first verdict",
    "first frame reached the app",
    "first frame put on the widgets",
    "first paint (no data yet)",
    "first frame with data written to the terminal",
)
IMPORTS = "import gpuwatch.cli, gpuwatch.commands, gpuwatch.source, gpuwatch.headless, gpuwatch.tui.app"
"""What the TUI's start loads (gpuwatch.headless brings the analysis the first verdict needs)."""


def one_start(args: list[str], marker: str | None, marks_path: str) -> dict:
    """One start of the TUI (gpuwatch ``args``) through the probe: its marks, and when the bench
    saw ``marker`` (None: no marker, the start ends with the probe's last mark)."""
    if os.path.exists(marks_path):
        os.unlink(marks_path)
    env = dict(os.environ, GW_TRACE_OUT=marks_path)
    run = run_pty([sys.executable, PROBE, *args], *observe.TUI_SIZE, marker, env=env)
    try:
        seen = run.wait_marker(TIMEOUT_S) if marker else None
        deadline = time.monotonic() + (2.0 if marker else TIMEOUT_S)  # the probe's last mark follows the paint
        while time.monotonic() < deadline and not _has_mark(marks_path, LAST_MARK):
            time.sleep(0.05)
    finally:
        run.stop()
    marks: dict[str, dict] = {}
    with open(marks_path) as f:
        for line in f:
            m = json.loads(line)
            m["t"] = round(m["t"] - run.started, 4)  # seconds from exec
            marks.setdefault(m["what"], m)
    return {"marker_s": None if seen is None else round(seen, 4), "marks": marks}


def _has_mark(path: str, what: str) -> bool:
    try:
        with open(path) as f:
            return f'"what": "{what}"' in f.read()
    except OSError:
        return False


def importtime(runs: int = 2) -> dict[str, tuple[int, int]]:
    """Module -> (self, cumulative) microseconds, the fastest of ``runs`` runs of -X importtime."""
    best: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", IMPORTS], capture_output=True, text=True,
                             cwd="/", timeout=60).stderr
        for line in out.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
            if m:
                name, own, cum = m[4], int(m[1]), int(m[2])
                if name not in best or own < best[name][0]:
                    best[name] = (own, cum)
    return best


def _package(name: str) -> str:
    parts = name.split(".")
    if parts[0] == "gpuwatch" and len(parts) > 2 and parts[1] == "tui":
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if parts[0] == "gpuwatch" else parts[0]


def _med(xs: list[float], fmt: str = ".3f") -> str:
    return "" if not xs else f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}..{max(xs):{fmt}})"


FIELDS = ("gpus", "pcie", "disk", "procs", "host", "stacks")


def _first_calls(starts: list[dict]) -> list[str]:
    """Each collector's probe and first sample: when they ran (wall from exec) and the CPU their
    own thread spent in them. Wall far above CPU is time spent waiting, for the GIL above all
    while the main thread imports and lays out (or, for the sample, the first rate window)."""
    rows = []
    for f in FIELDS:
        for call in ("probe", "sample"):
            got = [(s["marks"][f"{call} starts: {f}"], s["marks"][f"{call} ends: {f}"]) for s in starts
                   if f"{call} starts: {f}" in s["marks"] and f"{call} ends: {f}" in s["marks"]]
            if got:
                rows.append(f"| {f} {call} | {_med([a['t'] for a, _ in got])} | {_med([b['t'] for _, b in got])} | "
                            f"{_med([b.get('thread_cpu', 0.0) * 1e3 for _, b in got], '.1f')} | {len(got)} |")
    if not rows:
        return []
    return ["", "Collectors' probes and first samples on their own threads: wall s from exec, and the CPU ms "
            "their thread spent in the call (the first sample waits out the rest of the rate window), "
            "median (min..max):", "", "| call | starts at | ends at | thread CPU ms | starts |", "|---|---|---|---|---|",
            *rows]


def report(starts: list[dict], imports: dict[str, tuple[int, int]]) -> str:
    md = ["Seconds from exec (wall) and the main thread's CPU seconds by then, median (min..max) of "
          f"{len(starts)} starts; `-` where a stage did not happen in any start.", "",
          "| stage | wall s | main-thread CPU s | starts |", "|---|---|---|---|"]
    for stage in STAGES:
        got = [s["marks"][stage] for s in starts if stage in s["marks"]]
        walls = [g["t"] for g in got]
        cpus = [g["main_cpu"] for g in got if g.get("main_cpu") is not None]
        md.append(f"| {stage} | {_med(walls) or '-'} | {_med(cpus) or '-'} | {len(got)} |")
    seen = [s["marker_s"] for s in starts if s["marker_s"] is not None]
    md.append(f"| marker `PID <pid>` seen by the bench | {_med(seen) or '-'} | | {len(seen)} |")
    pending = collections.Counter(f for s in starts for f in s["marks"].get("first round in", {}).get("still_pending", ()))
    if pending:
        md += ["", "First round cut at its limit with collectors still pending: "
               + ", ".join(f"{f} ({n} starts)" for f, n in pending.items()) + "."]
    md += _first_calls(starts)
    painted = [s["marks"].get("first frame with data written to the terminal", {}) for s in starts]
    gc_cpu = [p["gc_cpu"] for p in painted if "gc_cpu" in p]
    md += ["", f"Garbage collection up to the first painted frame, CPU s (all threads): {_med(gc_cpu) or '-'}."]
    spans = [s["marks"].get(LAST_MARK, {}).get("spans", {}) for s in starts]
    md += ["", "Main-thread CPU in these steps up to the first painted frame (they nest: CSS is applied "
           "inside a show; each alone, they do not add up), median of the starts:", "",
           "| step | CPU ms | calls |", "|---|---|---|"]
    for label in sorted({k for sp in spans for k in sp}):
        vals = [sp[label] for sp in spans if label in sp]
        md.append(f"| {label} | {statistics.median(v[0] for v in vals) * 1e3:.1f} | "
                  f"{statistics.median(v[1] for v in vals):g} |")
    if imports:
        total = sum(own for own, _ in imports.values())
        by_pkg = collections.Counter()
        for name, (own, _) in imports.items():
            by_pkg[_package(name)] += own
        md += ["", f"`python -X importtime -c '{IMPORTS}'` (fastest of 2 runs per module): {total / 1e3:.0f} ms "
               "of imports in all (importtime's own overhead included).", "",
               "| package | self ms |", "|---|---|"]
        md += [f"| {pkg} | {us / 1e3:.1f} |" for pkg, us in by_pkg.most_common(25)]
        md += ["", "| module | self ms | cumulative ms |", "|---|---|---|"]
        top = sorted(imports.items(), key=lambda kv: -kv[1][0])[:25]
        md += [f"| {name} | {own / 1e3:.1f} | {cum / 1e3:.1f} |" for name, (own, cum) in top]
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--pid", type=int, default=None, help="trace starts on this running job instead of the steady job")
    p.add_argument("--starts", type=int, default=3)
    p.add_argument("--out", required=True)
    ns = p.parse_args(argv)
    os.makedirs(ns.out, exist_ok=True)
    job = None
    if ns.pid is None:
        reader, job = observe.launch_job(ns)
    starts = []
    try:
        if job is not None:
            observe.wait_warm(reader, job, observe.warmup_s(ns))
        pid = job.pid if job is not None else ns.pid
        for i in range(ns.starts):
            starts.append(one_start(["--pid", str(pid)], f"PID {pid}", os.path.join(ns.out, f"marks_{i + 1}.jsonl")))
            print(f"start {i + 1}: marker at {starts[-1]['marker_s']} s", flush=True)
            time.sleep(1.0)  # let the stopped one's exit settle before the next start
    finally:
        if job is not None:
            observe.stop_job(job)
    imports = importtime()
    result = {"schema": 1, "bench": "startup_trace", "device": ns.device, "workers": ns.workers, "pid": ns.pid,
              "machine": observe.machine(), "starts": starts,
              "importtime_us": {k: list(v) for k, v in imports.items()}}
    observe.write_results(ns.out, "startup_trace", result, f"TUI start-up trace ({ns.device}, job with "
                          f"{ns.workers} workers)" if ns.pid is None else f"TUI start-up trace (PID {ns.pid})",
                          report(starts, imports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
