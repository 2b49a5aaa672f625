"""Recordings: the headless JSON stream written to a file (JSONL), and read back.

Line 1 is a header; every other line is one tick, the same object ``--json`` prints. A bad line
(truncated, not JSON, wrong schema, too long) is reported with its number and skipped, so the good
lines of a damaged recording still replay. A recording whose name ends in ``.gz`` is read through
gzip (JSONL compresses about 20x; a long run is easier to keep and to share).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from gpuwatch import __version__
from gpuwatch.model.codec import SCHEMA_VERSION, DecodeError, from_dict, to_dict
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict

if TYPE_CHECKING:
    from gpuwatch.multirank import RankTick

MAX_LINE = 8 * 1024 * 1024
"""A line longer than this is rejected unread (a frame is a few kB)."""


def tick_record(frame: Frame, verdict: Verdict | None, ranks: RankTick | None = None) -> dict[str, Any]:
    """The JSON object for one tick, as streamed by ``--json`` and stored in recordings. ``ranks``
    (a multi-rank job's tick, :mod:`gpuwatch.multirank`) adds the ``ranks`` and ``straggler`` keys;
    without it (single-process jobs) they are left out."""
    rec: dict[str, Any] = {"schema": SCHEMA_VERSION, "type": "tick", "frame": to_dict(frame)}
    rec["verdict"] = to_dict(verdict) if verdict is not None else None
    if ranks is not None:
        rec.update(ranks.to_json())
    return rec


def header_record(note: str = "") -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "type": "header",
        "gpuwatch": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "note": note,
    }


def dumps(rec: dict[str, Any]) -> str:
    return json.dumps(rec, separators=(",", ":"), allow_nan=False)


class RecordingError(Exception):
    """Writing a recording failed; watching goes on."""


class Recorder:
    """Appends ticks to a JSONL file. Every line is flushed whole, so the file is valid up to
    its last line even if gpuwatch is killed or the disk fills up."""

    def __init__(self, path: str, note: str = "") -> None:
        self.path = path
        self._f: IO[str] | None = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.lines = 0
        self.error: str | None = None
        self._write(dumps(header_record(note)))

    @property
    def active(self) -> bool:
        return self._f is not None

    def write(self, frame: Frame, verdict: Verdict | None, ranks: RankTick | None = None) -> None:
        if self._f is not None:
            self._write(dumps(tick_record(frame, verdict, ranks)))

    def _write(self, line: str) -> None:
        assert self._f is not None
        try:
            self._f.write(line + "\n")
            self._f.flush()
            self.lines += 1
        except OSError as e:
            self.error = f"recording stopped: {e.strerror or e} ({self.path})"
            self._abort()
            raise RecordingError(self.error) from e

    def _abort(self) -> None:
        """Drop a partly written last line so the file ends on a whole line."""
        f, self._f = self._f, None
        if f is None:
            return
        try:
            f.close()
        except OSError:
            pass
        try:
            _truncate_to_last_newline(self.path)
        except OSError:
            pass

    def close(self) -> None:
        f, self._f = self._f, None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


def _truncate_to_last_newline(path: str) -> None:
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        pos = size
        while pos > 0:
            step = min(4096, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                f.truncate(pos - step + i + 1)
                return
            pos -= step
        f.truncate(0)


@dataclass(frozen=True, slots=True)
class Tick:
    line: int
    frame: Frame
    verdict: dict[str, Any] | None
    """The verdict as recorded (replay recomputes its own; this is kept for comparison)."""


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def read_recording(path: str) -> Iterator[Tick | BadLine]:
    """Yield each good tick and each bad line of a recording, in file order.

    Raises OSError if the file cannot be opened.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        for n, raw in enumerate(_lines(f), start=1):
            if raw is _DAMAGED:
                yield BadLine(n, "the compressed data ends early or is damaged; the rest is skipped")
                return
            if raw is None:
                yield BadLine(n, f"longer than {MAX_LINE // (1024 * 1024)} MiB, skipped")
                continue
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except (ValueError, UnicodeDecodeError) as e:
                yield BadLine(n, f"not valid JSON ({_short(e)}); truncated?")
                continue
            if not isinstance(rec, dict):
                yield BadLine(n, "not a JSON object")
                continue
            schema = rec.get("schema")
            if schema != SCHEMA_VERSION:
                yield BadLine(n, f"schema version {schema!r}, this gpuwatch reads {SCHEMA_VERSION}")
                continue
            kind = rec.get("type")
            if kind == "header":
                continue
            if kind != "tick":
                yield BadLine(n, f"unknown record type {kind!r}")
                continue
            try:
                frame = from_dict(Frame, rec.get("frame"))
            except (DecodeError, TypeError, ValueError) as e:
                yield BadLine(n, f"bad frame: {_short(e)}")
                continue
            verdict = rec.get("verdict")
            yield Tick(n, frame, verdict if isinstance(verdict, dict) else None)


_DAMAGED = b"\0damaged"
"""What _lines yields, last, when a gzip stream breaks off (a copy cut short, a disk that filled)."""


def _lines(f: IO[bytes]) -> Iterator[bytes | None]:
    """Lines of a binary file, None for a line over MAX_LINE (read past without keeping it)."""
    while True:
        try:
            line = f.readline(MAX_LINE + 1)
        except (EOFError, zlib.error, gzip.BadGzipFile):
            yield _DAMAGED
            return
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while True:  # skip the rest of the over-long line
                rest = f.readline(MAX_LINE)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _short(e: Exception) -> str:
    s = str(e)
    return s if len(s) <= 120 else s[:117] + "..."
