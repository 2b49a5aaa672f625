"""How often gpuwatch names the right stage: run each scenario, watch it, score the verdicts.

For every scenario: start it (``python -m bench.scenarios.<module>``), wait for its first
ground-truth marker (setup done), attach ``python -m gpuwatch --pid P --json`` until the job ends,
and score the tick stream against the markers:
- ``accuracy``: share of ticks at least ``--warmup`` seconds after a marker whose verdict is the
  marker's stage;
- ``latency_s`` per marker: time from the marker to the first right verdict held for 2 ticks;
- ``changes``: verdict changes among the scored ticks (a steady job should have none);
- ``outside_cores``: mean CPU used by processes outside the job and gpuwatch during the run (a
  busy host is contention of its own, whatever the scenario).

Usage, from the repository root::

    python -m bench.accuracy --device cpu --scenarios io,decode --duration 30 --out out/acc
    python3 -m bench.accuracy --device cuda --scenarios healthy,h2d,gpu_memory,launch --out out/acc-gpu

``--out DIR`` keeps the recordings (``<name>.jsonl``, replayable with ``gpuwatch replay``), both
processes' stderr, ``accuracy.json`` and ``accuracy.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a file: make `bench` importable
    sys.path.insert(0, str(ROOT))

from bench.scenarios import BY_NAME, SCENARIOS, Scenario, default_names  # noqa: E402
from bench.scenarios._common import CPU_COMPUTE  # noqa: E402

WARMUP_S = 8.0
"""Ticks this soon after a marker are not scored: gpuwatch judges a ~10 s window and wants the
same answer for ~3 windows (signals.md section 11), so a fair verdict needs a few seconds."""
HOLD_TICKS = 2
"""A verdict counts as 'found' after a switch once it is right on this many ticks in a row."""
SETUP_TIMEOUT_S = 300.0
"""Longest wait for a scenario's first marker (torch import, data generation, CUDA init)."""
EXIT_GRACE_S = 120.0
"""How long past its planned end a scenario may run before it is killed."""
DEFAULT_PHASE_S = 20.0


@dataclass(frozen=True)
class Tick:
    wall: float
    stage: str
    confidence: float | None = None
    candidate: str | None = None


def verdict_stage(verdict: dict) -> str:
    """The stage a verdict names, as ground truth spells it.

    gpuwatch reports a CPU-only job whose own compute is the limit as stage ``cpu_bound``; recordings
    made before that stage existed say "unknown" with a non-zero confidence (an undecided verdict
    has confidence 0). Both read as the scenarios' ``cpu_compute``.
    """
    stage = str(verdict.get("stage", "none"))
    conf = verdict.get("confidence")
    if stage == "cpu_bound" or (stage == "unknown" and isinstance(conf, (int, float)) and conf > 0):
        return CPU_COMPUTE
    return stage


