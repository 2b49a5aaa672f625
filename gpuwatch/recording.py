"""Recordings: the headless JSON stream written to a file (JSONL), and read back.

Line 1 is a header; every other line is one tick, the same object ``--json`` prints. A bad line
(truncated, not JSON, nested too deeply, a number out of range, a newer schema, too long) is
reported with its number and skipped, so the good lines of a damaged recording still replay. A
file that is not a recording at all (binary data, a device, a first line that is no gpuwatch
record, a newer gpuwatch's header, no readable tick) raises :class:`NotARecording`: one line for
the user, exit 2. Pipes and FIFOs are read as a stream, line by line, never reopened or rewound. A
recording whose name ends in ``.gz`` (or that starts with gzip's magic bytes) is read through gzip
(JSONL compresses about 20x; a long run is easier to keep and to share).
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import stat
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING, Any

from gpuwatch import __version__
from gpuwatch.model.codec import SCHEMA_VERSION, DecodeError, from_dict, to_dict, to_json
from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ProcsSample, worker_forks_as_others
from gpuwatch.model.verdict import Verdict
from gpuwatch.untrusted import clean

if TYPE_CHECKING:
    from gpuwatch.multirank import RankTick

MAX_WALL = 1e11
"""A frame's wall-clock time (Unix seconds) beyond this (the year 5138) is no time a watch ran at."""
MAX_INTERVAL = 3600.0
"""A frame's interval beyond an hour is no interval gpuwatch ever used (--interval allows 60 s)."""
MAX_LINE = 8 * 1024 * 1024
"""A line longer than this is rejected unread (a frame is a few kB)."""
MAX_SKIPPED = 10_000
"""Blank or unreadable lines, in all (not in a row), read before the rest of a file is left unread.
gpuwatch writes one tick per line and no blank line; a damaged recording holds a few bad lines.
Each one read costs time and a note: a 9 KB gzip file of 2 million ``{}`` lines held a replay 22 s and 281 MB, and one
of a GiB of newlines for minutes (review 50)."""


def tick_record(frame: Frame, verdict: Verdict | None, ranks: RankTick | None = None) -> dict[str, Any]:
    """The JSON object for one tick, as streamed by ``--json`` and stored in recordings. ``ranks``
    (a multi-rank job's tick, :mod:`gpuwatch.multirank`) adds the ``ranks`` and ``straggler`` keys;
    without it (single-process jobs) they are left out."""
    return _tick(frame, verdict, ranks, to_dict)


def tick_line(frame: Frame, verdict: Verdict | None, ranks: RankTick | None = None) -> str:
    """``dumps(tick_record(...))``, the line ``--json`` prints and a recording stores, written
    straight from the frame and verdict (codec.to_json) instead of through their dicts."""
    return to_json(_tick(frame, verdict, ranks, lambda obj: obj))


def _tick(frame: Frame, verdict: Verdict | None, ranks: RankTick | None, conv: Callable[[Any], Any]) -> dict[str, Any]:
    rec: dict[str, Any] = {"schema": SCHEMA_VERSION, "type": "tick", "frame": conv(frame)}
    rec["verdict"] = conv(verdict) if verdict is not None else None
    if ranks is not None:
        rec.update(ranks.to_json())
    return rec


def header_record(note: str = "") -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "type": "header",
        "gpuwatch": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": os.uname().nodename,  # platform.node()'s value, without importing platform at start-up
        "note": note,
    }


def dumps(rec: dict[str, Any]) -> str:
    return json.dumps(rec, separators=(",", ":"), allow_nan=False)


class RecordingError(Exception):
    """Writing a recording failed; watching goes on."""


