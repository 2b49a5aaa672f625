"""``gpuwatch diagnose``: watch a job (or read a recording), then print the whole checklist once.

The report holds the environment, the verdict timeline, per-stage evidence, periodic stalls, the
hottest stacks per thread role, remedies ranked by the speed-up they could bring, pass/warn/fail
checks, and everything that could not be read, with why. Markdown for people, JSON for tools, HTML
with charts over time (one self-contained file).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from gpuwatch.assemble import WatchOptions
from gpuwatch.collectors.environment import Environment, probe_environment
from gpuwatch.errors import UsageError
from gpuwatch.model.values import Maybe, Unsupported
from gpuwatch.output import check_writable, write_text
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import Collected, from_frames, watch_live
from gpuwatch.report.model import Report
from gpuwatch.report.progress import Progress
from gpuwatch.report.render_json import render_json
from gpuwatch.report.render_md import render_markdown
from gpuwatch.signals import rearm

NOT_RECORDED = Unsupported(
    "a recording holds frames only; the environment (driver, NUMA, cgroup, ptrace, storage) is "
    "probed by a live gpuwatch diagnose --pid PID"
)


def run_diagnose(ns: argparse.Namespace) -> int:
    """Entry point of ``gpuwatch diagnose`` (arguments already checked by cli.py). Returns the exit code."""
    if ns.output:
        check_writable(ns.output, getattr(ns, "force", False), (ns.replay,))
    if ns.replay:
        got, report = _replay(ns)
    else:
        try:
            got, env = asyncio.run(_live(ns))
        finally:
            rearm()  # the loop reset the signals to their defaults as it closed
        report = build_report(got, env, "live", pid=ns.pid, requested_s=ns.duration)
    if ns.format == "html":
        from gpuwatch.report.render_html import render_html
        from gpuwatch.report.series import run_series

        text = render_html(report, run_series(got.frames, got.verdicts))
    else:
        text = render_json(report) if ns.format == "json" else render_markdown(report)
    return write_text(text, ns.output, suffix=f".{ns.format}")  # md, json, html: each its file suffix


def _replay(ns: argparse.Namespace) -> tuple[Collected, Report]:
    from gpuwatch.replay import load_frames

    from gpuwatch.recording import BadLineReport, NotARecording, gave_up_words

    bad = BadLineReport(ns.replay)
    try:
        frames = load_frames(ns.replay, bad)
    except NotARecording as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot read recording {ns.replay}: {e.strerror or e}") from None
    finally:
        bad.close()
    whole = len(frames)
    if ns.duration is not None and frames:  # the recording's first --duration seconds
        frames = [f for f in frames if f.t - frames[0].t < ns.duration]
    got = from_frames(frames)
    if bad.cut_at is not None:
        # Not "end of the recording" with "1 unreadable line skipped": the half a truncated file
        # lost is said (trial 29: 45 s of 76 lost read as one line)
        got.ended = (f"the recording is cut short at line {bad.cut_at}, where its compressed data ends or is "
                     "damaged; what came after is lost")
        got.early = True
    if bad.gave_up_at is not None:
        got.ended = f"the recording is {gave_up_words(bad.gave_up_at)}"
        got.early = True
    if bad.joined_at is not None:
        got.ended = (f"the first of joined recordings: another one starts at line {bad.joined_at} and is not read "
                     "(report each on its own)")
    if len(frames) < whole:
        got.ended = f"--duration {ns.duration:g} s reached, {whole - len(frames)} later tick{'s' if whole - len(frames) != 1 else ''} left out"
    return got, build_report(got, NOT_RECORDED, "replay", path=ns.replay, requested_s=ns.duration,
                             bad_lines=bad.count)


def _probe(pid: int) -> Maybe[Environment]:
    try:
        return probe_environment(pid)
    except Exception as e:  # noqa: BLE001 - a probe bug must not throw away the watched minutes
        return Unsupported(f"the environment probe failed: {type(e).__name__}: {e}")


async def _live(ns: argparse.Namespace) -> tuple[Collected, Maybe[Environment]]:
    import psutil

    from gpuwatch.source import live_source

    loop = asyncio.get_running_loop()
    env_job = loop.run_in_executor(None, _probe, ns.pid)  # blocking reads: never on the event loop
    try:
        source = live_source(ns.pid, WatchOptions.from_args(ns), ns.duration)
    except psutil.Error as e:
        await env_job
        raise UsageError(f"cannot watch PID {ns.pid}: {e}") from None
    progress = Progress(sys.stderr, ns.duration, f"gpuwatch: diagnosing PID {ns.pid}")
    try:
        got = await watch_live(source, progress.tick)
    finally:
        progress.done()
    return got, await env_job
