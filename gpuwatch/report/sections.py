"""The verdict-based sections: summary, timeline, per-stage evidence, stalls, ranked remedies.

``marks`` are (t, stage, confidence) for every tick of the run; ``verdicts`` are the full verdicts
that were kept (all of them, or an even sample of a long run: see gather.py).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import replace
from statistics import median

from gpuwatch.diagnosis.evidence import status as evidence_status
from gpuwatch.diagnosis.sentence import HELD, HELD_NOTE, without_epochs
from gpuwatch.diagnosis.thresholds import MIN_GAIN, RUN_WARNING_SHARE, STRAGGLER_HEADLINE_SHARE
from gpuwatch.model.verdict import (
    CPU_BOUND,
    IDLE,
    LEVEL_WARNING,
    PHASE_SIGNAL,
    PIPELINE,
    STAGE_TITLES,
    UNKNOWN,
    FixGain,
    Verdict,
)
from gpuwatch.report.model import (
    FAIL, WARN, CheckResult, EvidenceLine, Remedy, Segment, StageShare, StallSummary, Summary, StragglerSeen,
)
from gpuwatch.report.ranking import Mark, StageCost, stage_costs
from gpuwatch.straggler import Straggler

FREQUENT_REMEDY = 0.5
"""A remedy missing from the latest verdict is still listed when it came with half the stage's ticks."""
_NUMBERS = re.compile(r"\d+(\.\d+)?")
_PLURAL = re.compile(r"\b(N \w+?)s\b")
"""A noun's plural after a number ("N cores", "N CPUs"), for _key."""
CHECK_TOPICS = {"workers_vs_cores": "num_workers", "pageable_h2d": "pin", "other_gpu_processes": "GPU tenant",
                "pcie_link": "PCIe link", "cpu_quota": "CPU quota", "network_fs": "on local storage"}
"""A check's fix is left out of the remedies when a stage remedy already says it (same topic)."""


def stage_shares(marks: Sequence[Mark]) -> dict[str, float]:
    n = len(marks)
    return {s: c / n for s, c in Counter(m[1] for m in marks).items()} if n else {}


def _title(stage: str) -> str:
    return STAGE_TITLES.get(stage, stage)


def _said(stage: str, verdicts: Sequence[Verdict]) -> Verdict | None:
    """The stage's latest verdict of the story it told most (_kind: "Input-bound on preparing data in
    the training loop", "Input-bound on the DataLoader workers' CPU work", ...) whose readings still
    held it (one said while the verdict was only being held on weaker readings describes the stage
    less well), else its latest. The latest alone can be the run's last few ticks: an H100 job that
    augmented in its loop 69 % of its time (its own clock), said so for 24 ticks, was headlined by the
    last 5, a validation pass's waits on the workers. Idle's stories are one story settling as samples
    come in ("Not training" over the first 30 ticks of a job that sleeps in its fetch, "Mostly idle:
    ... 4 in the model's step" once enough samples show it train a little): its latest is kept."""
    mine = [v for v in verdicts if v.stage == stage and v.sentence]
    pool = [v for v in mine if HELD not in v.sentence] or mine
    if not pool:
        return None
    if stage == IDLE:
        return pool[-1]
    told = Counter(_kind(v) for v in pool)
    last = {_kind(v): i for i, v in enumerate(pool)}
    kind = max(told, key=lambda k: (told[k], last[k]))  # a tie goes to the story told last
    return next(v for v in reversed(pool) if _kind(v) == kind)


def _kind_said(verdicts: Sequence[Verdict], stage: str = IDLE) -> Verdict | None:
    """What the job did while Idle (or Unknown, whose sentences tell several stories too) held most:
    the latest verdict of the kind (its sentence's words up to the first colon: "Compiling, not
    training", "Not training", "Input-bound for a reason gpuwatch does not measure", ...) that held
    the most ticks. The run's latest Idle sentence is often its last tick's "the job exited", which
    said nothing of the 69 % a compile held."""
    mine = [v for v in verdicts if v.stage == stage and v.sentence]
    if not mine:
        return None
    kind = Counter(_kind(v) for v in mine).most_common(1)[0][0]
    return next(v for v in reversed(mine) if _kind(v) == kind)