class Recorder:
    """Appends ticks to a JSONL file. Every line is flushed whole, so the file is valid up to
    its last line even if gpuwatch is killed or the disk fills up.

    A name ending in ``.gz`` is written as gzip (zcat reads it; JSONL compresses about 20x) with a
    sync flush after each line: the compressed stream then ends on a byte boundary that holds the
    whole line, so a kill loses nothing written, only the trailer (which the reader does without:
    :func:`_ends_on_sync_flush`). Refusing the name would have kept that too, but a long run
    recorded compressed is what the name asks for.

    Every way a recording stops leaves a file that is whole: a close, a full disk, or a stop
    signal or Ctrl-C that breaks into a write or the close itself (the file then ends on its last
    whole line, a gzip one with its trailer: :meth:`_seal`). A recording stopped before its first
    tick keeps no file, as the TUI's ``r`` key does: a header alone replays nothing.

    Never destroys data: an existing file is refused (FileExistsError) unless ``force``. A FIFO
    is written only when something reads it (else OSError, instead of blocking for good); a
    character device (``/dev/null``, a terminal) is written as it is.

    Writes and the close may come from two threads (the TUI writes on its recording thread and
    closes on the main one when the watch ends): a line is written whole before the file closes."""

    _whole = 0
    """Bytes of the file that end on a whole line (a gzip file's length after its last flush)."""
    _crc = 0
    """CRC-32 of the uncompressed lines up to ``_whole`` (a gzip trailer's first field)."""
    _size = 0
    """Uncompressed bytes up to ``_whole`` (a gzip trailer's second field, modulo 2**32)."""
    _made: tuple[int, int] | None = None
    """(device, inode) of the regular file this Recorder created; None for a FIFO or a device."""
    removed = False
    """The file was removed: the recording stopped before its first tick."""

    def __init__(self, path: str, note: str = "", force: bool = False) -> None:
        self.path = path
        self._lock = threading.Lock()
        raw = _open_for_recording(path, force)
        self._raw = raw
        st = os.fstat(raw.fileno())
        self._made = (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None
        self._f: IO[bytes] | None = _GzipStream(raw, "wb") if path.endswith(".gz") else raw
        self.lines = 0
        self.error: str | None = None
        self._why = ""
        self._write(dumps(header_record(note)))

    @property
    def active(self) -> bool:
        return self._f is not None

    @property
    def ticks(self) -> int:
        """Ticks written so far (the header is not one)."""
        return max(0, self.lines - 1)

    def summary(self) -> str:
        """Where the recording is and what it holds, for the user once watching ends."""
        where = clean(os.path.abspath(self.path))  # the user's own name, yet written to their terminal
        stopped = f" (stopped early: {self._why})" if self._why else ""
        if self.removed:
            return f"recording {where}: stopped before its first tick, no file kept{stopped}"
        return f"recording {where}: {self.ticks} tick{'s' if self.ticks != 1 else ''}{stopped}"

    def write(self, frame: Frame, verdict: Verdict | None, ranks: RankTick | None = None) -> None:
        if self._f is not None:
            self.write_line(tick_line(frame, verdict, ranks))

    def write_line(self, line: str) -> None:
        """A tick's line as :func:`tick_line` wrote it (the --json stream writes it once for both)."""
        with self._lock:
            if self._f is not None:
                self._write(line)

    def _write(self, line: str) -> None:
        assert self._f is not None
        data = (line + "\n").encode("utf-8")
        try:
            self._f.write(data)
            self._f.flush()  # a GzipFile's flush is a zlib sync flush
        except OSError as e:
            self._why = str(e.strerror or e)
            self.error = f"recording stopped: {self._why} ({self.path})"
            self._abort()
            raise RecordingError(self.error) from e
        except BaseException:  # a stop signal or Ctrl-C in mid-line: the lines before it are kept
            self._abort()
            raise
        self._flushed(data)

    def _flushed(self, data: bytes) -> None:
        """Count a line written whole, and where the file ends after it."""
        self.lines += 1
        if self._f is not self._raw and self._raw.seekable():
            self._whole = self._raw.tell()
            self._crc = zlib.crc32(data, self._crc)
            self._size += len(data)

    def _abort(self) -> None:
        """Stop after a write that broke off: the file ends on its last whole line."""
        f, self._f = self._f, None
        if f is not None:
            self._shut(f, cut=True)

    def close(self) -> None:
        with self._lock:
            f, self._f = self._f, None
        if f is not None:
            self._shut(f, cut=False)

    def _shut(self, f: IO[bytes], cut: bool) -> None:
        """Close ``f``. Where a line was cut (``cut``), or the close itself fails or is interrupted
        (a full disk, a stop signal), the file is sealed on its last whole line instead; an
        interruption is raised on once the file is whole. A recording that holds no tick keeps no
        file."""
        try:
            f.close()
        except BaseException as e:
            cut = True
            if not isinstance(e, OSError):
                raise
        finally:
            if cut:
                self._seal(compressed=f is not self._raw)
            self._remove_if_empty()

    def _seal(self, compressed: bool) -> None:
        """End the file on its last whole line: a plain one after its last newline; a gzip one at
        its last sync flush, where a final empty block and the trailer complete the stream (gzip -t
        and zcat read it whole, not only gpuwatch's reader, which does without the trailer)."""
        try:
            self._raw.close()  # whatever it still buffers goes now, before the cut
        except (OSError, ValueError):
            pass
        try:
            if not self._still_mine():  # a FIFO, a device, or a file put at its name since: not ours to cut
                return
            if not compressed:
                _truncate_to_last_newline(self.path)
                return
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.ftruncate(fd, self._whole)
                if self._whole:  # nothing flushed whole (not even the header) leaves nothing to complete
                    os.pwrite(fd, gzip_end(self._crc, self._size), self._whole)
            finally:
                os.close(fd)
        except OSError:
            pass

    def _remove_if_empty(self) -> None:
        """No tick written: remove the file, if it is still the one this Recorder created (not a
        FIFO, a device, or a file put at its name since)."""
        if self.ticks or not self._still_mine():
            return
        try:
            os.unlink(self.path)
            self.removed = True
        except OSError:
            pass

    def _still_mine(self) -> bool:
        """The path still names the regular file this Recorder created."""
        if self._made is None:
            return False
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._made


def _open_for_recording(path: str, force: bool) -> IO[bytes]:
    """``path`` opened for writing a recording: created new (O_EXCL: no race with another writer),
    or truncated only when ``force``. Raises FileExistsError, OSError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISFIFO(st.st_mode):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO when no one reads the FIFO
        except OSError as e:
            if e.errno == errno.ENXIO:
                raise OSError(e.errno, "a FIFO with no reader (start the reader first)") from None
            raise
        os.set_blocking(fd, True)
    elif st is not None and not stat.S_ISREG(st.st_mode):
        fd = os.open(path, os.O_WRONLY)  # /dev/null, a terminal: nothing there to lose
    elif st is not None and not force:
        raise FileExistsError(errno.EEXIST, "the file exists (give --force to overwrite it, or another name)")
    else:
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
        fd = os.open(path, flags, 0o666)
    return os.fdopen(fd, "wb")


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
    record: bool = True
    """False when the line is no gpuwatch record at all (binary, not JSON): as a file's first
    record it means the file is not a recording."""
    newer: bool = False
    """The line comes from a newer gpuwatch (a higher schema version)."""
    cut: bool = False
    """The compressed data ends here or is damaged: nothing after this line could be read."""
    gave_up: bool = False
    """More than MAX_SKIPPED lines before this one were blank or unreadable: the rest is not read."""
    joined: bool = False
    """Another recording starts here (a second header): the lines from here on are not read."""

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class NotARecording(ValueError):
    """The file as a whole is not a recording this gpuwatch can read (one line for the user)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _loads(raw: bytes) -> Any:
    """JSON with NaN / Infinity refused (gpuwatch writes them as null; out-of-range numbers such as
    1e999 become inf here and are refused where a frame is decoded)."""
    return json.loads(raw, parse_constant=_no_constant)


class BadLineReport:
    """Says a recording's bad lines on stderr: the first :data:`LIMIT` one by one, then only their
    number at the end (a large damaged file must not bury the terminal in millions of lines)."""

    LIMIT = 20

    def __init__(self, path: str) -> None:
        self.path = clean(path)
        self.count = 0
        self.held: list[str] | None = None
        """While a full-screen front end owns the terminal (the TUI), the lines wait here and
        :meth:`close` says them once it is back: written beside the TUI they were painted over, and a
        cut-short recording replayed with no word of it (review 46). None: said at once."""
        self.cut_at: int | None = None
        """The line the file's compressed data ends at or is damaged from (BadLine.cut), if so."""
        self.joined_at: int | None = None
        """The line another recording joined to this one starts at (BadLine.joined), if so."""
        self.gave_up_at: int | None = None
        """The line reading stopped at, after too many blank or unreadable lines (BadLine.gave_up)."""

    def __call__(self, b: BadLine) -> None:
        # another recording's start, or where reading stopped, is no unreadable line (joined_at and
        # gave_up_at say them)
        self.count += not (b.joined or b.gave_up)
        if b.cut and self.cut_at is None:
            self.cut_at = b.line
        if b.joined and self.joined_at is None:
            self.joined_at = b.line
        if b.gave_up:
            self.gave_up_at = b.line
        if self.count <= self.LIMIT or b.gave_up:  # where reading stopped is said however many came before
            self._say(f"gpuwatch: {self.path}: {b}")
        elif self.count == self.LIMIT + 1:
            self._say(f"gpuwatch: {self.path}: more bad lines; their number follows at the end")

    def hold(self) -> None:
        """Keep the lines until :meth:`close` (see :attr:`held`)."""
        self.held = []

    def _say(self, line: str) -> None:
        if self.held is not None:
            self.held.append(line)
        else:
            print(line, file=sys.stderr)

    def close(self) -> None:
        for line in self.held or ():
            print(line, file=sys.stderr)
        self.held = None
        if self.count > self.LIMIT:
            print(f"gpuwatch: {self.path}: {self.count} bad lines in all, skipped", file=sys.stderr)


GZIP_MAGIC = b"\x1f\x8b"


class _GzipStream(gzip.GzipFile):
    """A gzip stream over a file object that it closes too (GzipFile leaves a given one open)."""

    def __init__(self, under: IO[bytes], mode: str = "rb") -> None:
        super().__init__(fileobj=under, mode=mode, mtime=0 if "w" in mode else None)
        self._under = under

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._under.close()


def open_recording(path: str) -> IO[bytes]:
    """The recording as a binary stream: gzip-decoded when it starts with gzip's magic bytes,
    whatever its name (a plain recording named ``.gz`` reads as it is). A pipe or a FIFO cannot be
    rewound, but its first bytes can be looked at without reading them (``peek``): a gzip stream
    piped in (``cat run.jsonl.gz | gpuwatch replay /dev/stdin``) is decoded too. A device
    (``/dev/zero``) is refused: it never ends and holds no recording."""
    st = os.stat(path)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        raise NotARecording(path, "a device, not a recording")
    if stat.S_ISDIR(st.st_mode):
        raise NotARecording(path, "a folder, not a recording")
    f = open(path, "rb")  # noqa: SIM115 - closed by the caller
    if stat.S_ISREG(st.st_mode):
        magic = f.read(2)
        f.seek(0)
        if magic == GZIP_MAGIC:
            f.close()
            return gzip.open(path, "rb")
        return f
    # peek does one read at most: a writer that sent a single byte first leaves the name to say it
    if f.peek(2)[:2] == GZIP_MAGIC or path.endswith(".gz"):
        return _GzipStream(f)
    return f


def read_recording(path: str) -> Iterator[Tick | BadLine]:
    """Yield each good tick and each bad line of a recording, in file order, reading it once as a
    stream (a FIFO or a pipe works as well as a file).

    Raises OSError if the file cannot be opened, NotARecording when it is not a recording: its
    first record is not a gpuwatch record or comes from a newer gpuwatch, or no tick could be read.
    """
    ticks = bad = 0
    first_bad: BadLine | None = None
    seen = False
    """A record was read (else the file held nothing but blank lines)."""
    records = _records(path)
    # A file's first tick waits for its second (_first_checked); a stream's is passed on at once: a
    # FIFO whose writer says nothing more would hold it, and the replay with it, for good.
    ordered = _in_time_order(_first_checked(records) if os.path.isfile(path) else records)
    try:
        for item in ordered:
            seen = True
            # Two recordings joined (cat a.jsonl.gz b.jsonl.gz is valid gzip) read as one watch mixed
            # the first one's command with the second one's PID and said "watched -24388 s" (review
            # 32): the first recording is read, and the lines after it are said and skipped.
            if isinstance(item, _Header) and ticks:
                joined = BadLine(item.line, f"another recording starts here (a second header, after {ticks} "
                                            f"tick{'s' if ticks != 1 else ''}: files joined?); only the first "
                                            "is read, the rest is skipped", joined=True)
                first_bad = first_bad or joined
                yield joined
                break
            if isinstance(item, BadLine):
                bad += not item.gave_up  # where reading stopped is no unreadable line
                first_bad = first_bad or item
                yield item
            elif isinstance(item, Tick):
                ticks += 1
                yield item
    finally:
        records.close()
    if ticks == 0:
        if first_bad is not None:  # a recording whose every tick is damaged: say how, from the first
            raise NotARecording(path, f"no readable tick ({bad} unreadable line{'s' if bad != 1 else ''} and no "
                                      f"tick; line {first_bad.line}: {first_bad.reason})")
        if seen:  # a recording all the same, whose watch ended before its first tick
            raise NotARecording(path, "a gpuwatch recording with a header and no tick: the watch ended before "
                                      "its first tick, so there is nothing to replay")
        raise NotARecording(path, "no readable tick (nothing but blank lines): not a gpuwatch recording")


@dataclass(frozen=True, slots=True)
class _Header:
    """A header line (the first one, or another recording's start)."""

    line: int


_Record = Tick | BadLine | _Header


def _records(path: str) -> Iterator[_Record]:
    """The recording's records in file order, blank lines left out; the read ends after data that
    cannot be decompressed. Raises NotARecording when the first record says the file is none."""
    first = True
    skipped = 0
    with open_recording(path) as f:
        for n, raw in enumerate(_lines(f, _ends_on_sync_flush(path)), start=1):
            item = _record(n, raw)
            skipped += item is None or isinstance(item, BadLine)
            if skipped > MAX_SKIPPED:
                yield BadLine(n, f"more than {MAX_SKIPPED:,} blank or unreadable lines: the rest of the file "
                                 "is not read", gave_up=True)
                return
            if item is None:
                continue
            if first:
                first = False
                if why := _first_refusal(n, item):
                    raise NotARecording(path, why)
            yield item
            if raw is _DAMAGED:
                return


LEAP_S = 60.0
"""A tick this far (and LEAP_INTERVALS of its interval) after the tick before is held back until the
next tick says whether its time is the watch's or a damaged line's (--interval allows 60 s)."""
LEAP_INTERVALS = 10


def _in_time_order(records: Iterator[_Record]) -> Iterator[_Record]:
    """The records, with the ticks whose time is out of order made bad lines.

    A tick whose time runs back from the last good tick is skipped (another watch's tick). A tick
    far ahead of it (:func:`_leaps`) is held until the next tick: where that one goes on from the
    ticks before, the held one was a lone outlier (a damaged line) and is skipped; where it goes on
    from the held one, the clock did leap and both are kept. Judged against the last good tick
    alone, one tick years ahead made every tick after it run back: one bad line lost the rest of
    the recording. Records read while a tick is held come after it, in file order; a header (a
    joined recording's start) or the end of the file keeps a tick still held.
    """
    last: Tick | None = None
    """The last good tick passed on."""
    held: Tick | None = None
    queued: list[_Record] = []
    """Bad lines read while ``held`` waits."""
    for item in records:
        if isinstance(item, Tick) and last is not None and item.frame.t < last.frame.t:
            item = _ran_back(item, last)
        if held is not None:
            if isinstance(item, BadLine):
                queued.append(item)
                continue
            kept = isinstance(item, _Header) or item.frame.t >= held.frame.t  # a tick or a header decides
            yield held if kept else _outlier(held, item)
            yield from queued
            last = held if kept else last
            held, queued = None, []
        if isinstance(item, Tick) and last is not None and _leaps(last, item):
            held = item
            continue
        if isinstance(item, Tick):
            last = item
        yield item
    if held is not None:
        yield held
        yield from queued


def _first_checked(records: Iterator[_Record]) -> Iterator[_Record]:
    """The records, the first tick held until the next one: where that one comes far earlier (as far
    back as :func:`_leaps` is ahead), the first was the lone outlier (a damaged first line) and is a
    bad line, not the tick every later one would read as running back from. Bad lines read while it
    waits come after it, in file order; a header or the end of the file keeps it."""
    first: Tick | None = None
    started = False
    """A tick was read: only the first is held."""
    queued: list[_Record] = []
    for item in records:
        if not started and isinstance(item, Tick):
            first, started = item, True
            continue
        if first is not None and isinstance(item, BadLine):
            queued.append(item)
            continue
        if first is not None:
            yield _outlier(first, item, "after") if isinstance(item, Tick) and _leaps(item, first) else first
            yield from queued
            first, queued = None, []
        yield item
    if first is not None:
        yield first
        yield from queued


def _leaps(before: Tick, tick: Tick) -> bool:
    """``tick`` comes far later than a watch's next tick after ``before`` would."""
    return tick.frame.t - before.frame.t > max(LEAP_S, LEAP_INTERVALS * before.frame.interval)


def _ran_back(tick: Tick, last: Tick) -> BadLine:
    return BadLine(tick.line, f"its time runs {last.frame.t - tick.frame.t:.1f} s back from the tick before "
                              "(another watch's tick?), skipped")


def _outlier(held: Tick, after: Tick, goes_on: str = "before") -> BadLine:
    return BadLine(held.line, f"its time runs {held.frame.t - after.frame.t:.1f} s ahead of the tick after it, "
                              f"which goes on from the ticks {goes_on} (a damaged line?), skipped")


def _first_refusal(n: int, item: _Record) -> str:
    """Why the first record read makes the file no recording ("" when it is fine)."""
    if isinstance(item, BadLine) and item.newer:
        return f"written by a newer gpuwatch ({item.reason})"
    if isinstance(item, BadLine) and not item.record:
        return f"line {n} is not a gpuwatch record ({item.reason})"
    return ""


def _record(n: int, raw: bytes | None) -> _Record | None:
    """One line: a Tick, a BadLine, a _Header, None for a blank line."""
    if raw is _DAMAGED:
        return BadLine(n, "the compressed data ends early or is damaged; the rest is skipped", cut=True)
    if raw is None:
        return BadLine(n, f"longer than {MAX_LINE // (1024 * 1024)} MiB, skipped", record=False)
    if not raw.strip():
        return None
    if b"\0" in raw:
        return BadLine(n, "binary data (NUL bytes)", record=False)
    try:
        rec = _loads(raw)
    except RecursionError:
        return BadLine(n, "nested too deeply to be a gpuwatch record", record=False)
    except (ValueError, UnicodeDecodeError) as e:
        if n == 1:  # a text file, a log: no guess at a cut line, whose parser position said nothing (review 46)
            return BadLine(n, "not JSON, as every line of a gpuwatch recording is", record=False)
        return BadLine(n, f"not valid JSON ({_short(e)}); a line cut short?", record=False)
    if not isinstance(rec, dict) or "schema" not in rec or "type" not in rec:
        return BadLine(n, "not a JSON object with a schema and a type", record=False)
    schema = rec.get("schema")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA_VERSION:
        return BadLine(n, f"schema version {schema}; this gpuwatch reads schema {SCHEMA_VERSION}: "
                          "upgrade gpuwatch to read it", newer=True)
    if schema != SCHEMA_VERSION:
        return BadLine(n, f"schema version {_short_repr(schema)}, this gpuwatch reads {SCHEMA_VERSION}", record=False)
    kind = rec.get("type")
    if kind == "header":
        return _Header(n)
    if kind != "tick":
        return BadLine(n, f"unknown record type {_short_repr(kind)}")
    try:
        frame = from_dict(Frame, rec.get("frame"))
    except RecursionError:
        return BadLine(n, "bad frame: nested too deeply")
    except (DecodeError, TypeError, ValueError) as e:
        return BadLine(n, f"bad frame: {_short(e)}")
    if not (0 <= frame.wall < MAX_WALL and 0 < frame.interval <= MAX_INTERVAL):
        return BadLine(n, f"bad frame: its time ({frame.wall:g}) or interval ({frame.interval:g}) is out of range")
    if isinstance(frame.procs, ProcsSample):
        frame = replace(frame, procs=worker_forks_as_others(frame.procs))
    verdict = rec.get("verdict")
    return Tick(n, frame, verdict if isinstance(verdict, dict) else None)


def _short_repr(x: Any) -> str:
    return _short(ValueError(repr(x)))


SYNC_FLUSH_END = b"\x00\x00\xff\xff"
"""The empty stored block a zlib sync flush ends with: the last bytes of a gzip recording whose
writer was killed after a whole line (Recorder flushes so after each)."""


FINAL_EMPTY_BLOCK = b"\x01\x00\x00\xff\xff"
"""A final, empty stored deflate block: after a sync flush (byte-aligned, no final block yet) it
ends the deflate stream."""


def gave_up_words(line: int) -> str:
    """Where a reader left a file whose lines were too often blank or unreadable (BadLine.gave_up),
    in the words the report and the replay screen share."""
    return (f"read only up to line {line:,}: more than {MAX_SKIPPED:,} of its lines were blank or unreadable, "
            "so the rest of the file was not read")


def gzip_end(crc: int, size: int) -> bytes:
    """What completes a gzip stream cut at a sync flush: the final block, then the trailer (CRC-32
    and length of the uncompressed data, little-endian)."""
    return FINAL_EMPTY_BLOCK + struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)


