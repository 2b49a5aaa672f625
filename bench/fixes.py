"""Estimated vs measured speed-up of each fix, from saved accuracy runs (no GPU needed).

A scenario with a fix runs twice in one ``bench/accuracy.py --out DIR`` run: as it is ("before")
and with the fix ("after"). Each reports its own steps/s in its end marker. This reads both and
sets beside the measured gain the speed-up gpuwatch estimated while watching "before":

- ``estimate (now)``: the recording of "before" replayed through today's diagnosis
  (``gpuwatch.analysis.Analysis``), the median over the ticks after the warm-up of the fix's own
  expected gain (``Verdict.gains``, diagnosis/fix_gains.py: the figure shown beside that remedy),
  whatever stage they name, with the stage most of them named and how many of the scored ticks
  named the scenario's true stage (refreshable after a change of the diagnosis, no GPU run);
- ``ceiling (now)``: the same median of the verdict's ``speedup``, "the most the job could gain with
  the stage's whole cost gone", the upper bound of every fix; where a verdict's samples could not
  bound its wait below the cap's share (nearly all of a few samples waiting), its figure is the floor
  they bound instead (``speedup_floor``), so the median reads lower than the ceiling and a fix's own
  figure may be above it (``ceiling_floors_now``: the share of those ticks whose figure was a floor);
- ``up to, now``: where the estimate is partial and bounded (``FixGain.upper``: keeping workers
  whose waits are mostly their sets' start-up), the same median of the most the fix can give; a
  bound is right where it is at least the measured gain (its median is over the ticks that carried
  a bound, which may be fewer than the estimate's);
- ``then``: the fix's own estimate and the ceiling, medians over the verdicts gpuwatch printed
  during the run (recordings made before the per-fix estimates existed carry only the ceiling).

Each realistic fix (more workers, persistent workers, pinned memory, a cheaper transform) is set
against its own estimate; where the bench has it, the job whose input costs nothing
(``imagefolder_gpu``: the same model and loop on batches already on the GPU) is set against the
ceiling, which is what it means. ``ratio`` = estimate / measured (1.0 is exact; the target is
within 1.5x either way).

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
from gpuwatch.model.verdict import CHEAPER_TRANSFORM, MORE_WORKERS, PERSISTENT_WORKERS, PINNED_MEMORY  # noqa: E402

CEILING = "ceiling"
PAIRS = (
    ("imagefolder_few", "imagefolder_persistent", "more workers (2 -> 14)", MORE_WORKERS),
    ("imagefolder_epochs", "imagefolder_persistent", "persistent_workers=True", PERSISTENT_WORKERS),
    ("imagefolder_few", "imagefolder_cheap", "cheaper transform (half-scale JPEG decode)", CHEAPER_TRANSFORM),
    ("imagefolder_few", "imagefolder_gpu", "input made free (upper bound)", CEILING),
    ("imagefolder_epochs", "imagefolder_gpu", "input made free (upper bound)", CEILING),
    ("tokenize", "tokenize_workers", "more workers (2 -> 12)", MORE_WORKERS),
    ("lightning", "lightning_persistent", "persistent_workers=True", PERSISTENT_WORKERS),
    ("h2d", "h2d_pinned", "pinned memory + non_blocking", PINNED_MEMORY),
)
"""(before, after, the fix in words, the fix's key in ``Verdict.gains`` or CEILING for the stage made
free): scenario names of bench/scenarios/__init__.py."""


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


def gain(v: dict, fix: str) -> float | None:
    """The verdict's estimate for ``fix`` (its ceiling for CEILING), as a number or None."""
    if fix == CEILING:
        x = v.get("speedup")
    else:
        x = next((g.get("factor") for g in v.get("gains") or () if g.get("fix") == fix), None)
    return float(x) if isinstance(x, (int, float)) else None


def upper(v: dict, fix: str) -> float | None:
    """The most the verdict says ``fix`` can give beside a partial figure (FixGain.upper), or None."""
    x = next((g.get("upper") for g in v.get("gains") or () if g.get("fix") == fix), None)
    return float(x) if isinstance(x, (int, float)) else None


