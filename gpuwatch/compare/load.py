"""Reads one side of ``gpuwatch compare``: a recording (JSONL, optionally .gz) or a JSON report of
``gpuwatch diagnose --format json``. Anything else raises :class:`Unreadable` with one line."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass, replace

from gpuwatch.model.codec import DecodeError, from_dict
from gpuwatch.model.values import Unsupported
from gpuwatch.recording import NotARecording, open_recording
from gpuwatch.replay import load_frames
from gpuwatch.report.build import build_report
from gpuwatch.report.figures import Figures
from gpuwatch.report.gather import from_frames
from gpuwatch.report.series import Tick, run_series
from gpuwatch.untrusted import clean

MAX_REPORT = 64 * 1024 * 1024
"""A JSON report is read whole; one larger than this is not a report gpuwatch wrote."""


class Unreadable(Exception):
    """An input compare cannot use; the message is the one line the user sees."""


@dataclass(frozen=True, slots=True)
class Side:
    path: str
    kind: str
    """"recording" or "report"."""
    figures: Figures
    series: tuple[Tick, ...] | None
    """Per-tick series (recordings only: a JSON report holds the figures, not the ticks)."""
    bad_lines: int = 0


def load_side(path: str) -> Side:
    if os.path.isdir(path):
        raise Unreadable(f"{path} is a folder, not a recording or a report")
    if os.path.exists(path) and not os.path.isfile(path):  # each side is read twice (sniffed, then parsed)
        raise Unreadable(f"{path} is a pipe or a device: compare reads files (a .gz recording is read as it is)")
    try:
        first = _first_line(path)
    except FileNotFoundError:
        raise Unreadable(f"no such file: {path}") from None
    except OSError as e:
        raise Unreadable(f"cannot read {path}: {e.strerror or e}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile):
        raise Unreadable(f"{path}: the compressed data is damaged") from None
    if first is None:
        raise Unreadable(f"{path} is empty: neither a recording nor a report")
    if first.strip() == b"{":  # diagnose --format json is indented; a recording is one object a line
        return _report(path)
    try:
        return _recording(path)
    except Unreadable:
        if first.lstrip().startswith(b"{") and _one_line(path):  # a report compacted (json.tool --compact, jq -c)
            return _report(path)
        raise


def _one_line(path: str) -> bool:
    """Whether the file holds one non-blank line (a JSON document written on one line)."""
    with open_recording(path) as f:
        return sum(1 for line in f if line.strip()) == 1


def _first_line(path: str) -> bytes | None:
    """The first line that is not blank (its first 4 kB), or None for a file of blanks only."""
    with open_recording(path) as f:
        for _ in range(1000):
            line = f.readline(4096)
            if not line:
                return None
            if line.strip():
                return line
    return b"?"  # a thousand blank lines: let the recording reader say what it is


def _report(path: str) -> Side:
    try:
        if os.path.getsize(path) > MAX_REPORT:
            raise Unreadable(f"{path} is over {MAX_REPORT >> 20} MiB: not a gpuwatch report")
        with open_recording(path) as f:
            doc = json.loads(f.read(MAX_REPORT + 1))
    except OSError as e:
        raise Unreadable(f"cannot read {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError, EOFError, zlib.error):
        raise Unreadable(f"{path} is not valid JSON: neither a recording nor a report") from None
    if not isinstance(doc, dict) or doc.get("type") != "report":
        raise Unreadable(f"{path} is JSON but not a gpuwatch report (no \"type\": \"report\")")
    if doc.get("figures") is None:
        raise Unreadable(f"{path} is a report from a gpuwatch without run figures: "
                         "diagnose the recording again, or compare the recording itself")
    try:
        figures = from_dict(Figures, doc["figures"])
    except (DecodeError, TypeError, ValueError) as e:
        raise Unreadable(f"{path}: the report's figures do not read ({str(e)[:120]})") from None
    return Side(path=path, kind="report", figures=_neutral(figures), series=None)


def _neutral(f: Figures) -> Figures:
    """A report file is anyone's to edit: its strings lose control characters before any output."""
    left = f.speedup_left
    return replace(f, cmdline=clean(f.cmdline), gpus=tuple(clean(g) for g in f.gpus),
                   stage_shares=tuple((clean(s), v) for s, v in f.stage_shares),
                   speedup_left=replace(left, stage=clean(left.stage)) if left is not None else None)


def _recording(path: str) -> Side:
    bad: list[object] = []
    try:
        frames = load_frames(path, bad.append)
    except NotARecording as e:  # binary, a newer schema, no readable tick
        raise Unreadable(f"{path} holds no frames: neither a recording nor a report ({e.why})") from None
    except OSError as e:
        raise Unreadable(f"cannot read {path}: {e.strerror or e}") from None
    if not frames:
        why = f" ({bad[0]})" if bad else ""
        raise Unreadable(f"{path} holds no frames: neither a recording nor a report{why}")
    got = from_frames(frames)
    report = build_report(got, Unsupported("not needed for compare"), "replay", path=path, bad_lines=len(bad))
    assert report.figures is not None
    return Side(path=path, kind="recording", figures=report.figures, series=run_series(got.frames, got.verdicts),
                bad_lines=len(bad))