def _ends_on_sync_flush(path: str) -> bool:
    """A regular file whose last bytes are a sync flush's: its gzip stream lacks only the trailer."""
    try:
        st = os.stat(path)  # before opening: a FIFO with no writer would block the open
        if not stat.S_ISREG(st.st_mode) or st.st_size < len(SYNC_FLUSH_END):
            return False
        with open(path, "rb") as f:
            f.seek(-len(SYNC_FLUSH_END), os.SEEK_END)
            return f.read() == SYNC_FLUSH_END
    except OSError:
        return False


_DAMAGED = b"\0damaged"
"""What _lines yields, last, when a gzip stream breaks off (a copy cut short, a disk that filled)."""


def _lines(f: IO[bytes], flushed: bool = False) -> Iterator[bytes | None]:
    """Lines of a binary file, None for a line over MAX_LINE (read past without keeping it).
    ``flushed``: a gzip stream that ends early ends where a line was flushed whole
    (:func:`_ends_on_sync_flush`), which is a clean end, not damage."""
    while True:
        try:
            line = f.readline(MAX_LINE + 1)
        except EOFError:
            if not flushed:
                yield _DAMAGED
            return
        except (zlib.error, gzip.BadGzipFile):
            yield _DAMAGED
            return
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            yield None  # first: a reader that stops here never reads an endless line to its end
            while True:  # skip the rest of the over-long line
                try:
                    rest = f.readline(MAX_LINE)
                except (EOFError, zlib.error, gzip.BadGzipFile):
                    yield _DAMAGED
                    return
                if not rest or rest.endswith(b"\n"):
                    break
            continue
        yield line


def _short(e: Exception) -> str:
    s = clean(str(e), 200)
    return s if len(s) <= 120 else s[:117] + "..."
