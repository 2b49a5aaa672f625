"""Hot frames and activity shares over recent stack samples, py-spy-top style."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import StackSample, ThreadStack

STACK_WINDOW = 30
"""Frames whose stack samples the stacks views count: 30 s at the default 1 s tick, long enough
to average out the ±10-15 % noise of shares over a few dozen samples (signals.md §11)."""


@dataclass(frozen=True)
class HotFrame:
    frame: str
    own: int
    """Samples with this frame at the leaf."""
    total: int
    """Samples with this frame anywhere in the stack."""


def stack_samples(frames: Sequence[Frame], window: int = STACK_WINDOW) -> list[StackSample]:
    """The distinct stack samples of the last ``window`` frames (a stalled collector repeats one)."""
    out: list[StackSample] = []
    seen: set[float] = set()
    for f in frames[-window:]:
        s = f.stacks
        if isinstance(s, StackSample) and s.t not in seen:
            seen.add(s.t)
            out.append(s)
    return out


def threads(samples: Iterable[StackSample], keep: Callable[[ThreadStack], bool]) -> list[ThreadStack]:
    return [t for s in samples for t in s.threads if keep(t)]


def hot_frames(stacks: Sequence[ThreadStack], limit: int = 10) -> list[HotFrame]:
    """The frames seen most, by own (leaf) count, then total count.

    Counted here rather than with ``gpuwatch.shares.hot_frames``: that one counts leaf frames of one
    role only, and these views also show %Total (the frame anywhere in the stack) and mix roles.
    """
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for t in stacks:
        if t.frames:
            own[t.frames[0]] += 1
        for f in set(t.frames):
            total[f] += 1
    ranked = sorted(total, key=lambda f: (-own[f], -total[f], f))
    return [HotFrame(f, own[f], total[f]) for f in ranked[:limit]]


def label_shares(stacks: Sequence[ThreadStack]) -> list[tuple[str, float]]:
    """Each activity label's share of the samples, largest first."""
    if not stacks:
        return []
    counts = Counter(t.label for t in stacks)
    n = len(stacks)
    return [(label, c / n) for label, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
