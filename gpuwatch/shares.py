"""Rolling shares of stack labels: over the last ``window_s`` seconds, what fraction of the sampled
moments each kind of thread spent in each activity. Pure: samples in, numbers out.

The main-thread ``data_wait`` share is the outside-in equivalent of TensorFlow's "input %"
(signals.md §0.6). Every share comes with the number of thread-samples behind it, so the reader can
tell 50 % of 4 samples from 50 % of 400.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.model.stacks import (
    MAIN_LABELS, PIN_LABELS, ROLE_MAIN_THREAD, ROLE_PIN, ROLE_WORKER, WORKER_LABELS, StackSample, ThreadStack,
)

ROLES = (ROLE_MAIN_THREAD, ROLE_WORKER, ROLE_PIN)
"""Roles with shares; helper threads (role "other": queue feeders, resource sharers) are left out."""

LABEL_ORDER = {ROLE_MAIN_THREAD: MAIN_LABELS, ROLE_WORKER: WORKER_LABELS, ROLE_PIN: PIN_LABELS}


@dataclass(frozen=True, slots=True)
class RoleShares:
    role: str
    samples: int
    """Thread-samples of this role in the window (each dump contributes one per matching thread)."""
    counts: tuple[tuple[str, int], ...]
    """(label, thread-samples), in the role's label order, labels never seen left out."""
    details: tuple[tuple[str, str, int], ...]
    """(label, most frequent detail, its count) per label seen: e.g. ("busy", "Image.convert", 31)."""

    def count(self, label: str) -> int:
        return dict(self.counts).get(label, 0)

    def share(self, label: str) -> float | None:
        """Fraction 0..1 of this role's samples with ``label``; None when there were no samples."""
        if self.samples == 0:
            return None
        return self.count(label) / self.samples

    def shares(self) -> dict[str, float]:
        return {label: n / self.samples for label, n in self.counts} if self.samples else {}

    def detail(self, label: str) -> str | None:
        for lab, det, _ in self.details:
            if lab == label:
                return det
        return None

    @property
    def top(self) -> str | None:
        """The most frequent label (ties go to the earlier label in the role's order)."""
        return max(self.counts, key=lambda c: c[1])[0] if self.counts else None


@dataclass(frozen=True, slots=True)
class Shares:
    window_s: float
    span_s: float
    """Time actually covered by the samples used (less than window_s early in a watch)."""
    main: RoleShares
    worker: RoleShares
    pin: RoleShares
    dumps_ok: int
    dumps_failed: int
    last_error: str | None
    """The most recent py-spy failure in the window, if any."""

    def role(self, role: str) -> RoleShares:
        return {ROLE_MAIN_THREAD: self.main, ROLE_WORKER: self.worker, ROLE_PIN: self.pin}[role]


def stack_shares(samples: Sequence[StackSample], window_s: float, rank: int | None = None) -> Shares:
    """Label shares per role over the samples whose ``t`` lies within ``window_s`` of the newest.

    ``rank``: only threads of that rank (None: all ranks together).
    """
    recent = _window(samples, window_s)
    by_role: dict[str, list[ThreadStack]] = {r: [] for r in ROLES}
    ok = failed = 0
    last_error = None
    for s in recent:
        for th in s.threads:
            if th.role in by_role and (rank is None or th.rank == rank):
                by_role[th.role].append(th)
        for d in s.dumps:
            if d.ok:
                ok += 1
            else:
                failed += 1
                last_error = d.error
    span = recent[-1].t - recent[0].t if len(recent) > 1 else 0.0
    return Shares(
        window_s=window_s,
        span_s=span,
        main=_role_shares(ROLE_MAIN_THREAD, by_role[ROLE_MAIN_THREAD]),
        worker=_role_shares(ROLE_WORKER, by_role[ROLE_WORKER]),
        pin=_role_shares(ROLE_PIN, by_role[ROLE_PIN]),
        dumps_ok=ok,
        dumps_failed=failed,
        last_error=last_error,
    )


def hot_frames(
    samples: Sequence[StackSample],
    role: str,
    n: int = 10,
    window_s: float | None = None,
    rank: int | None = None,
    label: str | None = None,
) -> list[tuple[str, int]]:
    """The ``n`` most frequent leaf frames ("own" time, as py-spy top sorts by default) of ``role``'s
    threads, as ``("func (file:line)", thread-samples)``, most frequent first (ties: alphabetical)."""
    recent = _window(samples, window_s) if window_s is not None else list(samples)
    c: Counter[str] = Counter()
    for s in recent:
        for th in s.threads:
            if th.role != role or not th.frames:
                continue
            if (rank is None or th.rank == rank) and (label is None or th.label == label):
                c[th.frames[0]] += 1
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _window(samples: Sequence[StackSample], window_s: float) -> list[StackSample]:
    if not samples:
        return []
    newest = max(s.t for s in samples)
    return sorted((s for s in samples if s.t >= newest - window_s), key=lambda s: s.t)


def _role_shares(role: str, threads: list[ThreadStack]) -> RoleShares:
    labels = Counter(th.label for th in threads)
    order = LABEL_ORDER[role]
    counts = tuple((lab, labels[lab]) for lab in order if labels[lab]) + tuple(
        (lab, n) for lab, n in sorted(labels.items()) if lab not in order
    )
    details = []
    for lab, _ in counts:
        dets = Counter(th.detail for th in threads if th.label == lab)
        det, k = min(dets.items(), key=lambda kv: (-kv[1], kv[0]))  # ties: alphabetical
        details.append((lab, det, k))
    return RoleShares(role=role, samples=len(threads), counts=counts, details=tuple(details))
