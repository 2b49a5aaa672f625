"""What could not be read during the run: every Unsupported reason met, deduplicated by place."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import lru_cache

from gpuwatch.model.frame import Frame
from gpuwatch.model.values import PENDING, Unsupported
from gpuwatch.report.model import Gap

_NUMBERS = re.compile(r"\d+(\.\d+)?")
"""Reasons that differ only in numbers ("last sample 12 s ago" / "14 s ago") are one gap."""
FRAME_FIELDS = ("gpus", "pcie", "disk", "procs", "host", "stacks")


@lru_cache(maxsize=None)
def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _walk(obj: object, path: str, out: dict[tuple[str, str], list]) -> None:
    if isinstance(obj, Unsupported):
        key = (path, _NUMBERS.sub("N", obj.reason))
        entry = out.setdefault(key, [obj.reason, 0])
        entry[1] += 1
    elif dataclasses.is_dataclass(obj):
        for name in _names(type(obj)):
            _walk(getattr(obj, name), f"{path}.{name}" if path else name, out)
    elif isinstance(obj, tuple) and obj and (dataclasses.is_dataclass(obj[0]) or isinstance(obj[0], Unsupported)):
        for x in obj:
            _walk(x, path + "[]", out)


def collect_gaps(frames: Sequence[Frame], environment: object = None) -> tuple[Gap, ...]:
    """Each (place, reason) once with the number of ticks it was met.

    "no sample yet" (a collector's first seconds) is left out for a field that later had a value
    or another reason; a field that never got past it is reported."""
    out: dict[tuple[str, str], list] = {}
    for f in frames:
        for name in FRAME_FIELDS:
            _walk(getattr(f, name), name, out)
    for name in FRAME_FIELDS:
        if (name, PENDING.reason) in out and any(getattr(f, name) != PENDING for f in frames):
            del out[(name, PENDING.reason)]
    if environment is not None:
        env_gaps: dict[tuple[str, str], list] = {}
        _walk(environment, "environment", env_gaps)
        for key, (reason, _) in env_gaps.items():
            out.setdefault(key, [reason, 1])
    gaps = [Gap(what=path, reason=reason, count=n) for (path, _), (reason, n) in out.items()]
    gaps.sort(key=lambda g: (g.what.startswith("environment"), g.what, -g.count))
    return tuple(gaps)
