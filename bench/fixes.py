"""Estimated vs measured speed-up of each fix, from saved accuracy runs (no GPU needed).

A scenario with a fix runs twice in one ``bench/accuracy.py --out DIR`` run: as it is ("before")
and with the fix ("after"). Each reports its own steps/s in its end marker. This reads both and
sets beside the measured gain the speed-up gpuwatch estimated while watching "before":

- ``estimate (now)``: the recording of "before" replayed through today's diagnosis
  (``gpuwatch.analysis.Analysis``), the median ``speedup`` over the ticks after the warm-up that
  carry one, whatever stage they name (what the user was shown), with the stage most of them named
  and how many of the scored ticks named the scenario's true stage (refreshable after a change of
  the diagnosis, no GPU run);
- ``estimate (then)``: the same median over the verdicts gpuwatch printed during the run.

gpuwatch's speed-up is "the most the job could gain if the stage were fixed", so it is compared
with the realistic fix (more workers, persistent workers, pinned memory, a cheaper transform) and, where the bench has
one, with the job whose input costs nothing (``imagefolder_gpu``: the same model and loop on
batches already on the GPU), which is what "fixed" means for an input-bound job.
``ratio`` = estimate / measured (1.0 is exact; the target is within 1.5x either way).

    python -m bench.fixes bench/results/2026-12-03-h200/field
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.accuracy import WARMUP_S, truth_markers, verdict_stage  # noqa: E402

PAIRS = (
    ("imagefolder_few", "imagefolder_persistent", "more workers (2 -> 14)"),
    ("imagefolder_epochs", "imagefolder_persistent", "persistent_workers=True"),
    ("imagefolder_few", "imagefolder_cheap", "cheaper transform (half-scale JPEG decode)"),
    ("imagefolder_few", "imagefolder_gpu", "input made free (upper bound)"),
    ("imagefolder_epochs", "imagefolder_gpu", "input made free (upper bound)"),
    ("tokenize", "tokenize_workers", "more workers (2 -> 12)"),
    ("lightning", "lightning_persistent", "persistent_workers=True"),
    ("h2d", "h2d_pinned", "pinned memory + non_blocking"),
)
"""(before, after, the fix): scenario names of bench/scenarios/__init__.py."""


def steps_per_s(result: dict) -> float | None:
    """The job's own steps/s: its end marker's ``steps_per_s``, else steps over start..end."""
    markers = result.get("markers_seen") or []
    end = next((m for m in markers if m.get("event") == "end"), None)
    start = next((m for m in markers if "stage" in m), None)
    if end is None:
        return None
    if isinstance(end.get("steps_per_s"), (int, float)):
        return float(end["steps_per_s"])
    if start is None or not end.get("steps") or end["t"] <= start["t"]:
        return None
    return end["steps"] / (end["t"] - start["t"])


def _scored(markers: list[dict], walls: list[float], warmup: float) -> list[bool]:
    start = min((m["t"] for m in markers if "stage" in m), default=None)
    end = max((m["t"] for m in markers if m.get("event") == "end"), default=float("inf"))
    return [start is not None and start + warmup <= w < end for w in walls]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def estimates(recording: Path, markers: list[dict], stage: str, warmup: float = WARMUP_S) -> dict:
    """Median speed-up on scored ticks (and how many named ``stage``): replayed now, and as printed then."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.model.codec import to_dict
    from gpuwatch.replay import load_frames

    analysis = Analysis()
    now, walls = [], []
    for frame in load_frames(str(recording)):
        v = to_dict(analysis.update(frame))
        walls.append(frame.wall)
        now.append((verdict_stage(v), v.get("speedup")))
    then, then_walls = [], []
    opener = __import__("gzip").open if recording.suffix == ".gz" else open
    with opener(recording, "rt") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "tick" and isinstance(rec.get("verdict"), dict):
                then_walls.append(float((rec.get("frame") or {}).get("wall", 0.0)))
                then.append((verdict_stage(rec["verdict"]), rec["verdict"].get("speedup")))

    def pick(pairs, ws):
        kept = [(st, x) for (st, x), k in zip(pairs, _scored(markers, ws, warmup)) if k]
        named = Counter(st for st, x in kept if isinstance(x, (int, float))).most_common(1)
        return (_median([x for _, x in kept if isinstance(x, (int, float))]), named[0][0] if named else None,
                sum(st == stage for st, _ in kept), len(kept))

    (e_now, st_now, n_now, scored), (e_then, st_then, n_then, _) = pick(now, walls), pick(then, then_walls)
    return {"now": e_now, "now_stage": st_now, "now_right": n_now, "then": e_then, "then_stage": st_then,
            "then_right": n_then, "scored": scored}


def _recording(d: Path, name: str) -> Path | None:
    for p in (d / f"{name}.jsonl", d / f"{name}.jsonl.gz"):
        if p.exists():
            return p
    return None


def table(d: Path) -> tuple[list[dict], str]:
    saved = json.loads((d / "accuracy.json").read_text())
    by = {r["scenario"]: r for r in saved["results"]}
    rows = []
    for before, after, fix in PAIRS:
        if before not in by or after not in by:
            continue
        b, a = by[before], by[after]
        sb, sa = steps_per_s(b), steps_per_s(a)
        measured = round(sa / sb, 2) if sb and sa else None
        truth = next((m["stage"] for m in truth_markers(b.get("markers_seen", [])) if "stage" in m), None)
        rec = _recording(d, before)
        est = estimates(rec, b["markers_seen"], truth) if rec and truth else {}
        ratio = round(est["now"] / measured, 2) if est.get("now") and measured else None
        rows.append({"before": before, "after": after, "fix": fix, "truth": truth, "steps_per_s_before": sb,
                     "steps_per_s_after": sa, "measured": measured, **{f"estimate_{k}": v for k, v in est.items()},
                     "ratio": ratio})
    lines = ["| before -> after | fix | steps/s before -> after | measured | estimate now (stage; right ticks) "
             "| estimate then (stage) | estimate / measured |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        f = (lambda x, p=2: "-" if x is None else f"{x:.{p}f}")
        lines.append(
            f"| {r['before']} -> {r['after']} | {r['fix']} | {f(r['steps_per_s_before'])} -> "
            f"{f(r['steps_per_s_after'])} | {f(r['measured'])}x | {f(r.get('estimate_now'), 1)}x "
            f"({r.get('estimate_now_stage') or '-'}; {r.get('estimate_now_right', 0)}/{r.get('estimate_scored', 0)}) "
            f"| {f(r.get('estimate_then'), 1)}x ({r.get('estimate_then_stage') or '-'}) | {f(r['ratio'])} |")
    return rows, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dirs", nargs="+", help="accuracy --out folders (accuracy.json + <scenario>.jsonl[.gz])")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    ns = p.parse_args(argv)
    out = []
    for d in map(Path, ns.dirs):
        if not (d / "accuracy.json").exists():
            print(f"fixes: error: no accuracy.json in {d}", file=sys.stderr)
            return 2
        rows, md = table(d)
        out += rows
        if not ns.json:
            print(f"{d}\n\n{md}")
    if ns.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
