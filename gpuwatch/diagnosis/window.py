"""Picking the frames a decision looks at, and the small statistics over them.

A frame holds the *latest* sample of each collector, so a collector slower than the tick repeats
its sample in several frames; everything here counts each sample once (by its timestamp).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import median

from gpuwatch.diagnosis.stack_counts import each_sample
from gpuwatch.model.frame import Frame
from gpuwatch.model.values import known


def recent(frames: Sequence[Frame], seconds: float) -> list[Frame]:
    """The frames of the last ``seconds`` (ending with the newest frame), oldest first."""
    if not frames:
        return []
    now = frames[-1].t
    out = [f for f in frames if now - seconds < f.t <= now]
    return out or [frames[-1]]


def last_ticks(frames: Sequence[Frame], seconds: float) -> list[Frame]:
    """The frames of the last ``seconds`` counted in ticks: the newest ``round(seconds / interval)``
    frames (at least one), found by time so that a gap in the ticks still ends the window.

    ``recent`` cuts at exactly ``seconds``; frames come about one interval apart, give or take a
    few milliseconds, so a cut at 3.0 s held three frames on one tick and four on the next (the
    H200 switch recordings: four on about half their ticks). A median of four mixes two old ticks
    with two new ones where three would have shown the change: the cut here lies half an interval
    inside the window's edge, so the count does not depend on the jitter."""
    if not frames:
        return []
    interval = frames[-1].interval if frames[-1].interval > 0 else 1.0
    n = max(1, int(seconds / interval + 0.5))
    return recent(frames, (n - 0.5) * interval)


def since(frames: Sequence[Frame], start: float | None, seconds: float, at_least: float) -> list[Frame]:
    """Frames after ``start`` within the last ``seconds``, but never fewer than the last ``at_least``
    (both counted in ticks, as ``last_ticks``)."""
    longest = last_ticks(frames, seconds)
    if start is None:
        return longest
    picked = [f for f in longest if f.t >= start]
    shortest = last_ticks(frames, at_least)
    return picked if len(picked) >= len(shortest) else shortest


def unique_samples(frames: Iterable[Frame], field: str) -> list[object]:
    """Each known sample of ``field`` once, oldest first (deduplicated by the sample's ``t``)."""
    return [value for _, value in each_sample(frames, field)]


def latest_reason(frames: Sequence[Frame], field: str) -> str | None:
    """The Unsupported reason of the newest frame's ``field``, if it is one."""
    if not frames:
        return None
    value = getattr(frames[-1], field)
    return None if known(value) else getattr(value, "reason", None)


def med(values: Iterable[float | None]) -> float | None:
    """Median of the known values (robust to one odd tick), None when there are none."""
    xs = [x for x in values if x is not None]
    return float(median(xs)) if xs else None


def mean(values: Iterable[float | None]) -> float | None:
    xs = [x for x in values if x is not None]
    return sum(xs) / len(xs) if xs else None


def num(value: object, scale: float = 1.0) -> float | None:
    """A known number times ``scale``, else None (Unsupported never becomes a zero)."""
    if not known(value) or isinstance(value, bool):
        return None
    try:
        return float(value) * scale  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
