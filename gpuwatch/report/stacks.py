"""The hottest Python stacks per thread role, counted over the stack samples of the run."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuwatch.diagnosis.stack_counts import ROLES, count, stack_samples, threads
from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import ThreadStack, activity
from gpuwatch.report.model import HotStack

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
    def key(th: ThreadStack) -> tuple:
        said = activity(th.role, th.label, th.detail, th.active)
        return said, th.detail, tuple(_LINE.sub("", x) for x in th.frames[:depth])

    samples = stack_samples(frames)
    shown: dict[tuple, tuple[str, ...]] = {}
    for th in threads(samples, lambda t: t.role in ROLES):
        shown.setdefault(key(th), th.frames[:depth])
    out = []
    for role in ROLES:
        counts = count(threads(samples, lambda t: t.role == role), key)
        total = sum(counts.values())
        for k, n in counts.most_common(top):
            out.append(HotStack(role=role, count=n, share=n / total, label=k[0], detail=k[1], frames=shown[k]))
    return tuple(out)