def _kind(v: Verdict) -> str:
    """The story a sentence tells: its words up to the first colon, or up to its first number where it
    has no colon (PCIe's "The main thread spends 20 % of its time copying ..." would be a story of its
    own at each reading); the TUI's hold note left out."""
    return re.split(r"[:\d]", HELD_NOTE.sub("", v.sentence), maxsplit=1)[0]


def _story(stage: str, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """The stage's verdicts of the story its headline sentence tells (_said): the headline's best fix
    and the Remedies section read them, so that both tell that story (run 53's loop-prep job was
    quoted "more workers ... 1.06x", and its Remedies led with the validation loader's waits, from
    the last ticks' other story). Idle keeps all its verdicts (its stories are one settling)."""
    mine = [v for v in verdicts if v.stage == stage]
    said = _said(stage, verdicts)
    if said is None or stage == IDLE:
        return mine
    return [v for v in mine if v.sentence and _kind(v) == _kind(said)] or mine


def _kind_sentence(verdicts: Sequence[Verdict], stage: str = IDLE) -> str:
    """The sentence of _kind_said, without the TUI's hold note."""
    v = _kind_said(verdicts, stage)
    return HELD_NOTE.sub("", v.sentence) if v is not None else ""


def straggler(named: Sequence[Straggler], rank_ticks: int) -> StragglerSeen | None:
    """The rank named most often as the straggler, with its latest sentence."""
    if not named or not rank_ticks:
        return None
    rank, n = Counter(s.rank for s in named).most_common(1)[0]
    latest = next(s for s in reversed(named) if s.rank == rank)
    return StragglerSeen(rank=rank, ticks=n, of=rank_ticks, sentence=latest.sentence,
                         leads=n / rank_ticks >= STRAGGLER_HEADLINE_SHARE)


def summary(marks: Sequence[Mark], verdicts: Sequence[Verdict], costs: Sequence[StageCost] | None = None,
            lagging: StragglerSeen | None = None) -> Summary:
    """The stage that cost the job most over the run (ranking.py), with its sentence."""
    costs = list(stage_costs(marks, verdicts) if costs is None else costs)
    if not costs:
        return Summary(stage=UNKNOWN, title=_title(UNKNOWN), share=0.0, confidence=0.0,
                       sentence="No frames were collected, so there is nothing to judge.")
    top = costs[0]
    confs = [m[2] for m in marks if m[1] == top.stage]
    said = _said(top.stage, verdicts)
    # its own tick's epoch clause left out: the headline says the run's end's (Summary.epochs)
    sentence = (without_epochs(said.sentence, said.phases) if said is not None else "") or (
        "The diagnosis could not name a stage." if top.stage == UNKNOWN else "")
    if top.stage == UNKNOWN:  # the story told most, not the latest tick's (review 31)
        kind = _kind_sentence(verdicts, UNKNOWN)
        said = next((v for v in reversed(verdicts) if v.stage == UNKNOWN and HELD_NOTE.sub("", v.sentence) == kind),
                    said)
        sentence = kind or sentence
    # The stage held most, said where it held longer than the headline's (a bottleneck's cost can
    # lead with less time); unknown too, where no stage could be named for longer (review 31: a run
    # 70 % unknown under a 25 % Disk headline never said so)
    held = max(costs, key=lambda c: (c.share, c.stage != UNKNOWN))
    # A named stage's own sentence too: "the verdict was CPU-bound, which cost the run less" left
    # the reader the title alone, where the stage beside the headline is said with its sentence
    most = (StageShare(held.stage, _title(held.stage), held.share,
                       _no_epochs(_kind_said(verdicts, held.stage) if held.stage in (IDLE, UNKNOWN)
                                  else _said(held.stage, verdicts)),
                       speedup_run=held.speedup_run)
            if held.stage != top.stage and held.share > top.share else None)
    other = _other_side(costs)
    if other is None or (most is not None and other.stage == most.stage):
        other = _held_longer(costs, most) or other
    beside = None
    if other is not None and (most is None or other.stage != most.stage):
        why = _kind_said(verdicts) if other.stage == IDLE else _said(other.stage, verdicts)
        beside = StageShare(other.stage, _title(other.stage), other.share, _no_epochs(why))
    told = _story(top.stage, verdicts)  # the best fix of the story the headline tells
    fix, quoted = best_fix(told), _with_remedies(told)
    return Summary(stage=top.stage, title=_title(top.stage), share=top.share,
                   confidence=sum(confs) / len(confs) if confs else 0.0, sentence=sentence,
                   sentence_at_s=_at(said, verdicts),
                   speedup_run=top.speedup_run, speedup_while=top.speedup_while, speedup_floor=top.floor,
                   speedup_floor_cpus=top.floor_cpus,
                   most_held=most, beside=beside, warnings=_warnings(verdicts, top.stage),
                   straggler=lagging, best_fix=fix, best_fix_at_s=_at(quoted, verdicts) if fix is not None else None,
                   fix_above_ceiling=_above_ceiling(quoted, top) is not None)


def _no_epochs(v: Verdict | None) -> str:
    """A verdict's sentence quoted beside the headline, without the TUI's hold note and its epoch
    clause: that clause is its own tick's, and the headline's and the epoch section's already say the
    epochs. One report read "5 times in 48 s", "3 times in 29 s" and "8 times in 59 s" for one job's
    epochs (review 32)."""
    if v is None:
        return ""
    if v.stage == IDLE and any(e.stage == IDLE and e.signal == "stopped" for e in v.evidence):
        # The live sentence is the present's ("The job is stopped ...: nothing to diagnose until it
        # runs again"): quoted over a run that ran again, it said the job was stopped now (review 36).
        return STOPPED_THEN
    return without_epochs(HELD_NOTE.sub("", v.sentence), v.phases)


STOPPED_THEN = ("The job was stopped then (state T: SIGSTOP, Ctrl-Z or a debugger), so no pipeline ran to "
                "diagnose.")
"""An Idle stretch of a stopped job, said of the past beside the headline."""


def _held_longer(costs: Sequence[StageCost], most: StageShare | None) -> StageCost | None:
    """A named stage that held longer than the headline, RUN_WARNING_SHARE or more, where the stage held
    most is another: a CPU-bound stretch of 30 % went unsaid under a 22 % Contention headline beside a
    33 % Unknown, while the TUI, the JSON stream and Prometheus ended on CPU-bound (review 32)."""
    top = costs[0]
    return next((c for c in sorted(costs[1:], key=lambda c: -c.share)
                 if c.stage not in (IDLE, UNKNOWN) and (most is None or c.stage != most.stage)
                 and c.share > top.share and c.share >= RUN_WARNING_SHARE), None)


def _other_side(costs: Sequence[StageCost]) -> StageCost | None:
    """The other side of a run that trained only part of the time, where it held RUN_WARNING_SHARE of
    the run or more: beside an Idle headline, the first stage that held while the job trained; beside
    any other headline, Idle (Summary.beside). ``costs`` is ranked, the headline first."""
    top = costs[0].stage
    if top == UNKNOWN:  # under no stage named, the stage named most (review 31)
        other = max((c for c in costs if c.stage != UNKNOWN), key=lambda c: c.share, default=None)
    else:
        other = next((c for c in costs if (c.stage not in (IDLE, UNKNOWN) if top == IDLE else c.stage == IDLE)), None)
    return other if other is not None and other.share >= RUN_WARNING_SHARE else None


def _above_ceiling(quoted: Verdict | None, c: StageCost, bounds: bool = False) -> float | None:
    """The ceiling of the verdict whose remedies are quoted, where a fix's own figure (or, with
    ``bounds``, its bound) there is above the stage's ceiling over the run (the verdicts' median) and
    neither is a floor; else None. The headline (Summary.fix_above_ceiling) and the stage's remedy line
    (Remedy.latest_while) say it."""
    if (quoted is None or quoted.speedup is None or not c.bottleneck or c.floor or quoted.speedup_floor
            or c.speedup_while is None):
        return None
    # ``bounds``: a fix's bound counts too, for the stage's remedy line: "up to about 1.49x" under a
    # stage line of "1.40x while it holds" read as a fix above the stage it fixes (review 48). The
    # headline says a bound above the run's ceiling beside the bound itself (words._unmeasured_part).
    over = any(max(g.factor or 0.0, (g.upper or 0.0) if bounds else 0.0) > c.speedup_while + 0.05
               for g in quoted.gains)
    return quoted.speedup if over else None


def _at(v: Verdict | None, verdicts: Sequence[Verdict]) -> float | None:
    """Seconds from the first verdict to ``v``."""
    return round(v.t - verdicts[0].t, 1) if v is not None else None


def best_fix(mine: Sequence[Verdict]) -> FixGain | None:
    """The fix with the largest estimate in the verdict whose remedies the report lists
    (_with_remedies over the headline story's verdicts, _story): the headline quotes the figure
    written beside that remedy, so the two agree (a median over the stage's verdicts read 2.80x in
    the headline beside 2.3x under Remedies)."""
    v = _with_remedies(mine)
    got = [g for g in (v.gains if v is not None else ()) if g.factor is not None]
    return max(got, key=lambda g: g.factor) if got else None  # type: ignore[arg-type, return-value]


def _with_remedies(mine: Sequence[Verdict]) -> Verdict | None:
    """The stage's latest verdict that gave remedies: the freshest wording (live numbers, PIDs). Not
    one held on weaker readings, whose remedies are an earlier tick's (diagnosis._held): the time
    said with them would be that later tick's."""
    return next((v for v in reversed(mine) if v.remedies and HELD not in v.sentence),
                next((v for v in reversed(mine) if v.remedies), None))


def _warnings(verdicts: Sequence[Verdict], headline: str) -> tuple[StageShare, ...]:
    """Pipeline stages at warning level for RUN_WARNING_SHARE of the kept ticks or more: what the TUI
    showed in yellow, which the report names too."""
    if not verdicts:
        return ()
    out = []
    for stage in PIPELINE:
        n = sum(1 for v in verdicts if v.level(stage) == LEVEL_WARNING)
        if stage != headline and n / len(verdicts) >= RUN_WARNING_SHARE:
            why = next((w for v in reversed(verdicts) if v.level(stage) == LEVEL_WARNING
                        for w in (v.why_warned(stage),) if w), "")
            out.append(StageShare(stage, _title(stage), n / len(verdicts), why))
    return tuple(sorted(out, key=lambda w: -w.share))


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
    held = Counter(v.stage for v in verdicts)
    for v in verdicts:
        for e in v.evidence:
            if e.stage == v.stage:
                groups[(v.stage, e.signal)].append(e)
    out = []
    for (stage, signal), items in groups.items():
        values = [e.value for e in items if e.value is not None]
        latest = signal.startswith(PHASE_SIGNAL)  # counts over the last minute: a middle one is an early, short count
        mid = items[-1] if latest else _middle(items)
        out.append(EvidenceLine(
            stage=stage, signal=signal, supports_share=sum(1 for e in items if e.supports) / len(items),
            value_median=mid.value if values else None, threshold=mid.threshold,
            op=mid.op, text=mid.text, status=evidence_status(mid), latest=latest, seen=len(items), of=held[stage],
        ))
    order = {s: i for i, s in enumerate(Counter(v.stage for v in verdicts))}
    out.sort(key=lambda e: (order.get(e.stage, 99), -e.supports_share, e.signal))
    return tuple(out)


def _middle(items: list) -> object:
    """The item with the middle reading (the lower median: a real item, so its text, value and cut
    agree with each other, and ``value_median`` is its value: the mean of the two middle readings of
    an even count said 55 % in the JSON beside "51 %" in the words); the latest where nothing was measured."""
    measured = sorted((e for e in items if e.value is not None), key=lambda e: e.value)
    return measured[(len(measured) - 1) // 2] if measured else items[-1]


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


def remedies(marks: Sequence[Mark], verdicts: Sequence[Verdict], checks: Sequence[CheckResult],
             costs: Sequence[StageCost] | None = None) -> tuple[Remedy, ...]:
    """The headline stage's remedies first, then the other bottlenecks' by what fixing each would give
    over the whole run (ranking.py), then the other stages' advice; then the fix of each failed and
    warned check that no stage remedy already gives."""
    costs = list(stage_costs(marks, verdicts) if costs is None else costs)
    order = costs[:1] + sorted(costs[1:], key=lambda c: (not c.bottleneck, -c.weight, -c.share))
    ranked: list[Remedy] = []
    trained = _trained_beside_idle(costs)
    most = max(costs, key=lambda c: c.share) if costs else None  # the headline names the stage held most
    for c in order:
        if not c.bottleneck and c is not costs[0] and c is not trained and not _cpu_bound_most(c, most):
            # a healthy, CPU-bound or idle stage's advice only where it is the headline (an idle job
            # not training has none; one that trains slowly is told where its main thread waits),
            # where it held while an Idle headline's job trained, or CPU-bound held most of the run
            continue
        if c is not costs[0] and c is not trained and c is not most and _negligible(c, verdicts):
            continue
        told = _story(c.stage, verdicts)
        quoted = _with_remedies(told)
        above = _above_ceiling(quoted, c, bounds=True)
        for text in _stage_remedies(told):
            ranked.append(Remedy(text=text, stage=c.stage, check=None, share=c.share,
                                 speedup_while=c.speedup_while if c.bottleneck else None, speedup_run=c.speedup_run,
                                 speedup_floor=c.floor and c.bottleneck, speedup_floor_cpus=c.floor_cpus and c.bottleneck,
                                 latest_while=above))
    ranked += _beside(verdicts, {r.stage for r in ranked}, {r.text for r in ranked})
    ranked = _epoch_fixes_once(ranked, verdicts)  # a beside stage's "persistent_workers=True" said once too
    said = " ".join(r.text for r in ranked).lower()
    for status in (FAIL, WARN):
        for c in checks:
            topic = CHECK_TOPICS.get(c.id)
            if c.status == status and c.fix and not (topic and topic.lower() in said):
                ranked.append(Remedy(text=c.fix, stage=None, check=c.id, share=0.0, speedup_while=None,
                                     speedup_run=None, title=c.title))
    return tuple(ranked)


def _beside(verdicts: Sequence[Verdict], listed: set[str | None], said: set[str]) -> list[Remedy]:
    """The remedies of each pipeline stage that met its own cuts beside the verdict for
    RUN_WARNING_SHARE of the run or more (Verdict.beside_remedies) and has none listed yet, those of its
    latest such tick, most often met first. Trial 40: CPU prep met its cuts beside a Contention verdict
    95 % of a run and the report listed no fix for it (an index on its workers' SQL lookup ran the job
    38x faster)."""
    if not verdicts:
        return []
    seen: Counter = Counter()
    latest: dict[str, tuple[str, ...]] = {}
    for v in verdicts:
        for stage, texts in v.beside_remedies:
            seen[stage] += 1
            latest[stage] = texts
    out: list[Remedy] = []
    for stage, n in seen.most_common():
        share = n / len(verdicts)
        if stage in listed or share < RUN_WARNING_SHARE:
            continue
        out += [Remedy(text=t, stage=stage, check=None, share=0.0, speedup_while=None, speedup_run=None,
                       beside=share) for t in latest[stage] if t not in said]
    return out


def _cpu_bound_most(c: StageCost, most: StageCost | None) -> bool:
    """CPU-bound held most of the run under another stage's headline, which says so ("Most of the
    time (68%) the verdict was CPU-bound"): its advice names where the main thread computes, which
    may be the job's own per-step code. A job whose gc.collect() every 10 steps took half its time
    read only the side stage's advice (trial 38), while CPU-bound's named the line that called it."""
    return c is most and c.stage == CPU_BOUND


def _negligible(c: StageCost, verdicts: Sequence[Verdict]) -> bool:
    """A stage below the headline whose fix gives under MIN_GAIN over the run (a figure, not a floor),
    and which was neither the verdict nor at warning level for RUN_WARNING_SHARE of it: its advice is
    left out. A stopped job's one tick of CPU prep listed three remedies under "fixing it: up to 1.00x
    over this run" (review 36); one that warned most of the run keeps its advice, as does one whose
    figure is a floor (PCIe at "2.1x or more" for 4 ticks: its samples bound it only from below)."""
    if c.speedup_run is None or c.speedup_run >= MIN_GAIN or c.floor or not verdicts:
        return False
    there = sum(1 for v in verdicts if v.stage == c.stage or c.stage in v.secondary) / len(verdicts)
    return there < RUN_WARNING_SHARE


def _trained_beside_idle(costs: Sequence[StageCost]) -> StageCost | None:
    """Under an Idle headline, the stage that held while the job trained, as the headline's
    Summary.beside names it: its advice is listed. A job that sat in its own upload() 61 % of the
    run and trained CPU-bound 32 % read "Nothing to fix was found" (review 28)."""
    return _other_side(costs) if costs and costs[0].stage == IDLE else None


EPOCH_FIXES = ("persistent_workers=true", "validation passes take", "most waits are for the validation loader")
"""Remedies the epoch structure gives whichever stage holds (remedies.py: keeping the workers, the
validation passes): the same fix for the same phases."""


def _epoch_fixes_once(ranked: Sequence[Remedy], verdicts: Sequence[Verdict]) -> list[Remedy]:
    """An epoch fix listed under two stages is said once, where it first comes, in the wording of
    the latest tick that gave it. init_restarts listed persistent_workers=True under Contention
    ("re-created 15 times in 44 s") and again under CPU prep ("23 times in 59 s", with an estimate):
    one fix with two sets of figures (review 44)."""
    said_at = {text: v.t for v in verdicts for text in v.remedies}  # in time order: the latest tick stays
    out: list[Remedy] = []
    first: dict[str, int] = {}
    for r in ranked:
        head = next((h for h in EPOCH_FIXES if r.text.lower().startswith(h)), None)
        if head is None or head not in first:
            if head is not None:
                first[head] = len(out)
            out.append(r)
        elif said_at.get(r.text, float("-inf")) > said_at.get(out[first[head]].text, float("-inf")):
            out[first[head]] = replace(out[first[head]], text=r.text)
    return out


UNSETTLED = ("if the workers decode images", "if the loading decodes images")
SETTLED = "make each item cheaper"
"""The "cheaper item" remedy once worker or loading samples showed no image decoder (remedies.py
_cheaper_items) replaces the decoder advice earlier verdicts gave as a condition while samples were
few: listed together, the report said "If the workers decode images, use a faster decoder" beside
"no worker sample was in an image decoder" (trial 26)."""


def _key(text: str) -> str:
    """What a remedy is about: its words up to the first colon or comma, numbers left out, and the
    noun after a number taken in the singular (the same fix worded with other live numbers, or with a
    different reason after the colon, is one fix: "use 0.51 core of 2 CPUs" and "use 1.08 cores of 2
    CPUs" were listed as two)."""
    head = _NUMBERS.sub("N", re.split(r"[:,;(]", text, maxsplit=1)[0]).strip()
    return _PLURAL.sub(r"\1", head).lower()


def _stage_remedies(mine: Sequence[Verdict]) -> list[str]:
    """The remedies of the stage's latest verdict (the freshest wording: they quote live numbers
    and PIDs), plus any other remedy that came with at least half of the stage's verdicts."""
    v = _with_remedies(mine)
    latest = v.remedies if v is not None else ()
    texts, keys = [], set()
    for t in latest:  # one remedy per fix, even where one verdict worded it twice
        if _key(t) not in keys:
            texts.append(t)
            keys.add(_key(t))
    freq: Counter = Counter()
    newest: dict[str, str] = {}
    for v in mine:
        for t in v.remedies:
            newest[_key(t)] = t
        freq.update(list(dict.fromkeys(_key(t) for t in v.remedies)))  # in order: ties keep the first seen, not a hash order
    settled = {k for k in keys if k.startswith(SETTLED)}
    for k, n in freq.most_common():
        if settled and k.startswith(UNSETTLED):
            continue  # the decoder advice said as a condition before the samples settled it
        if k not in keys and n >= FREQUENT_REMEDY * len(mine):
            texts.append(newest[k])
            keys.add(k)
    return texts
