"""Verdict stability on a busy host: a steady job, CPU hogs beside it, verdict changes per minute.

Starts ``--hogs`` busy-loop processes outside the job (bench/scenarios/_hog.py: real processes, not
in the job's tree, gone with this one), then runs each steady scenario with gpuwatch attached
(bench/accuracy.run_scenario, recordings kept) and counts how often the verdict changes among the
ticks after the warm-up: ``changes_per_min`` over the scored stretch. A steady job should change
verdict at most once a minute whatever the neighbour does (issue 20 item 5); which stage it names is
reported too (on a host this busy, contention is a fair answer; flipping is not).
``--replay DIR`` recomputes the figures from a saved run with today's diagnosis (no new run).

    python -m bench.busy_host --hogs 1 --duration 180 --out bench/results/2026-12-03-busy-2core
    python -m bench.busy_host --replay bench/results/2026-12-03-busy-2core
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.accuracy import WARMUP_S, run_scenario  # noqa: E402
from bench.scenarios import BY_NAME, Scenario  # noqa: E402
from bench.scenarios import _hog  # noqa: E402

STEADY = {
    "imagefolder_few": BY_NAME["imagefolder_few"],
    "io_inline": Scenario("io_inline", "io_bound", ("io",), ("cpu",), ("--workers", "0")),
    "healthy": BY_NAME["healthy"],
}
"""Steady jobs: torchvision decode with one worker; the disk reader with no workers (issue 20's
disk-bound job); the CPU compute-bound MLP."""


def per_minute(result: dict, interval_s: float = 1.0) -> dict:
    """Changes per minute over the scored ticks (one tick every ``interval_s``)."""
    minutes = max(1e-9, result.get("scored", 0) * interval_s / 60.0)
    return {"scenario": result["scenario"], "scored": result.get("scored", 0), "changes": result.get("changes"),
            "changes_per_min": round(result["changes"] / minutes, 2) if result.get("scored") else None,
            "verdicts": result.get("verdicts", {}), "outside_cores": result.get("outside_cores"),
            "steal_share": result.get("steal_share")}


def markdown(rows: list[dict], header: dict) -> str:
    lines = [f"# Verdict changes on a busy host ({header.get('host', '?')}, {header.get('started', '?')})", "",
             f"{header.get('hogs')} busy-loop hog(s) beside the job; {header.get('duration_s')} s a job; "
             f"warm-up {WARMUP_S:g} s not scored.", "",
             "| steady job | scored ticks | changes | changes / min | verdicts | outside CPU (cores) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        verdicts = ", ".join(f"{k} {v}" for k, v in r["verdicts"].items())
        lines.append(f"| {r['scenario']} | {r['scored']} | {r['changes']} | {r['changes_per_min']} | {verdicts} "
                     f"| {r['outside_cores']} |")
    return "\n".join(lines) + "\n"


def replay(d: Path) -> list[dict]:
    from bench.rescore import rescore_one

    saved = json.loads((d / "busy.json").read_text())
    rows = []
    for r in saved["results"]:
        rec = next((p for p in (d / f"{r['scenario']}.jsonl", d / f"{r['scenario']}.jsonl.gz") if p.exists()), None)
        if rec is None or not r.get("markers_seen"):
            continue
        rows.append(per_minute({**r, **rescore_one(rec, r["markers_seen"])}))
    print(markdown(rows, {**saved["header"], "started": saved["header"]["started"] + ", replayed now"}))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", default="imagefolder_few,io_inline", help=f"from {', '.join(STEADY)}")
    p.add_argument("--hogs", type=int, default=1, help="busy-loop processes beside the job")
    p.add_argument("--duration", type=float, default=180.0)
    p.add_argument("--out", default=None)
    p.add_argument("--replay", default=None, help="recompute from a saved run's recordings")
    ns = p.parse_args(argv)
    if ns.replay:
        replay(Path(ns.replay))
        return 0
    names = ns.scenarios.split(",")
    if any(n not in STEADY for n in names):
        p.error(f"steady jobs: {', '.join(STEADY)}")
    out = Path(ns.out) if ns.out else None
    header = {"host": f"{platform.node() or 'host'}, {os.cpu_count()} CPUs, {platform.machine()}",
              "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "hogs": ns.hogs, "duration_s": ns.duration}
    results, rows = [], []
    for name in names:
        pids = _hog.spawn_hogs("cpu", ns.hogs, ns.duration + 300) if ns.hogs else []
        try:
            r = run_scenario(STEADY[name], "cpu", ns.duration, out_dir=out)
        finally:
            _hog.stop_hogs(pids)
        r["hog_pids"] = pids
        results.append(r)
        rows.append(per_minute(r))
        print(f"busy_host: {name}: {rows[-1]['changes']} changes in {rows[-1]['scored']} ticks; {r.get('error') or 'ok'}",
              file=sys.stderr, flush=True)
        if out is not None:
            (out / "busy.json").write_text(json.dumps({"header": header, "results": results}, indent=2))
    md = markdown(rows, header)
    if out is not None:
        (out / "busy.md").write_text(md)
    print(md)
    return 1 if any(r.get("error") for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
