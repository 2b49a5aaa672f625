"""What watching costs the watcher: CPU, memory and time to first frame of gpuwatch and its peers.

One steady job (bench/steady_job.py, 8 idle DataLoader workers) is watched for ``--duration``
seconds by each observer in turn, never two at once: the gpuwatch TUI (200x60 pty) and gpuwatch
--json at ``--interval``, nvitop's TUI at the same interval, ``nvidia-smi dmon -s puct`` (1 s), and
``py-spy top`` (pty). Each observer's process tree is sampled every 0.5 s (bench/observe.py):
CPU seconds of the observer and of its descendants (py-spy dumps included, exited ones too), RSS.
Alone phases of ``--alone`` seconds sit between the observers, so the job's steps/s under each one
is compared with its two neighbours. A tool that is not installed gets a row saying so.

    python -m bench.self --device cuda --duration 20 --out DIR              # ~3 min on the H200
    python -m bench.self --device cpu --workers 2 --duration 6 --alone 3 --out /tmp/self   # smoke test
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

STEADY_AFTER_S = 5.0
"""Start-up (imports, NVML init, first py-spy attach) is over by then; "steady" CPU and RSS are
taken after it (the issue's definition of steady RSS). Shorter runs use half their duration."""
MB = 1e6
# The issue's targets for gpuwatch watching a job with 8 workers at the default refresh.
TARGET_CPU_PCT = 5.0
"""Steady CPU of gpuwatch, its py-spy children included, in percent of one core."""
TARGET_RSS_MB = 150.0
TARGET_FIRST_FRAME_S = 1.5
TARGET_RATIO = 0.99


def observers(pid: int, interval: float, record_dir: str | None = None) -> list[observe.Observer]:
    iv = ("--interval", f"{interval:g}")
    rec = lambda name: () if record_dir is None else ("--record", os.path.join(record_dir, name))  # noqa: E731
    return [
        observe.gpuwatch_tui(pid, *iv, *rec("tui.jsonl")),
        observe.gpuwatch_headless(pid, *iv, *rec("json.jsonl")),
        # nvitop 1.7.2 runs its monitor when stdin/stdout are a tty; --interval sets its refresh
        # (default 2 s). Its first frame carries the driver version (tui/.../panels/device.py).
        observe.external(f"nvitop --interval {interval:g}", "nvitop", iv, True, "Driver Version:"),
        # dmon prints "#" header lines, then one line per GPU per second starting with the index
        observe.external("nvidia-smi dmon -s puct", "nvidia-smi", ("dmon", "-s", "puct"), False, r"(?m)^\d"),
        # py-spy top's table header (100 samples/s by default, each one pausing the job)
        observe.external("py-spy top", "py-spy", ("top", "--pid", str(pid)), True, "%Own"),
    ]


def chosen(obs: list[observe.Observer], skip: str, only: str) -> list[observe.Observer]:
    """The observers ``--skip`` (name prefixes) leaves and ``--only`` (words in the name) keeps."""
    skipped = tuple(x.strip() for x in skip.split(",") if x.strip())
    kept = tuple(x.strip().lower() for x in only.split(",") if x.strip())
    return [o for o in obs if not (skipped and o.name.startswith(skipped))
            and (not kept or any(w in o.name.lower() for w in kept))]


def watch_one(o: observe.Observer, duration: float, reader: observe.StepReader,
              steady_after_s: float = STEADY_AFTER_S) -> dict:
    steady_after = min(steady_after_s, duration / 2)
    run = observe.start(o)
    t0 = run.started
    rec: dict = {"observer": o.name, "argv": o.argv, "pty": o.pty}
    try:
        sampler = observe.TreeSampler(run.pid)
        rec["first_frame_s"] = run.wait_marker(duration)
        time.sleep(max(0.0, t0 + steady_after - time.monotonic()))
        a, s_a, th_a = reader.mark(), sampler.sample(), observe.thread_ticks(run.pid)
        time.sleep(max(0.0, t0 + duration - time.monotonic()))
        b, th_b = reader.mark(), observe.thread_ticks(run.pid)
        sampler.finish()
        rec["alive_at_end"] = run.alive()
    finally:
        rec["exit"] = run.stop()
    samples = sampler.samples
    end = samples[-1] if samples else None
    if end is None or s_a is None or not rec["alive_at_end"]:
        rec["error"] = f"exited early (exit {rec['exit']}): {run.tail(600)}"
    if end is not None:
        wall = end.t - t0
        rec.update(wall_s=wall, cpu_own_s=end.own_cpu, cpu_children_s=end.kids_cpu,
                   cpu_pct=100 * (end.own_cpu + end.kids_cpu) / wall)
    if end is not None and s_a is not None:
        dt = end.t - s_a.t
        rec.update(steady_cpu_pct=100 * (end.own_cpu + end.kids_cpu - s_a.own_cpu - s_a.kids_cpu) / dt,
                   steady_cpu_own_pct=100 * (end.own_cpu - s_a.own_cpu) / dt)
        if o.name.startswith("gpuwatch"):  # its threads are named (gpuwatch/threadname.py)
            rec["steady_threads_cpu_pct"] = observe.thread_cpu_pct(th_a, th_b, dt)
        half = next((s for s in samples if s.t >= t0 + duration / 2), None)
        if half is not None and end.t - half.t > 1.0:
            # the second half alone: after gpuwatch's stack sampling has relaxed on a steady
            # GPU-bound job (gpuwatch/pace.py: 10 ticks), when the run is long enough for that
            rec["late_cpu_pct"] = 100 * (end.own_cpu + end.kids_cpu - half.own_cpu - half.kids_cpu) / (end.t - half.t)
        later = [s for s in samples if s.t >= s_a.t]
        rec.update(rss_mb=statistics.median(s.own_rss for s in later) / MB,
                   children_rss_mb=statistics.median(s.kids_rss for s in later) / MB,
                   children_rss_max_mb=max(s.kids_rss for s in later) / MB)
    rec["job_steps_per_s"] = observe.rate(a, b)
    return rec


def run_all(ns, reader, job, obs: list[observe.Observer], log=print) -> list[dict]:
    present = [o for o in obs if o.argv is not None]
    rows: dict[str, dict] = {o.name: {"observer": o.name, "missing": o.missing} for o in obs if o.argv is None}
    alone: list[float] = []
    for name in observe.schedule([o.name for o in present], 1):
        if name is None:
            a = reader.mark()
            time.sleep(ns.alone)
            alone.append(observe.rate(a, reader.mark()))
            log(f"alone {alone[-1]:9.1f} steps/s")
            continue
        rec = watch_one(next(o for o in present if o.name == name), ns.duration, reader, ns.steady_after)
        rows[name] = rec
        log(f"{name:32s} cpu {rec.get('cpu_pct', float('nan')):5.1f} % first frame {rec.get('first_frame_s')} "
            f"job {rec['job_steps_per_s']:9.1f} steps/s {rec.get('error', '')}")
        if job.poll() is not None:
            raise RuntimeError(f"the steady job exited with {job.returncode} while {name} watched it")
        time.sleep(observe.SETTLE_S)
    for i, o in enumerate(present):  # observer i ran between alone phases i and i+1
        rec = rows[o.name]
        rec["job_vs_alone"] = rec["job_steps_per_s"] / ((alone[i] + alone[i + 1]) / 2)
    return [rows[o.name] for o in obs] + [{"observer": "alone", "job_steps_per_s": observe.spread(alone)}]


def _f(rec: dict, key: str, fmt: str) -> str:
    v = rec.get(key)
    return "–" if v is None else format(v, fmt)


def _cell(text: str, n: int = 160) -> str:
    """One table cell: whitespace collapsed, no pipes, the end kept (where an error says why)."""
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= n else "…" + text[-n:]


def markdown(rows: list[dict], duration: float, steady_after: float = STEADY_AFTER_S) -> str:
    body = []
    for r in rows:
        if r["observer"] == "alone":
            continue
        if r.get("missing"):
            body.append([r["observer"], r["missing"], *[""] * 8])
            continue
        body.append([r["observer"], _f(r, "cpu_pct", ".1f"), _f(r, "steady_cpu_pct", ".1f"),
                     _f(r, "steady_cpu_own_pct", ".1f"), _f(r, "late_cpu_pct", ".1f"), _f(r, "rss_mb", ".0f"),
                     f"{_f(r, 'children_rss_mb', '.0f')} / {_f(r, 'children_rss_max_mb', '.0f')}",
                     _f(r, "first_frame_s", ".2f"), _f(r, "job_vs_alone", ".3f"), _cell(r.get("error", ""))])
    head = ["observer", f"CPU % of a core ({duration:g} s, start-up incl.)",
            f"steady CPU % (from {min(steady_after, duration / 2):g} s on)",
            "of which the process itself", "CPU % in the second half", "steady RSS MB", "children RSS MB (median / max)",
            "first frame s", "job steps/s vs alone", "notes"]
    return (observe.table(head, body) + "\n\nCPU: seconds of the observer and all its descendants (exited ones "
            "included) over the wall time. Children RSS is sampled every 0.5 s, so short-lived py-spy dumps show "
            "only when a sample catches one.\n\n" + threads(rows) + verdicts(rows) + "\n")


def threads(rows: list[dict]) -> str:
    """gpuwatch's steady CPU per thread (exact, from /proc/PID/task): main is the event loop (the
    diagnosis, drawing, recording), gw-<field> a collector's reads."""
    out = []
    for r in rows:
        per = r.get("steady_threads_cpu_pct")
        if per:
            shown = ", ".join(f"{name} {pct:.2f}" for name, pct in per.items() if pct >= 0.005)
            out.append(f"- {r['observer']}, CPU % of a core per thread: {shown}")
    return ("\n".join(out) + "\n\n") if out else ""


def verdicts(rows: list[dict]) -> str:
    tui = next((r for r in rows if r["observer"].startswith("gpuwatch TUI")), {})
    checks = [("steady CPU % (children incl.)", tui.get("steady_cpu_pct"), TARGET_CPU_PCT, "<="),
              ("steady RSS MB (itself)", tui.get("rss_mb"), TARGET_RSS_MB, "<="),
              ("first frame s", tui.get("first_frame_s"), TARGET_FIRST_FRAME_S, "<="),
              ("job steps/s vs alone (one phase; bench/overhead.py repeats it)", tui.get("job_vs_alone"),
               TARGET_RATIO, ">=")]
    out = ["Targets for the gpuwatch TUI at the default refresh:"]
    for what, v, target, op in checks:
        ok = v is not None and (v <= target if op == "<=" else v >= target)
        out.append(f"- {what}: {'–' if v is None else format(v, '.3g')} (target {op} {target:g}): "
                   f"{'met' if ok else 'NOT met' if v is not None else 'not measured'}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="CPU, memory and first frame of gpuwatch and its peers")
    observe.add_job_options(p, workers=8)
    p.add_argument("--duration", type=float, default=20.0, help="seconds each observer watches (default 20)")
    p.add_argument("--alone", type=float, default=6.0, help="seconds of each alone phase (default 6)")
    p.add_argument("--interval", type=float, default=1.0, help="refresh of gpuwatch and nvitop (default 1: gpuwatch's)")
    p.add_argument("--out", required=True, help="folder for self.json, self.md and the job's log")
    p.add_argument("--steady-after", type=float, default=STEADY_AFTER_S,
                   help=f"seconds after an observer's start from which its CPU and RSS count as steady (default "
                        f"{STEADY_AFTER_S:g}). gpuwatch relaxes its stack sampling after 10 ticks of a GPU-bound "
                        "verdict (gpuwatch/pace.py), about 15 s in; 30 measures that state alone")
    p.add_argument("--record-dir", default=None, help="gpuwatch observers also record their frames and verdicts "
                   "here (tui.jsonl, json.jsonl): to see what the verdict and the stack pace did; costs them a JSON "
                   "line a tick")
    p.add_argument("--skip", default="", help="observers to leave out, comma-separated name prefixes "
                   '(e.g. "nvidia-smi,py-spy" when they were measured in an earlier run)')
    p.add_argument("--only", default="", help="observers to keep, comma-separated words any of which their name "
                   'holds, case aside (e.g. "tui" for the TUI alone: a long watch, its charts\' window full, '
                   "after --steady-after 440)")
    ns = p.parse_args(argv)
    if ns.record_dir:
        os.makedirs(ns.record_dir, exist_ok=True)
    warmup = observe.warmup_s(ns)
    reader, job = observe.launch_job(ns)
    try:
        observe.wait_warm(reader, job, warmup)
        obs = chosen(observers(job.pid, ns.interval, ns.record_dir), ns.skip, ns.only)
        print(f"steady job pid {job.pid} warm ({ns.workers} workers)", flush=True)
        rows = run_all(ns, reader, job, obs, log=lambda s: print(s, flush=True))
    finally:
        observe.stop_job(job)
    md = markdown(rows, ns.duration, ns.steady_after)
    result = {"schema": 1, "bench": "self", "device": ns.device, "duration_s": ns.duration, "alone_s": ns.alone,
              "interval_s": ns.interval, "workers": ns.workers, "warmup_s": warmup,
              "steady_after_s": min(ns.steady_after, ns.duration / 2), "machine": observe.machine(), "rows": rows}
    observe.write_results(ns.out, "self", result, f"What watching costs the watcher ({ns.device}, job with {ns.workers} workers)", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
