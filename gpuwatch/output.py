"""Writing a finished document (a report, a comparison) to stdout or to ``-o FILE``."""

from __future__ import annotations

import os
import sys

from gpuwatch.errors import UsageError


def check_writable(path: str) -> None:
    """Refuse an output path we could not write, before spending minutes watching."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no folder {folder}")
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a folder")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise UsageError(f"cannot write {path}: permission denied")


def write_text(text: str, path: str | None, what: str = "report") -> int:
    """``text`` to ``path``, or to stdout without one. Returns the exit code: 1 when the file could
    not be written (the text then goes to stdout, so the watched minutes are not lost)."""
    if not path:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        sys.stdout.write(text)
        print(f"gpuwatch: error: cannot write {path}: {e.strerror or e}; the {what} went to stdout", file=sys.stderr)
        return 1
    print(f"gpuwatch: {what} written to {path}", file=sys.stderr)
    return 0