def parse_tick(line: str) -> Tick | None:
    """One ``--json`` line -> Tick (None for anything that is not a tick)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("type") != "tick":
        return None
    frame, verdict = rec.get("frame") or {}, rec.get("verdict") or {}
    wall = frame.get("wall")
    if not isinstance(wall, (int, float)):
        return None
    return Tick(float(wall), verdict_stage(verdict), verdict.get("confidence"), verdict.get("candidate"))


def truth_markers(markers: list[dict]) -> list[dict]:
    """The markers with each stage as the job really ran it: a scenario with ``by_share`` whose end
    marker measured its share at or above the cut gets that stage (same for live runs and rescoring,
    so recordings made before the rule are scored by it too)."""
    end = next((m for m in markers if m.get("event") == "end"), None)
    scenario = BY_NAME.get(str(end.get("scenario"))) if end else None
    rule = scenario.by_share if scenario else None
    if rule is None:
        return markers
    key, cut, stage = rule
    share = end.get(key)
    if not isinstance(share, (int, float)) or share < cut:
        return markers
    return [{**m, "stage": stage, "stage_at_start": m["stage"]} if "stage" in m else m for m in markers]


def segments(markers: list[dict]) -> list[tuple[str, float, float]]:
    """(stage, start, end) for each stage marker (the stage the job really ran, ``truth_markers``);
    the end is the next marker (or the end event)."""
    out: list[tuple[str, float, float]] = []
    for m in sorted(truth_markers(markers), key=lambda m: m["t"]):
        if out and out[-1][2] == float("inf"):
            out[-1] = (out[-1][0], out[-1][1], float(m["t"]))
        if "stage" in m:
            out.append((str(m["stage"]), float(m["t"]), float("inf")))
    return out


def score(markers: list[dict], ticks: list[Tick], warmup: float = WARMUP_S, hold: int = HOLD_TICKS) -> dict:
    """Score verdicts against ground truth (pure: markers and ticks in, numbers out)."""
    ticks = sorted(ticks, key=lambda t: t.wall)
    per_marker, scored, changes = [], [], 0
    confusion: dict[str, Counter] = {}
    for stage, start, end in segments(markers):
        inside = [t for t in ticks if start <= t.wall < end]
        right = [t.stage == stage for t in inside]
        latency = next(
            (inside[i].wall - start for i in range(len(inside) - hold + 1) if all(right[i:i + hold])), None
        )
        after = [t for t in inside if t.wall >= start + warmup]
        changes += sum(1 for a, b in pairwise(after) if a.stage != b.stage)
        confusion.setdefault(stage, Counter()).update(t.stage for t in after)
        scored += [(stage, t) for t in after]
        per_marker.append({
            "stage": stage, "t": start, "ticks": len(after), "right": sum(t.stage == stage for t in after),
            "latency_s": None if latency is None else round(latency, 2),
        })
    n_right = sum(t.stage == stage for stage, t in scored)
    confs = [t.confidence for _, t in scored if isinstance(t.confidence, (int, float))]
    return {
        "ticks": len(ticks),
        "scored": len(scored),
        "right": n_right,
        "accuracy": round(n_right / len(scored), 3) if scored else None,
        "markers": per_marker,
        "changes": changes,
        "verdicts": dict(Counter(t.stage for _, t in scored).most_common()),
        "confusion": {k: dict(v.most_common()) for k, v in confusion.items()},
        "mean_confidence": round(sum(confs) / len(confs), 3) if confs else None,
    }


@dataclass
class _Lines:
    """Reads a pipe on a thread, keeping what ``keep`` turns into something."""

    stream: object
    keep: object
    items: list = field(default_factory=list)
    first: threading.Event = field(default_factory=threading.Event)

    def start(self) -> threading.Thread:
        def read() -> None:
            for line in self.stream:  # type: ignore[attr-defined]
                item = self.keep(line)  # type: ignore[operator]
                if item is not None:
                    self.items.append(item)
                    self.first.set()

        th = threading.Thread(target=read, daemon=True)
        th.start()
        return th


class _OutsideLoad:
    """Samples, once a second, the CPU used on this host by processes outside the watched job and
    outside gpuwatch: a busy neighbour is a cause of its own, so a single-stage ground truth only
    holds while this stays small. psutil deltas per live process; a process's first sighting only
    sets its baseline."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots
        self.samples: list[float] = []
        self.steal: list[float] = []
        """The hypervisor's steal per second, as a share of all the host's CPUs (a cause of its own:
        the diagnosis counts steal >= thresholds.STEAL as contention)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> float | None:
        self._stop.set()
        self._thread.join(5)
        return round(sum(self.samples) / len(self.samples), 2) if self.samples else None

    def _ours(self, seen: dict) -> float:
        import psutil

        used = 0.0
        for root in self.roots:
            try:
                procs = [psutil.Process(root)]
                procs += procs[0].children(recursive=True)
            except (psutil.Error, IndexError, ValueError):
                # IndexError: psutil 7.2's parent map reads every /proc/PID/stat, and a process that
                # exits mid-read leaves an empty one; this sampler thread died of it (CPU VM, busy_host).
                continue
            for pr in procs:
                try:
                    key, t = (pr.pid, pr.create_time()), sum(pr.cpu_times()[:2])
                except psutil.Error:
                    continue
                if key in seen:
                    used += max(0.0, t - seen[key])
                seen[key] = t
        return used

    def _run(self) -> None:
        import psutil

        def busy_and_steal() -> tuple[float, float]:
            c = psutil.cpu_times()
            steal = getattr(c, "steal", 0.0)
            return c.user + c.system + getattr(c, "nice", 0.0) + getattr(c, "irq", 0.0) + \
                getattr(c, "softirq", 0.0) + steal, steal

        cpus = psutil.cpu_count() or 1
        seen: dict = {}
        self._ours(seen)
        (last_busy, last_steal), last_t = busy_and_steal(), time.monotonic()
        while not self._stop.wait(1.0):
            ours, (now_busy, now_steal), now = self._ours(seen), busy_and_steal(), time.monotonic()
            dt = max(1e-3, now - last_t)
            self.samples.append(max(0.0, (now_busy - last_busy) - ours) / dt)
            self.steal.append(max(0.0, now_steal - last_steal) / dt / cpus)
            last_busy, last_steal, last_t = now_busy, now_steal, now

    def steal_share(self) -> float | None:
        return round(sum(self.steal) / len(self.steal), 3) if self.steal else None


def _marker(line: str) -> dict | None:
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and "t" in rec and ("stage" in rec or "event" in rec) else None


def _stop_group(proc: subprocess.Popen, wait: float = 10.0) -> None:
    """End a process we started in its own session, with its DataLoader workers and hogs."""
    if proc.poll() is not None:
        return
    for sig, pause in ((signal.SIGTERM, wait), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(pause)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return ""


def run_scenario(sc: Scenario, device: str, duration: float, phase: float = DEFAULT_PHASE_S,
                 warmup: float = WARMUP_S, gpuwatch_args: list[str] | None = None,
                 out_dir: Path | None = None) -> dict:
    """Run one scenario with gpuwatch attached; returns its score (plus ``error`` when it failed)."""
    logs = out_dir or Path(tempfile.mkdtemp(prefix="gpuwatch-acc-"))
    logs.mkdir(parents=True, exist_ok=True)
    timing = ["--phase", str(phase)] if sc.name == "switch" else ["--duration", str(duration)]
    cmd = [sys.executable, "-m", f"bench.scenarios.{sc.module}", "--device", device, *timing, *sc.args]
    planned = phase * 6 if sc.name == "switch" else duration  # switch: at most 6 phases
    result: dict = {"scenario": sc.name, "device": device, "command": shlex.join(cmd), "error": None,
                    "logs": str(logs)}
    job = watcher = None
    job_log, gw_log = logs / f"{sc.name}.scenario.log", logs / f"{sc.name}.gpuwatch.log"
    with open(job_log, "w") as job_err, open(gw_log, "w") as gw_err:
        try:
            job = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=job_err, text=True,
                                   start_new_session=True)
            markers = _Lines(job.stdout, _marker)
            marker_reader = markers.start()
            deadline = time.monotonic() + SETUP_TIMEOUT_S
            while not markers.first.wait(0.5):
                if job.poll() is not None or time.monotonic() > deadline:
                    result["error"] = f"no ground-truth marker (rc={job.poll()}): {_tail(job_log)}"
                    return result
            gw = [sys.executable, "-m", "gpuwatch", "--pid", str(job.pid), "--json"]
            if out_dir is not None:
                gw += ["--record", str(out_dir / f"{sc.name}.jsonl")]
            gw += list(gpuwatch_args or [])
            result["gpuwatch"] = shlex.join(gw)
            watcher = subprocess.Popen(gw, cwd=ROOT, stdout=subprocess.PIPE, stderr=gw_err, text=True,
                                       start_new_session=True)
            ticks = _Lines(watcher.stdout, parse_tick)
            reader = ticks.start()
            load = _OutsideLoad([job.pid, watcher.pid])
            load.start()
            try:
                job.wait(planned + EXIT_GRACE_S)
            except subprocess.TimeoutExpired:
                result["error"] = f"scenario ran {EXIT_GRACE_S:.0f} s past its planned end; killed"
            result["outside_cores"] = load.stop()
            result["steal_share"] = load.steal_share()
            result["host_cpus"] = os.cpu_count()
            _stop_group(job)
            try:
                watcher.wait(15)  # gpuwatch ends by itself one tick after its target exits
            except subprocess.TimeoutExpired:
                result["error"] = result["error"] or "gpuwatch did not end after the job exited; killed"
            _stop_group(watcher)
            reader.join(5)
            marker_reader.join(5)  # the end marker is in before scoring
            result["job_rc"], result["gpuwatch_rc"] = job.returncode, watcher.returncode
            if job.returncode not in (0, None) and not result["error"]:
                result["error"] = f"scenario exited with rc={job.returncode}: {_tail(job_log)}"
            if watcher.returncode not in (0, None) and not result["error"]:
                result["error"] = f"gpuwatch exited with rc={watcher.returncode}: {_tail(gw_log)}"
            result["markers_seen"] = markers.items
            result.update(score(markers.items, ticks.items, warmup))
            if not ticks.items and not result["error"]:
                result["error"] = f"gpuwatch printed no ticks: {_tail(gw_log)}"
            return result
        finally:
            for p in (watcher, job):
                if p is not None:
                    _stop_group(p)


def _fmt_latency(markers: list[dict]) -> str:
    out = [("-" if m["latency_s"] is None else f"{m['latency_s']:.0f}") for m in markers]
    return " / ".join(out) if out else "-"


def markdown(results: list[dict], header: dict) -> str:
    lines = [
        f"# gpuwatch accuracy ({header['device']}, {header['started']})",
        "",
        f"gpuwatch args: `{header['gpuwatch_args'] or '(none)'}`; warm-up {header['warmup_s']:g} s; "
        f"a switch counts as found after {HOLD_TICKS} right ticks in a row.",
        "",
        "| scenario | truth | scored ticks | right | verdicts (scored ticks) | s to right verdict | changes "
        "| outside CPU (cores) | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        truth = " -> ".join(m["stage"] for m in r.get("markers", [])) or "-"
        acc = "-" if r.get("accuracy") is None else f"{r['accuracy']:.0%}"
        # every stage named: a switch scenario's fourth phase is as much a result as its first three
        verdicts = ", ".join(f"{k} {v}" for k, v in r.get("verdicts", {}).items()) or "-"
        err = (r.get("error") or "").replace("|", "/")[:120]
        lines.append(f"| {r['scenario']} | {truth} | {r.get('scored', 0)} | {acc} | {verdicts} | "
                     f"{_fmt_latency(r.get('markers', []))} | {r.get('changes', '-')} | "
                     f"{r.get('outside_cores', '-')} of {r.get('host_cpus', '-')} | {err} |")
    return "\n".join(lines) + "\n"


def _save(out: Path, header: dict, results: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "accuracy.json").write_text(json.dumps({"header": header, "results": results}, indent=2))
    (out / "accuracy.md").write_text(markdown(results, header))


def _auto_device() -> str:
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Score gpuwatch's verdicts on the bottleneck scenarios.")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--scenarios", default=None, help="comma-separated names (default: all for the device)")
    p.add_argument("--duration", type=float, default=40.0, help="seconds per single-stage scenario")
    p.add_argument("--phase", type=float, default=DEFAULT_PHASE_S, help="seconds per phase of the switch job")
    p.add_argument("--warmup", type=float, default=WARMUP_S)
    p.add_argument("--out", default=None, help="write recordings, logs, accuracy.json and accuracy.md here")
    p.add_argument("--gpuwatch-args", default="", help='extra gpuwatch options, e.g. "--interval 0.5"')
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = p.parse_args(argv)
    if args.list:
        for s in SCENARIOS:
            cpu = f" (cpu: {' -> '.join(s.cpu_stages)})" if s.cpu_stages else ""
            print(f"{s.name:17} {'/'.join(s.devices):9} {' -> '.join(s.stages) or '(from markers)'}{cpu}")
        return 0
    device = _auto_device() if args.device == "auto" else args.device
    names = args.scenarios.split(",") if args.scenarios else default_names(device)
    bad = [n for n in names if n not in BY_NAME or device not in BY_NAME[n].devices]
    if bad:
        p.error(f"no scenario {bad} on {device}; see --list")
    out = Path(args.out) if args.out else None
    gw_args = shlex.split(args.gpuwatch_args)
    header = {"device": device, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "gpuwatch_args": args.gpuwatch_args,
              "warmup_s": args.warmup, "duration_s": args.duration, "phase_s": args.phase, "python": sys.executable}
    results = []
    for n in names:
        print(f"accuracy: running {n} on {device} ...", file=sys.stderr, flush=True)
        r = run_scenario(BY_NAME[n], device, args.duration, args.phase, args.warmup, gw_args,
                         out)
        acc = "-" if r.get("accuracy") is None else f"{r['accuracy']:.0%}"
        print(f"accuracy: {n}: {acc} right of {r.get('scored', 0)} ticks; {r.get('error') or 'ok'}",
              file=sys.stderr, flush=True)
        results.append(r)
        if out is not None:  # after every scenario: a run cut short by a time limit keeps what it did
            _save(out, header, results)
    if out is not None:
        _save(out, header, results)
    print(markdown(results, header))
    return 1 if any(r.get("error") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
