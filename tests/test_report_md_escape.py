"""The Markdown report escapes every string the job or a recording chose, in check reasons and in
"Not checked, and why" too: a mount point, a data path or an unsupported reading's reason quoted
there must not become HTML, a link or emphasis once the report is rendered (review 32, item 1)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from markdown_it import MarkdownIt

from gpuwatch.model.values import Unsupported
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown
from gpuwatch.replay import load_frames
from tests.test_report_checks import make_env
from gpuwatch.collectors.environment import StorageEnv

DEMO = Path(__file__).parent / "data" / "demo" / "demo_cpu_exit.jsonl.gz"
EVIL_PATH = "/data/<img src=x onerror=alert(1)>/[click me](javascript:alert(2))"
EVIL_MOUNT = "/mnt_<img src=x onerror=alert(7)>"
EVIL_REASON = "NVML gone <img src=y onerror=alert(3)> [docs](javascript:alert(4)) **bold**"


def _recording(tmp_path: Path, network: bool) -> Path:
    """The demo recording with every data location moved to a job-chosen path and mount point
    (on NFS when ``network``), and its GPU readings unsupported for a reason carrying HTML, a link
    and emphasis (as /tmp/review32/mk_md.py built it)."""
    out = tmp_path / f"inject_{network}.jsonl.gz"
    with gzip.open(DEMO, "rt") as src, gzip.open(out, "wt") as dst:
        for line in src:
            d = json.loads(line)
            if d["type"] == "tick":
                fr = d["frame"]
                for loc in fr["disk"].get("locations", []) if isinstance(fr["disk"], dict) else []:
                    loc.update(network=network, fstype="nfs4" if network else "tmpfs", path=EVIL_PATH,
                               mountpoint=EVIL_MOUNT)
                fr["gpus"] = {"unsupported": EVIL_REASON}
            dst.write(json.dumps(d) + "\n")
    return out


def _tokens(text: str) -> list:
    out = []
    for t in MarkdownIt("commonmark").enable("table").parse(text):
        out += [t, *(t.children or [])]
    return out


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _assert_inert(text: str) -> None:
    """No HTML, link or strong emphasis once rendered (the report's own *check titles* are the only
    emphasis), and the job's text still there, written out."""
    bad = [t for t in _tokens(text) if t.type in ("html_inline", "html_block", "link_open", "strong_open")]
    assert bad == [], bad
    assert "onerror" in text


def test_check_and_gap_reasons_from_a_recording_are_escaped(tmp_path):
    for network in (True, False):
        path = _recording(tmp_path, network)
        md = render_markdown(build_report(from_frames(load_frames(str(path))), NOT_RECORDED, "replay", path=str(path)))
        checks, gaps = _section(md, "Checks"), _section(md, "Not checked, and why")
        row = next(line for line in checks.splitlines() if "| Data on local storage |" in line)
        assert ("nfs4" if network else "tmpfs") + " at /mnt\\_\\<img src=x onerror=alert(7)>" in row, row
        if network:  # the path is quoted too, its link brackets escaped
            assert "(/data/\\<img src=x onerror=alert(1)>/\\[click me\\](javascript:alert(2)))" in row, row
        assert "Why: NVML gone \\<img src=y onerror=alert(3)> \\[docs\\](javascript:alert(4)) \\*\\*bold\\*\\*" in gaps
        _assert_inert(checks)
        _assert_inert(gaps)
        # rendered as a reader sees it: the tag is text, not an element
        html = MarkdownIt("commonmark").enable("table").render(md)
        assert "<img" not in html and "<strong>bold" not in html and 'href="javascript' not in html
        assert "&lt;img src=y onerror=alert(3)&gt;" in html


def test_a_live_mount_point_in_a_gap_reason_is_escaped_and_an_interrupt_is_said_once():
    """The environment's storage names the job's own mount point ("tmpfs at M is not backed by one
    block device"); and a watch stopped by Ctrl-C says "interrupted" once, not "stopped early
    (stopped early (interrupted))"."""
    frames = load_frames(str(DEMO))
    got = from_frames(frames)
    got.ended, got.early = "stopped early (interrupted)", True
    storage = (StorageEnv("cwd", f"{EVIL_MOUNT}/run", EVIL_MOUNT, "tmpfs", "tmpfs", False,
                          Unsupported(f"tmpfs at {EVIL_MOUNT} is not backed by one block device"), 0),)
    env = make_env(storage=storage)
    md = render_markdown(build_report(got, env, "live", pid=frames[-1].target.pid, requested_s=600))
    gaps = _section(md, "Not checked, and why")
    assert "Why: tmpfs at /mnt\\_\\<img src=x onerror=alert(7)> is not backed by one block device" in gaps, gaps
    _assert_inert(gaps)
    _assert_inert(_section(md, "Checks"))
    assert "**Watching ended early** (interrupted): this report covers only the " in md
    assert "stopped early (stopped early" not in md and "(stopped early (interrupted))" not in md
    assert "; stopped early (interrupted)." in md  # the opening line keeps the JSON report's words
