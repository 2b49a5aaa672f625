"""The verdict-based sections: summary, timeline, per-stage evidence, stalls, ranked remedies.

``marks`` are (t, stage, confidence) for every tick of the run; ``verdicts`` are the full verdicts
that were kept (all of them, or an even sample of a long run: see gather.py).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import median

from gpuwatch.model.verdict import CPU_BOUND, GPU_BOUND, IDLE, STAGE_TITLES, UNKNOWN, Verdict
from gpuwatch.report.model import (
    FAIL, WARN, CheckResult, EvidenceLine, Remedy, Segment, StallSummary, Summary,
)

Mark = tuple[float, str, float]
"""(monotonic t, stage, confidence) of one tick."""

NO_REMEDY = (GPU_BOUND, CPU_BOUND, IDLE, UNKNOWN)
FREQUENT_REMEDY = 0.5
"""A remedy missing from the latest verdict is still listed when it came with half the stage's ticks."""
_NUMBERS = re.compile(r"\d+(\.\d+)?")
"""Stages that are not a bottleneck to fix (a GPU-bound job is healthy)."""


def stage_shares(marks: Sequence[Mark]) -> dict[str, float]:
    n = len(marks)
    return {s: c / n for s, c in Counter(m[1] for m in marks).items()} if n else {}


def summary(marks: Sequence[Mark], verdicts: Sequence[Verdict]) -> Summary:
    shares = stage_shares(marks)
    known_shares = {s: v for s, v in shares.items() if s != UNKNOWN}
    stage = max(known_shares, key=lambda s: known_shares[s]) if known_shares else UNKNOWN
    confs = [m[2] for m in marks if m[1] == stage]
    sentence = next((v.sentence for v in reversed(verdicts) if v.stage == stage), "")
    if not marks:
        sentence = "No frames were collected, so there is nothing to judge."
    elif stage == UNKNOWN and not sentence:
        sentence = "The diagnosis could not name a stage."
    return Summary(stage=stage, title=STAGE_TITLES.get(stage, stage), share=shares.get(stage, 0.0),
                   confidence=sum(confs) / len(confs) if confs else 0.0, sentence=sentence)


def timeline(marks: Sequence[Mark], interval: float) -> tuple[Segment, ...]:
    """Runs of the same stage; a run ends where the next one's first tick begins."""
    if not marks:
        return ()
    t0 = marks[0][0]
    out: list[Segment] = []
    start = 0
    for i in range(1, len(marks) + 1):
        if i < len(marks) and marks[i][1] == marks[start][1]:
            continue
        run = marks[start:i]
        end = marks[i][0] if i < len(marks) else marks[-1][0] + interval
        confs = [m[2] for m in run]
        out.append(Segment(stage=run[0][1], start_s=round(run[0][0] - t0, 3), end_s=round(end - t0, 3),
                           ticks=len(run), confidence_mean=sum(confs) / len(confs), confidence_min=min(confs)))
        start = i
    return tuple(out)


def evidence(verdicts: Sequence[Verdict]) -> tuple[EvidenceLine, ...]:
    """For each stage that was the verdict, the signals behind it, over the ticks it held."""
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for v in verdicts:
        for e in v.evidence:
            if e.stage == v.stage:
                groups[(v.stage, e.signal)].append(e)
    out = []
    for (stage, signal), items in groups.items():
        values = [e.value for e in items if e.value is not None]
        last = items[-1]
        out.append(EvidenceLine(
            stage=stage, signal=signal, supports_share=sum(1 for e in items if e.supports) / len(items),
            value_median=median(values) if values else None, threshold=last.threshold, op=last.op, text=last.text,
        ))
    order = {s: i for i, s in enumerate(Counter(v.stage for v in verdicts))}
    out.sort(key=lambda e: (order.get(e.stage, 99), -e.supports_share, e.signal))
    return tuple(out)


def stall(verdicts: Sequence[Verdict]) -> StallSummary | None:
    stalls = [v.stall for v in verdicts if v.stall is not None]
    if not stalls:
        return None
    with_cause = Counter(s.coincides_with for s in stalls if s.coincides_with)
    return StallSummary(
        seen_share=len(stalls) / len(verdicts), period_s=median(s.period_s for s in stalls),
        idle_s=median(s.idle_s for s in stalls),
        coincides_with=with_cause.most_common(1)[0][0] if with_cause else None,
    )


def remedies(marks: Sequence[Mark], verdicts: Sequence[Verdict], checks: Sequence[CheckResult]) -> tuple[Remedy, ...]:
    """Stage remedies ranked by what fixing the stage would give over the whole run, then check fixes."""
    shares = stage_shares(marks)
    ranked: list[Remedy] = []
    for stage, share in shares.items():
        mine = [v for v in verdicts if v.stage == stage]
        texts = _stage_remedies(mine)
        if stage in NO_REMEDY and not texts:
            continue
        ups = [v.speedup for v in mine if v.speedup is not None and v.speedup > 0]
        while_up = median(ups) if ups else None
        run_up = 1.0 / ((1.0 - share) + share / while_up) if while_up else None
        for text in texts:
            ranked.append(Remedy(text=text, stage=stage, check=None, share=share,
                                 speedup_while=while_up, speedup_run=run_up))
    ranked.sort(key=lambda r: (-(r.speedup_run or 0.0), -r.share))
    for status in (FAIL, WARN):
        for c in checks:
            if c.status == status and c.fix:
                ranked.append(Remedy(text=c.fix, stage=None, check=c.id, share=0.0, speedup_while=None, speedup_run=None))
    return tuple(ranked)


def _key(text: str) -> str:
    return _NUMBERS.sub("N", text)


def _stage_remedies(mine: Sequence[Verdict]) -> list[str]:
    """The remedies of the stage's latest verdict (the freshest wording: they quote live numbers
    and PIDs), plus any other remedy that came with at least half of the stage's verdicts."""
    latest = next((v.remedies for v in reversed(mine) if v.remedies), ())
    texts, keys = list(latest), {_key(t) for t in latest}
    freq: Counter = Counter()
    newest: dict[str, str] = {}
    for v in mine:
        for t in v.remedies:
            newest[_key(t)] = t
        freq.update({_key(t) for t in v.remedies})
    for k, n in freq.most_common():
        if k not in keys and n >= FREQUENT_REMEDY * len(mine):
            texts.append(newest[k])
            keys.add(k)
    return texts
