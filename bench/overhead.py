"""What watching costs the watched job: steps per second with and without gpuwatch attached.

Starts bench/steady_job.py, waits for it to warm up, then runs phases of ``--phase`` seconds:
alone, gpuwatch TUI (under a 200x60 pty), alone, gpuwatch --json, alone, gpuwatch --json at the
fastest sampling the CLI accepts, alone, ... ``--rounds`` times. Each observer is started before its
phase and stopped after it (its attach time, to the first frame, is reported apart), and each observer
phase is judged against the mean of the two alone phases around it. Steps are counted exactly (the
job's step counter, bench/observe.py), not taken from a median step time: a pause of a few ms every
second hides from a median but not from the count (h200-signatures.md, "What observing costs").

    python -m bench.overhead --device cuda --phase 6 --rounds 3 --out DIR    # ~3 min on the H200
    python -m bench.overhead --device cpu --workers 2 --phase 3 --rounds 1 --out /tmp/ovh   # smoke test
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe

FASTEST = ("--interval", "0.2", "--stack-rate", "50")
"""The fastest sampling gpuwatch/cli.py accepts: --interval from 0.2 s, --stack-rate up to 50 Hz."""
TARGET_RATIO = 0.99
"""The issue's target: the job keeps >= 99 % of its steps/s with gpuwatch attached at defaults."""


def observers(pid: int) -> list[observe.Observer]:
    return [observe.gpuwatch_tui(pid), observe.gpuwatch_headless(pid), observe.gpuwatch_headless(pid, *FASTEST)]


def run_phases(ns: argparse.Namespace, reader: observe.StepReader, job, obs: list[observe.Observer],
               log=print) -> list[dict]:
    by_name = {o.name: o for o in obs}
    records: list[dict] = []
    for i, name in enumerate(observe.schedule([o.name for o in obs], ns.rounds)):
        rec: dict = {"phase": i, "observer": name}
        run = None
        try:
            if name is not None:
                run = observe.start(by_name[name])
                rec["attach_s"] = run.wait_marker(observe.ATTACH_TIMEOUT_S)
                time.sleep(observe.SETTLE_S)
            a = reader.mark()
            time.sleep(ns.phase)
            b = reader.mark()
        finally:
            if run is not None:
                rec["observer_alive"] = run.alive()
                rec["observer_exit"] = run.stop()
                if rec["attach_s"] is None or not rec["observer_alive"]:
                    rec["observer_output"] = run.tail()
        rec.update(steps=b[1] - a[1], seconds=round(b[0] - a[0], 4), steps_per_s=observe.rate(a, b))
        records.append(rec)
        attach = "" if name is None else f" attach {_f(rec['attach_s'], '.2f')} s"
        log(f"phase {i:2d} {name or 'alone':45s} {rec['steps']:6d} steps {rec['steps_per_s']:9.1f}/s{attach}")
        if job.poll() is not None:
            raise RuntimeError(f"the steady job exited with {job.returncode} during phase {i}")
        if name is not None:
            time.sleep(observe.SETTLE_S)
    return records


def summarise(records: list[dict], obs: list[observe.Observer]) -> list[dict]:
    rates = [r["steps_per_s"] for r in records]
    alone = rates[::2]  # schedule(): alone phases are the even ones
    mean_alone = sum(alone) / len(alone)
    rows = [{"observer": "alone", "phases": len(alone), "steps_per_s": observe.spread(alone),
             "ratio": observe.spread([x / mean_alone for x in alone])}]
    for o in obs:
        idx = [i for i, r in enumerate(records) if r["observer"] == o.name]
        ratios = [observe.neighbours_ratio(rates, i) for i in idx]
        attach = [records[i]["attach_s"] for i in idx if records[i]["attach_s"] is not None]
        rows.append({
            "observer": o.name, "argv": o.argv, "phases": len(idx),
            "steps_per_s": observe.spread([rates[i] for i in idx]),
            "ratio": observe.spread(ratios), "ratios": ratios,
            "attach_s": observe.spread(attach), "no_first_frame": len(idx) - len(attach),
            "observer_died": sum(not records[i]["observer_alive"] for i in idx),
        })
    return rows


def _f(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _range(s: dict, fmt: str) -> str:
    return f"{_f(s['min'], fmt)}..{_f(s['max'], fmt)}"


def markdown(rows: list[dict], phase_s: float) -> str:
    body = []
    for r in rows:
        ratio, sps = r["ratio"], r["steps_per_s"]
        notes = []
        if r.get("no_first_frame"):
            notes.append(f"no first frame in {r['no_first_frame']} phase(s)")
        if r.get("observer_died"):
            notes.append(f"observer exited early in {r['observer_died']} phase(s)")
        attach = r.get("attach_s")
        per_phase = None if sps["mean"] is None else sps["mean"] * phase_s
        body.append([
            r["observer"], r["phases"], _f(sps["mean"], ".1f"), _f(per_phase, ".0f"),
            _f(ratio["mean"], ".3f"), _range(ratio, ".3f"),
            "" if attach is None else f"{_f(attach['mean'], '.2f')} ({_range(attach, '.2f')})",
            "; ".join(notes),
        ])
    head = ["observer", "phases", "steps/s", f"steps per {phase_s:g} s", "vs alone (mean)", "min..max",
            "attach s (min..max)", "notes"]
    return observe.table(head, body) + (
        f"\n\nEach observer phase is divided by the mean of the alone phases before and after it; the alone "
        f"row shows each alone phase over the mean of all of them (the noise floor). Target: >= {TARGET_RATIO:.2f} "
        f"for gpuwatch at defaults.\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="steps/s of a steady job with and without gpuwatch watching it")
    observe.add_job_options(p, workers=4)
    p.add_argument("--phase", type=float, default=6.0, help="seconds per phase (default 6)")
    p.add_argument("--rounds", type=int, default=3, help="times each observer is tried (default 3)")
    p.add_argument("--out", required=True, help="folder for overhead.json, overhead.md and the job's log")
    ns = p.parse_args(argv)
    warmup = observe.warmup_s(ns)
    reader, job = observe.launch_job(ns)
    try:
        observe.wait_warm(reader, job, warmup)
        obs = observers(job.pid)
        n = len(observe.schedule([o.name for o in obs], ns.rounds))
        print(f"steady job pid {job.pid} warm; {n} phases of {ns.phase:g} s", flush=True)
        records = run_phases(ns, reader, job, obs, log=lambda s: print(s, flush=True))
    finally:
        observe.stop_job(job)
    rows = summarise(records, obs)
    md = markdown(rows, ns.phase)
    result = {"schema": 1, "bench": "overhead", "device": ns.device, "phase_s": ns.phase, "rounds": ns.rounds,
              "workers": ns.workers, "warmup_s": warmup, "settle_s": observe.SETTLE_S, "machine": observe.machine(),
              "summary": rows, "phases": records}
    observe.write_results(ns.out, "overhead", result, f"Overhead on the watched job ({ns.device}, {ns.workers} workers)", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
