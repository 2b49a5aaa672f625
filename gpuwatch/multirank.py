"""Per-rank verdicts and the straggler at each tick: the one place the headless stream, recordings,
the TUI and the Prometheus exporter get them from.

:class:`MultiRank` is :class:`~gpuwatch.ranks.RankAnalyses` (one Analysis per rank, fed with
:func:`~gpuwatch.ranks.frame_for_rank` frames) plus the straggler rule over the same frames. Call
:meth:`MultiRank.update` once per frame, next to the whole-job ``Analysis.update``; it returns a
:class:`RankTick`, or None for a frame with fewer than two ranks (a single-process job, or a
world of one: its per-rank verdict would repeat the whole-job one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuwatch.diagnosis.window import recent
from gpuwatch.model.codec import to_dict
from gpuwatch.model.frame import Frame
from gpuwatch.model.verdict import Verdict
from gpuwatch.ranks import SIGNAL_WINDOW_S, RankAnalyses, rank_signals, ranks_of
from gpuwatch.straggler import RankSignals, Straggler, find_straggler


@dataclass(frozen=True)
class RankTick:
    """The ranks of one tick: each rank's verdict, what each rank's main thread did over the last
    SIGNAL_WINDOW_S seconds, and the rank that holds the others back (None when ranks agree or too
    little is known yet)."""

    verdicts: tuple[tuple[int, Verdict], ...]
    """(rank, verdict), by rank."""
    signals: tuple[RankSignals, ...]
    straggler: Straggler | None

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(r for r, _ in self.verdicts)

    def verdict(self, rank: int) -> Verdict | None:
        return next((v for r, v in self.verdicts if r == rank), None)

    def to_json(self) -> dict[str, Any]:
        """The tick record's ``ranks`` and ``straggler`` keys (docs/SCHEMA.md)."""
        return {
            "ranks": [{"rank": r, "verdict": to_dict(v)} for r, v in self.verdicts],
            "straggler": to_dict(self.straggler) if self.straggler is not None else None,
        }


class MultiRank(RankAnalyses):
    """Per-rank analyses and the straggler; :meth:`update` once per frame, on the same thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latest: RankTick | None = None
        """The last tick with two or more ranks (replaced whole, so another thread may read it)."""

    def update(self, frame: Frame) -> RankTick | None:  # type: ignore[override]
        """This frame's :class:`RankTick`, or None when it shows fewer than two ranks."""
        if len(ranks_of(frame)) < 2:
            self._history.append(frame)  # keeps the straggler window's clock honest
            return None
        verdicts = super().update(frame)
        frames = self._history.last(SIGNAL_WINDOW_S)  # holds each rank's window (history.py)
        ranks = sorted({r for f in recent(frames, SIGNAL_WINDOW_S) for r in ranks_of(f)})
        signals = tuple(rank_signals(frames, r, SIGNAL_WINDOW_S) for r in ranks)
        tick = RankTick(tuple(sorted(verdicts.items())), signals, find_straggler(signals))
        self.latest = tick
        return tick


def straggler_line(tick: RankTick | None) -> str:
    """One line for the TUI header: ``straggler: rank 1 (input-bound: waits for input 93 % while
    rank 0 waits in collectives 88 %)``; empty when no straggler is named."""
    s = tick.straggler if tick is not None else None
    if s is None:
        return ""
    mine = next((x for x in tick.signals if x.rank == s.rank), None)
    others = [x for x in tick.signals if x.rank != s.rank and x.collective_share is not None and x.samples]
    if s.cause == "input":
        what = "input-bound: waits for input"
        share = mine.input_share if mine is not None else None
    else:
        what = f"busy in {s.cause}" if s.cause != "unknown" else "slowest"
        share = None
    head = f"{what} {_pct(share)}" if share is not None else what
    if s.rule in ("collectives", "input") and others:
        waits = ", ".join(f"rank {x.rank} waits in collectives {_pct(x.collective_share)}" for x in others)
        return f"straggler: rank {s.rank} ({head} while {waits})"
    return f"straggler: rank {s.rank} ({head})"


def _pct(x: float | None) -> str:
    return "N/A" if x is None else f"{100 * x:.0f} %"