def estimates(recording: Path, markers: list[dict], stage: str, fix: str = CEILING,
              warmup: float = WARMUP_S) -> dict:
    """Median estimate for ``fix`` and median ceiling on scored ticks (and how many named ``stage``):
    replayed now, and as printed then."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.model.codec import to_dict
    from gpuwatch.replay import load_frames

    analysis = Analysis()
    now, walls = [], []
    for frame in load_frames(str(recording)):
        v = to_dict(analysis.update(frame))
        walls.append(frame.wall)
        now.append((verdict_stage(v), gain(v, fix), gain(v, CEILING), upper(v, fix),
                    (1.0 if v.get("speedup_floor") else 0.0) if gain(v, CEILING) is not None else None))
    then, then_walls = [], []
    opener = __import__("gzip").open if recording.suffix == ".gz" else open
    with opener(recording, "rt") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("type") == "tick" and isinstance(rec.get("verdict"), dict):
                then_walls.append(float((rec.get("frame") or {}).get("wall", 0.0)))
                then.append((verdict_stage(rec["verdict"]), gain(rec["verdict"], fix), gain(rec["verdict"], CEILING)))

    def pick(rows, ws, col):
        kept = [row for row, k in zip(rows, _scored(markers, ws, warmup)) if k]
        named = Counter(row[0] for row in kept if row[col] is not None).most_common(1)
        return (_median([row[col] for row in kept if row[col] is not None]), named[0][0] if named else None,
                sum(row[0] == stage for row in kept), len(kept))

    (e_now, st_now, n_now, scored), (c_now, _, _, _) = pick(now, walls, 1), pick(now, walls, 2)
    u_now = pick(now, walls, 3)[0]
    floors = [row[4] for row, k in zip(now, _scored(markers, walls, warmup)) if k and row[4] is not None]
    f_now = sum(floors) / len(floors) if floors else None  # share of the ceilings that were floors
    (e_then, _, _, _), (c_then, st_then, n_then, _) = pick(then, then_walls, 1), pick(then, then_walls, 2)
    return {"now": e_now, "upper_now": u_now, "now_stage": st_now, "now_right": n_now, "ceiling_now": c_now,
            "ceiling_floors_now": f_now, "then": e_then,
            "ceiling_then": c_then, "then_stage": st_then, "then_right": n_then, "scored": scored}


def _recording(d: Path, name: str) -> Path | None:
    for p in (d / f"{name}.jsonl", d / f"{name}.jsonl.gz"):
        if p.exists():
            return p
    return None


def table(d: Path) -> tuple[list[dict], str]:
    saved = json.loads((d / "accuracy.json").read_text())
    by = {r["scenario"]: r for r in saved["results"]}
    rows = []
    for before, after, fix, key in PAIRS:
        if before not in by or after not in by:
            continue
        b, a = by[before], by[after]
        sb, sa = steps_per_s(b), steps_per_s(a)
        measured = round(sa / sb, 2) if sb and sa else None
        truth = next((m["stage"] for m in truth_markers(b.get("markers_seen", [])) if "stage" in m), None)
        rec = _recording(d, before)
        est = estimates(rec, b["markers_seen"], truth, key) if rec and truth else {}
        ratio = round(est["now"] / measured, 2) if est.get("now") and measured else None
        rows.append({"before": before, "after": after, "fix": fix, "key": key, "truth": truth, "steps_per_s_before": sb,
                     "steps_per_s_after": sa, "measured": measured, **{f"estimate_{k}": v for k, v in est.items()},
                     "ratio": ratio})
    lines = ["| before -> after | fix | steps/s before -> after | measured | the fix's estimate now (stage; right ticks) "
             "| up to, now (ticks with a bound) | estimate then | ceiling now | ceiling then (stage) | estimate / measured |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = (lambda x, p=2: "-" if x is None else f"{x:.{p}f}")
        fx = (lambda x, p=2: "-" if x is None else f"{x:.{p}f}x")
        lines.append(
            f"| {r['before']} -> {r['after']} | {r['fix']} | {f(r['steps_per_s_before'])} -> "
            f"{f(r['steps_per_s_after'])} | {fx(r['measured'])} | {fx(r.get('estimate_now'))} "
            f"({r.get('estimate_now_stage') or '-'}; {r.get('estimate_now_right', 0)}/{r.get('estimate_scored', 0)}) "
            f"| {fx(r.get('estimate_upper_now'))} | {fx(r.get('estimate_then'))} | {fx(r.get('estimate_ceiling_now'), 1)}"
            f"{' or more' if (r.get('estimate_ceiling_floors_now') or 0.0) > 0.5 else ''} "
            f"| {fx(r.get('estimate_ceiling_then'), 1)} ({r.get('estimate_then_stage') or '-'}) "
            f"| {f(r['ratio'])} |")
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
