"""The hottest Python stacks per thread role, counted over the stack samples of the run."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import StackSample
from gpuwatch.report.model import HotStack
from gpuwatch.shares import ROLES

STACK_DEPTH = 6
"""Leaf-first frames that make two samples "the same stack": deep enough to name the caller of the
hot function, shallow enough that different outer loops still group together."""
TOP_PER_ROLE = 3
_LINE = re.compile(r":\d+\)$")
"""The line number in ``func (file:line)``: samples a few lines apart in one function are one stack."""


def hot_stacks(frames: Sequence[Frame], depth: int = STACK_DEPTH, top: int = TOP_PER_ROLE) -> tuple[HotStack, ...]:
    """Most frequent stacks per role (main thread, workers, pin thread; helper threads such as
    queue feeders are left out, as in the live shares). A stack sample repeated in several frames
    (the stack collector ran slower than the tick) is counted once."""
    counts: dict[str, Counter] = defaultdict(Counter)
    shown: dict[tuple, tuple[str, ...]] = {}
    seen: set[float] = set()
    for f in frames:
        s = f.stacks
        if not isinstance(s, StackSample) or s.t in seen:
            continue
        seen.add(s.t)
        for th in s.threads:
            if th.role in ROLES:
                key = (th.label, th.detail, tuple(_LINE.sub("", x) for x in th.frames[:depth]))
                counts[th.role][key] += 1
                shown.setdefault(key, th.frames[:depth])
    out = []
    for role in sorted(counts, key=ROLES.index):
        total = sum(counts[role].values())
        for key, n in counts[role].most_common(top):
            out.append(HotStack(role=role, count=n, share=n / total, label=key[0], detail=key[1], frames=shown[key]))
    return tuple(out)
