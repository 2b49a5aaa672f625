"""What could not be read during the run: every Unsupported reason met, deduplicated by place.

Left out, as they are no gap: the normal states a field says with a reason (no CPU quota set, no
disk request finished in the tick, a PCIe replay count the relaxed pace left to the next read), and
the run's edges, when a place read fine at other ticks: a collector's first seconds and first counter
window, and the reads that found the job gone at its end."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import lru_cache

from gpuwatch.model.disk import NO_IO
from gpuwatch.model.frame import Frame
from gpuwatch.model.host import NO_CPU_QUOTA
from gpuwatch.model.pcie import REPLAYS_HELD
from gpuwatch.model.values import JOB_EXITED, PENDING, Unsupported
from gpuwatch.model.field_words import words
from gpuwatch.report.model import Gap

_NUMBERS = re.compile(r"\d+(\.\d+)?")
"""Reasons that differ only in numbers ("last sample 12 s ago" / "14 s ago") are one gap."""
FRAME_FIELDS = ("gpus", "pcie", "disk", "procs", "host", "stacks")
NORMAL = frozenset({NO_CPU_QUOTA.reason, NO_IO.reason, REPLAYS_HELD.reason})
"""Reasons that state a fact about the job, or a count left to the next read, not a reading that failed."""
EDGE = re.compile(rf"{PENDING.reason}|first window|{JOB_EXITED}|TargetGone|process no longer exists|process (?:\d+|N) exited")
"""Reasons met only at the run's edges: before a collector's first sample or its first counter
window (collectors/gpm.py, gpu.py and pcie.py say "first window"), and after the job exited
(gpuwatch/engine.py and collectors/stacks.py; recordings from before JOB_EXITED carry psutil's and
TargetGone's own words). Matched on the reason with its numbers read as N."""


@lru_cache(maxsize=None)
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _walk(obj: object, path: str, out: dict[tuple[str, str], list], read: set[str]) -> None:
    if isinstance(obj, Unsupported):
        if obj.reason in NORMAL:
            return
        key = (path, _NUMBERS.sub("N", obj.reason))
        entry = out.setdefault(key, [obj.reason, 0])
        entry[1] += 1
        return
    read.add(path)
    if dataclasses.is_dataclass(obj):
        for name in _names(type(obj)):
            _walk(getattr(obj, name), f"{path}.{name}" if path else name, out, read)
    elif isinstance(obj, tuple) and obj and (dataclasses.is_dataclass(obj[0]) or isinstance(obj[0], Unsupported)):
        for x in obj:
            _walk(x, path + "[]", out, read)


def collect_gaps(frames: Sequence[Frame], environment: object = None) -> tuple[Gap, ...]:
    """Each (place, reason) once with the number of ticks it was met (see the module's docstring
    for what is left out); a place that never read past its first seconds is reported."""
    out: dict[tuple[str, str], list] = {}
    read: set[str] = set()
    for f in frames:
        for name in FRAME_FIELDS:
            _walk(getattr(f, name), name, out, read)
    for key in [k for k in out if k[0] in read and EDGE.search(k[1])]:
        del out[key]
    if environment is not None:
        env_gaps: dict[tuple[str, str], list] = {}
        _walk(environment, "environment", env_gaps, set())
        for key, (reason, _) in env_gaps.items():
            out.setdefault(key, [reason, 1])
    gaps = [Gap(what=path, reason=reason, count=n, title=words(path)) for (path, _), (reason, n) in out.items()]
    gaps.sort(key=lambda g: (g.what.startswith("environment"), g.what, -g.count))
    return tuple(gaps)
