"""Stack samples of a recording labelled again by the collector's own classifier, as a live watch
labels them now: recordings made before a label existed keep the older label. A recording keeps
each frame as text, "name (short/path.py:line)"; the full path is rebuilt by ``where`` (the standard
library's under /usr/lib, site-packages for libraries, the job's script where it ran). Main threads
and other threads are labelled again (DataLoader workers and pin threads keep theirs), then each
process's threads of a sample go through the collector's cross-thread rule (waits_on_compiler)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from collections.abc import Callable

from gpuwatch.collectors.pyspy import FrameRecord, ThreadRecord
from gpuwatch.collectors.stack_labels import classify, waits_on_compiler
from gpuwatch.model import stacks as lb

FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>.*):(?P<line>\d+)\)$")
"""A frame as text; the file may hold parentheses itself (AOTAutograd's generated
"subclass_codegen.py:codegen(compiled_function_forward)")."""
AGAIN = (lb.ROLE_MAIN_THREAD, lb.ROLE_OTHER_THREAD)


def stdlib(short: str) -> str:
    return f"/usr/lib/python3.11/{short}"


def frame_of(text: str, where: Callable[[str], str] = stdlib) -> FrameRecord:
    m = FRAME.match(text)
    assert m, text
    return FrameRecord(m["name"], where(m["file"]), m["file"], int(m["line"]))


def _labelled(threads: list[dict], where: Callable[[str], str], roles: tuple[str, ...]) -> None:
    for t in threads:
        if t["role"] in roles:
            rec = ThreadRecord(t["pid"], t["tid"], t["thread_name"], t["active"], t["owns_gil"],
                               tuple(frame_of(f, where) for f in t["frames"]))
            t["label"], t["detail"] = classify(rec, t["role"])
    fields = {f.name for f in dataclasses.fields(lb.ThreadStack)}
    for pid in {t["pid"] for t in threads}:
        mine = [t for t in threads if t["pid"] == pid]
        stacks = [lb.ThreadStack(**{k: (tuple(v) if k == "frames" else v) for k, v in t.items() if k in fields})
                  for t in mine]
        for t, s in zip(mine, waits_on_compiler(stacks)):
            t["label"], t["detail"] = s.label, s.detail


def relabelled(src: str, dst, where: Callable[[str], str] = stdlib, roles: tuple[str, ...] = AGAIN) -> str:
    """``src`` (a gzipped recording) written to ``dst`` with its stack samples labelled again: the
    threads of ``roles`` from their frames. A recording keeps a dozen frames of each stack, so a
    label the live watch gave from the whole stack is kept where it already exists (``roles``
    without the main thread), as for the H100 recording made with the compile label."""
    with gzip.open(src, "rt") as a, open(dst, "w") as b:
        for line in a:
            d = json.loads(line)
            threads = ((d.get("frame") or {}).get("stacks") or {}).get("threads")
            if threads:
                _labelled(threads, where, roles)
            b.write(json.dumps(d) + "\n")
    return str(dst)
