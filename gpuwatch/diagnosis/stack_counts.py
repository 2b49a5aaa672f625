"""Counting stack samples: the one place that walks frames for their distinct stack samples and
counts threads by a key. The diagnosis, the per-rank signals, the TUI's stack views and the
report's hottest stacks all count through it, so they agree on what "a sample" and "a share" are.

A frame holds the latest sample of each collector, and the stack collector can be slower than the
tick, so one sample can sit in several frames: it is counted once (by its timestamp).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator

from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import ROLE_MAIN_THREAD, ROLE_PIN, ROLE_WORKER, StackSample, ThreadStack
from gpuwatch.model.values import known

ROLES = (ROLE_MAIN_THREAD, ROLE_WORKER, ROLE_PIN)
"""Roles whose time is counted; helper threads (role "other": queue feeders, resource sharers) are
left out."""


def each_sample(frames: Iterable[Frame], field: str = "stacks") -> Iterator[tuple[Frame, object]]:
    """Each known sample of ``field`` once, with the first frame (in ``frames``' order) that holds
    it. Samples are told apart by their ``t`` (a per-GPU tuple by its first item's)."""
    seen: set[float] = set()
    for f in frames:
        value = getattr(f, field)
        if not known(value):
            continue
        t = _stamp(value)
        if t not in seen:
            seen.add(t)
            yield f, value


def stack_samples(frames: Iterable[Frame]) -> list[StackSample]:
    """The distinct stack samples of ``frames``, in their order."""
    return [s for _, s in each_sample(frames) if isinstance(s, StackSample)]


def threads(samples: Iterable[StackSample], keep: Callable[[ThreadStack], bool] = lambda t: True) -> list[ThreadStack]:
    """Every thread of ``samples`` that ``keep`` accepts (one per thread per sample)."""
    return [t for s in samples for t in s.threads if keep(t)]


def count(stacks: Iterable[ThreadStack], key: Callable[[ThreadStack], Hashable] = lambda t: t.label) -> Counter:
    """Thread-samples per ``key`` (by default the activity label)."""
    return Counter(key(t) for t in stacks)


def shares(counts: Counter) -> list[tuple[Hashable, float]]:
    """Each key's fraction of the counted samples, largest first (ties in key order)."""
    n = sum(counts.values())
    if not n:
        return []
    return [(k, c / n) for k, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def _stamp(value: object) -> float:
    if isinstance(value, tuple):  # per-GPU tuples: the first item's time stands for the tuple
        return getattr(value[0], "t", id(value)) if value else id(value)
    return getattr(value, "t", id(value))
