"""Hot frames and activity shares over recent stack samples, py-spy-top style."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.stack_counts import count, shares, threads
from gpuwatch.diagnosis.stack_counts import stack_samples as counted_samples
from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import ROLE_OTHER_THREAD, StackSample, ThreadStack, activity

__all__ = ["STACK_WINDOW", "HotFrame", "WindowCounts", "hot_frames", "label_shares", "role_label_counts", "counted",
           "stack_samples", "threads"]

STACK_WINDOW = 30
"""Frames whose stack samples the stacks views count: 30 s at the default 1 s tick, long enough
to average out the ±10-15 % noise of shares over a few dozen samples (docs/THRESHOLDS.md)."""


@dataclass(frozen=True)
class HotFrame:
    frame: str
    own: int
    """Samples with this frame at the leaf."""
    total: int
    """Samples with this frame anywhere in the stack."""


def counted(t: ThreadStack) -> bool:
    """Whether a view counts this thread sample: a helper thread (queue feeder, resource sharer,
    role "other") only while active; idle, it says nothing of what the process does."""
    return t.active or t.role != ROLE_OTHER_THREAD


def _activity(t: ThreadStack) -> str:
    return activity(t.role, t.label, t.detail, t.active)


def stack_samples(frames: Sequence[Frame], window: int = STACK_WINDOW) -> list[StackSample]:
    """The distinct stack samples of the last ``window`` frames (a stalled collector repeats one)."""
    return counted_samples(frames[-window:])


def hot_frames(stacks: Sequence[ThreadStack], limit: int = 10) -> list[HotFrame]:
    """The frames seen most, by own (leaf) count, then total count (the frame anywhere in the
    stack, once per sample), as py-spy top shows them."""
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
    """Each activity label's share of the samples, largest first (read as the diagnosis reads them:
    an older recording's worker "io" sample in a sleep or a lock is a wait)."""
    return shares(count(stacks, key=_activity))  # type: ignore[return-value]


def role_label_counts(sample: StackSample) -> dict[str, Counter[str]]:
    """One sample's threads counted per role, by activity label as :func:`label_shares` counts them;
    a thread of role "other" only while active (idle helper threads say nothing). Summed over a
    window's samples, a role's counter gives that role's :func:`label_shares`, so a view can count
    each sample once rather than the whole window again for every role."""
    counts: dict[str, Counter[str]] = {}
    for t in sample.threads:
        if not counted(t):
            continue
        counts.setdefault(t.role, Counter())[_activity(t)] += 1
    return counts


class WindowCounts:
    """:func:`role_label_counts` summed per role over a window of samples that moves a sample or two
    a frame: the samples that came into the window are counted and added, those that left it taken
    off, rather than the whole window (~30 samples) summed again for each role each frame."""

    def __init__(self) -> None:
        self._counted: dict[int, tuple[StackSample, dict[str, Counter[str]]]] = {}
        """Each sample of the window counted per role, by the sample's identity, the sample held so
        that its id names no other. Not by its time: a rank's frames carry the job's sample cut down
        to that rank's threads at the job's time (ranks.frame_for_rank), so after the rank key the
        same times stand for other samples."""
        self._totals: dict[str, Counter[str]] = {}

    def update(self, samples: Sequence[StackSample]) -> dict[str, Counter[str]]:
        """Per role, each label's thread-samples over ``samples`` (labels with a count above 0 only)."""
        before = self._counted
        now = {id(s): c if (c := before.get(id(s))) is not None else (s, role_label_counts(s)) for s in samples}
        totals = {role: Counter(mine) for role, mine in self._totals.items()}
        for key, (_, counts) in before.items():
            if key not in now:
                for role, mine in counts.items():
                    totals[role].subtract(mine)
        for key, (_, counts) in now.items():
            if key not in before:
                for role, mine in counts.items():
                    totals.setdefault(role, Counter()).update(mine)
        self._counted = now
        self._totals = {role: +mine for role, mine in totals.items()}  # unary +: the counts above 0
        return self._totals
