"""Score saved accuracy runs again with the current diagnosis, without a GPU.

``bench/accuracy.py --out DIR`` keeps each scenario's recording (``<name>.jsonl``, or gzipped ``.jsonl.gz``) and its
ground-truth markers (``accuracy.json``). This replays every recording through today's
``gpuwatch.analysis.Analysis`` and scores it with the same ``score()``. Use it to check a change
of the diagnosis against the H200 runs; the held-out scenarios judge it in the end, so a rule
tuned until this reads 100 % proves nothing by itself.

    python -m bench.rescore bench/results/2026-12-02-h200/acc
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.accuracy import Tick, markdown, score, verdict_stage  # noqa: E402
from gpuwatch.analysis import Analysis  # noqa: E402
from gpuwatch.model.codec import to_dict  # noqa: E402
from gpuwatch.replay import load_frames  # noqa: E402


def rescore_one(recording: Path, markers: list[dict]) -> dict:
    analysis = Analysis()
    ticks = []
    for frame in load_frames(str(recording)):
        v = analysis.update(frame)
        ticks.append(Tick(frame.wall, verdict_stage(to_dict(v)), v.confidence, v.candidate))
    return score(markers, ticks)


def reading_ages(recording: Path) -> dict[str, float]:
    """Median age of each collector's reading at the frame that carries it (frame time minus the
    sample's own time, seconds): how late a frame shows what was read. The engine times reads to
    end just before each tick (gpuwatch/engine.py, aligned_start)."""
    ages: dict[str, list[float]] = {}
    for frame in load_frames(str(recording)):
        for field in ("gpus", "procs", "stacks"):
            value = getattr(frame, field)
            sample = value[0] if isinstance(value, tuple) and value else value
            t = getattr(sample, "t", None)
            if isinstance(t, (int, float)):
                ages.setdefault(field, []).append(frame.t - t)
    return {k: round(median(v), 2) for k, v in ages.items() if v}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", help="an accuracy --out folder (accuracy.json + <scenario>.jsonl)")
    ns = p.parse_args(argv)
    d = Path(ns.dir)
    saved = json.loads((d / "accuracy.json").read_text())
    results = []
    for r in saved["results"]:
        rec = d / f"{r['scenario']}.jsonl"
        if not rec.exists():  # kept compressed (gpuwatch reads .jsonl.gz as is)
            rec = d / f"{r['scenario']}.jsonl.gz"
        if not rec.exists() or not r.get("markers_seen"):
            results.append({**r, "error": r.get("error") or "no recording"})
            continue
        results.append({**r, **rescore_one(rec, r["markers_seen"]), "error": None})
    print(markdown(results, {**saved.get("header", {}), "rescored": True}))
    for r in results:
        rec = d / f"{r['scenario']}.jsonl"
        rec = rec if rec.exists() else d / f"{r['scenario']}.jsonl.gz"
        if rec.exists():
            ages = ", ".join(f"{k} {v:.2f} s" for k, v in reading_ages(rec).items())
            print(f"{r['scenario']}: readings' median age at their frame: {ages or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
