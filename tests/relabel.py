"""Main-thread samples of a recording labelled again by the collector's own classifier, as a live
watch labels them now: recordings made before a label existed keep the older label. A recording
keeps each frame as text, "name (short/path.py:line)"; the full path is rebuilt by ``where`` (the
standard library's under /usr/lib, site-packages for libraries, the job's script where it ran)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable

from gpuwatch.collectors.pyspy import FrameRecord, ThreadRecord
from gpuwatch.collectors.stack_labels import classify
from gpuwatch.model import stacks as lb

FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>.*):(?P<line>\d+)\)$")
"""A frame as text; the file may hold parentheses itself (AOTAutograd's generated
"subclass_codegen.py:codegen(compiled_function_forward)")."""


def stdlib(short: str) -> str:
    return f"/usr/lib/python3.11/{short}"


def frame_of(text: str, where: Callable[[str], str] = stdlib) -> FrameRecord:
    m = FRAME.match(text)
    assert m, text
    return FrameRecord(m["name"], where(m["file"]), m["file"], int(m["line"]))


def relabelled(src: str, dst, where: Callable[[str], str] = stdlib) -> str:
    """``src`` (a gzipped recording) written to ``dst`` with its main threads labelled again."""
    with gzip.open(src, "rt") as a, open(dst, "w") as b:
        for line in a:
            d = json.loads(line)
            for t in ((d.get("frame") or {}).get("stacks") or {}).get("threads") or ():
                if t["role"] == lb.ROLE_MAIN_THREAD:
                    rec = ThreadRecord(t["pid"], t["tid"], t["thread_name"], t["active"], t["owns_gil"],
                                       tuple(frame_of(f, where) for f in t["frames"]))
                    t["label"], t["detail"] = classify(rec, lb.ROLE_MAIN_THREAD)
            b.write(json.dumps(d) + "\n")
    return str(dst)
