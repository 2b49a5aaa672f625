"""Writing a finished document (a report, a comparison) to stdout or to ``-o FILE``.

Nothing is destroyed: ``-o`` refuses the file being read and, without ``--force``, any existing
file; a file is written to a temporary file beside it and renamed over, so a full disk or a kill
leaves either the old file or the whole new one, never a partial one. When neither the file nor
stdout can take the text, it is kept in a temporary file and the user is told where, named with
its format's suffix (``.json`` for a JSON report), so that it opens as what it is.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Sequence

from gpuwatch.errors import UsageError
from gpuwatch.untrusted import clean


def check_writable(path: str, force: bool = False, inputs: Sequence[str | None] = ()) -> None:
    """Refuse an output path we could not or should not write, before spending minutes watching:
    no folder, a folder, not writable, one of the ``inputs`` being read (even with ``force``), or an
    existing file without ``force``."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no folder {folder}")
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a folder")
    for src in inputs:
        if src and _same_file(path, src):
            raise UsageError(f"cannot write {path}: it is the file being read")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise UsageError(f"cannot write {path}: permission denied")
    if not force and _is_regular(path):
        raise UsageError(f"{path} exists: give --force to overwrite it, or another name")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_text(text: str, path: str | None, what: str = "report", suffix: str = ".txt") -> int:
    """``text`` to ``path``, or to stdout without one; returns 0. A failure is bad output given by
    the user, said as every other is (one line, exit 2: UsageError, printed cleaned by cli.py), once
    the text is kept: on stdout when the file could not take it (so the watched minutes are not
    lost), in a temporary file ending in ``suffix`` (the text's format) when stdout could not either."""
    if not path:
        _to_stdout(text, what, suffix)
        return 0
    try:
        _replace(path, text)
    except OSError as e:
        failed = f"cannot write {path}: {e.strerror or e}"
        try:
            _to_stdout(text, what, suffix)
        except UsageError as also:  # neither took it: both said on the one line
            raise UsageError(f"{failed}; {also}") from None
        raise UsageError(f"{failed}; the {what} went to stdout") from None
    # The user's file name, cleaned as cli.py's error lines are.
    print(f"gpuwatch: {what} written to {clean(path)}", file=sys.stderr)
    return 0


def _replace(path: str, text: str) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, renamed over it. A path that
    is not a regular file (``/dev/stdout``, a FIFO) is written directly."""
    if os.path.exists(path) and not _is_regular(path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it (mkstemp makes 0600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _to_stdout(text: str, what: str, suffix: str) -> None:
    out = sys.stdout
    try:
        if out is None:
            raise OSError("stdout is closed")
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise  # the reader went away (`| head`): cli.py ends quietly, as Unix tools do
    except (OSError, ValueError) as e:  # ENOSPC (/dev/full), EBADF, a closed file object
        why = getattr(e, "strerror", None) or str(e)
        raise UsageError(f"cannot write the {what} to stdout: {why}; {_keep(text, what, suffix)}") from None


def _keep(text: str, what: str, suffix: str) -> str:
    """Save ``text`` in a temporary file ending in ``suffix``; say where (or that it is lost)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"gpuwatch-{what}-", suffix=suffix)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return f"it was saved to {tmp}"
    except OSError as e:
        return f"it could not be saved either ({e.strerror or e})"
