"""Nothing from the job can act on the terminal or the report (issue 22 items 1-2, end to end).

A real job (tests/jobs/hostile_names.py) puts the issue's string (an OSC window title, a
clear-screen CSI, newlines and a Markdown heading), 8-bit C1 controls, bidi overrides and a
Markdown link into its argv, process name, a thread's name, a function's name and the file name
its code claims, and a secret on its command line. Watched for real, with py-spy, its strings
reach every output: the --json stream and the recording, the TUI (live and replay, main and stacks
screens), the Markdown and HTML reports and the Prometheus endpoint. None may carry a raw control
character; the Markdown may have no heading or link of the job's; the secret appears nowhere. The
escaped form (``\\x1b]0;PWNED``) is visible, so the test sees the strings did arrive.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.pyspy import find_pyspy
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.source import LiveSource, ReplaySource
from gpuwatch.tui.app import GpuwatchApp
from gpuwatch.untrusted import is_clean
from tests.adversarial import ISSUE_22, raw_controls
from tests.test_tui_fixtures import settle

pytestmark = [pytest.mark.slow, pytest.mark.skipif(find_pyspy() is None, reason="py-spy is not installed")]

GW = [sys.executable, "-m", "gpuwatch"]
JOB = Path(__file__).parent / "jobs" / "hostile_names.py"
SECRET = "K9-hostile-secret"
SEEN = "\\x1b]0;PWNED"
"""The issue's OSC sequence as it must show: written out, not acted on."""


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    ready = tmp_path_factory.mktemp("hostile") / "ready"
    proc = subprocess.Popen([sys.executable, str(JOB), str(ready), ISSUE_22, "--api-key", SECRET,
                             "https://h.example/x?sig=" + SECRET])
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), "the hostile job did not start"
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def recorded(job, tmp_path_factory):
    """A real --json watch of the job with a recording: (stdout lines, recording path)."""
    rec = tmp_path_factory.mktemp("rec") / "hostile.jsonl"
    r = subprocess.run(GW + ["--pid", str(job), "--json", "--duration", "3", "--interval", "0.5", "--stack-rate", "20",
                             "--record", str(rec)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    return r.stdout.splitlines(), rec


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def test_json_stream_and_recording_hold_no_raw_control_and_no_secret(recorded):
    lines, rec = recorded
    for text in (*lines, *rec.read_text().splitlines()):
        assert SECRET not in text
        strings = list(_strings(json.loads(text)))
        assert [s for s in strings if not is_clean(s)] == []
    everything = "\n".join(lines)
    assert SEEN.replace("\\", "\\\\") in everything  # JSON-escaped backslash: the escape is visible
    # the job's function, thread and file names came through py-spy, cleaned
    assert "PWNED" in json.dumps([json.loads(x)["frame"]["stacks"] for x in lines])
    assert "THREAD" in everything and "evil" in everything


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_reports_hold_no_raw_control_heading_link_or_secret(recorded, fmt):
    _, rec = recorded
    r = subprocess.run(GW + ["diagnose", "--replay", str(rec), "--format", fmt], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    out = r.stdout
    assert raw_controls(out.replace("\n", "").replace("\t", "")) == []
    assert SECRET not in out and "PWNED" in out
    if fmt == "md":  # parsed as a Markdown renderer does (markdown-it-py, CommonMark + tables)
        from markdown_it import MarkdownIt

        tokens = []
        for t in MarkdownIt("commonmark").enable("table").parse(out):
            tokens += [t, *(t.children or [])]
        headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
        assert not [h for h in headings if "INJECTED" in h or "file" in h], headings
        assert not [t for t in tokens if t.type == "link_open" and "evil" in str(t.attrs.get("href"))]
        assert not [t for t in tokens if t.type in ("html_inline", "html_block")]
    if fmt == "html":
        assert "evil.example" not in re.findall(r'href="([^"]*)"', out)


def test_prometheus_labels_hold_no_raw_control(job):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gw = subprocess.Popen(GW + ["--pid", str(job), "--json", "--duration", "20", "--interval", "0.5",
                                "--prometheus", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3):
            gw.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            body = resp.read().decode("utf-8")
    finally:
        gw.terminate()
        gw.communicate(timeout=30)
    assert "gpuwatch_" in body and SECRET not in body
    assert raw_controls(body.replace("\n", "")) == []


def terminal_text(app) -> str:
    """Every character the screen sends to the terminal as text (Rich's own control segments,
    cursor moves, left out): a raw ESC here would act on the user's terminal."""
    from rich.console import Console

    w, h = app.size
    console = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, legacy_windows=False)
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return "".join(seg.text for seg in console.render(update) if not seg.control)


async def _check_screens(app, pilot) -> str:
    shown = []
    for keys in ((), ("s",), ("escape",)):
        await pilot.press(*keys)
        await pilot.pause()
        text = terminal_text(app)
        assert raw_controls(text.replace("\n", "")) == [], keys
        assert SECRET not in text
        shown.append(text)
    return "\n".join(shown)


async def test_tui_replay_shows_the_strings_written_out(recorded):
    _, rec = recorded
    app = GpuwatchApp(ReplaySource(str(rec), speed=0), self_cpu=lambda: 1.5)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, app)
        shown = await _check_screens(app, pilot)
    assert "PWNED" in shown or "THREAD" in shown or "evil" in shown


async def test_tui_live_shows_the_strings_written_out(job):
    target = Target(job)
    opts = WatchOptions(interval=0.5, gpus=None, stack_rate=20.0)
    app = GpuwatchApp(LiveSource(Watch(target, build_collectors(target, opts), interval=opts.interval)),
                      self_cpu=lambda: 1.5)
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                f.stacks is not None and "PWNED" in json.dumps(str(f.stacks)) for f in app.analysis.frames):
            await pilot.pause(0.2)
        await pilot.pause(0.5)
        shown = await _check_screens(app, pilot)
        await pilot.press("q")
    assert "PWNED" in shown or "THREAD" in shown or "evil" in shown
