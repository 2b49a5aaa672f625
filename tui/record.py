"""Starting a recording from the TUI: a fresh, auto-named file in the chosen folder."""

from __future__ import annotations

import os
import time

from gpuwatch.recording import Recorder


def recording_name(when: float | None = None) -> str:
    """``gpuwatch-YYYYmmdd-HHMMSS.jsonl`` for the local time ``when`` (now by default)."""
    return time.strftime("gpuwatch-%Y%m%d-%H%M%S.jsonl", time.localtime(when))


def open_recording(folder: str, when: float | None = None) -> Recorder:
    """A Recorder on a new file; never overwrites (adds -2, -3 ... within the same second).

    Blocking (opens and writes the header): call it off the event loop. Raises OSError.
    """
    base = recording_name(when)
    path = os.path.join(folder, base)
    n = 1
    while os.path.exists(path):
        n += 1
        path = os.path.join(folder, base.replace(".jsonl", f"-{n}.jsonl"))
    return Recorder(path)
