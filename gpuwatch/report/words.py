"""The report's verdict and remedies in words: one wording for the Markdown and the HTML forms."""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.diagnosis.sentence import phase_words
from gpuwatch.diagnosis.evidence import count
from gpuwatch.diagnosis.thresholds import MAX_SPEEDUP, MIN_GAIN, PHASE_MIN_SHARE, PHASE_WINDOW_S, WINDOW_S
from gpuwatch.model.verdict import (FIX_WORDS, GPU_BOUND, IDLE, LEFT_ALIVE, RESPAWN, UNKNOWN, FixGain, Phase,
                                    gain_words, times)
from gpuwatch.report.model import Remedy, Report, Source, Summary


def speedup(x: float) -> str:
    return f"{x:.2f}x"


def capped(x: float | None) -> bool:
    """At the cap (MAX_SPEEDUP)."""
    return x is not None and x >= MAX_SPEEDUP - 1e-9


def floor_why(x: float | None, cpus: bool = False) -> str:
    """Why a floor is one: the input taking the step's CPUs (Summary.speedup_floor_cpus), the cap, or
    the samples the share was read over, which bound it only from below ("as its wait was nearly all
    the time" stood beside a wait of 86 %, 12 of 14 samples, whose interval reaches the cap's share:
    speedup.shown)."""
    if cpus and not capped(x):
        return (f"its input takes the CPUs the step runs on too, so a cheaper input gives the step CPU as well "
                f"(the figures count only the wait it removes); "
                f"{speedup(x or 0.0)} or more while it holds")
    if capped(x):
        return f"its wait was nearly all the time and {speedup(MAX_SPEEDUP)} while it holds is the cap"
    return f"the samples gpuwatch took bound it only from below, at {speedup(x or 0.0)} or more while it holds"


def too_short(s: Source) -> str:
    """For a snapshot report (Summary.snapshot: under one verdict window, WINDOW_S), that it is one,
    said before the headline. A one-tick replay read "Contention cost the job most: it held the
    verdict 100% of the time, and fixing it could make the whole run about 1.90x faster" (trial 27)."""
    secs = f"{int(s.covered_s * 10) / 10:g}"  # floored: 7.95 s is not "8 s", the window itself
    return (f"Watched only {secs} s ({count(s.frames, 'tick')}), less than the {WINDOW_S:.0f} s one verdict is "
            "judged over: too short to tell what costs the run. What those ticks showed:")


def read_at(m: Summary) -> str:
    """When the headline sentence's readings were taken (Summary.sentence_at_s): one tick's, where the
    evidence section gives medians. "Processes outside the job use 1.00 core of 2 CPUs" stood above
    a median of 43 % with nothing to say which was which."""
    if m.sentence_at_s is None or m.stage in (IDLE, UNKNOWN) or not any(c.isdigit() for c in m.sentence):
        return ""  # "collecting evidence: 1 stack sample" and "in upload (job.py:14)" are no readings
    return (f" (These readings are from {m.sentence_at_s:.0f} s into the run; the evidence section gives "
            "each signal's middle reading over the ticks the stage held.)")


REMEDIES_READ_AT = "A stage's remedies quote the readings of the latest tick that gave them."
"""Said above the stage remedies: their live numbers and PIDs are one tick's (sections._stage_remedies),
not the medians of the evidence section."""


def _unmeasured_part(fix: FixGain, ceiling: float | None = None) -> str:
    """The ceiling in the headline is the stage's whole cost gone; a fix removes its own part of it.
    Where part of that is a cost no signal shows (FixGain.partial), it is said beside the figure, with
    its bound where one is known ("1.40x while the stage holds from what was measured" read as the
    stage holding from it)."""
    if not fix.partial:
        return ""
    if fix.upper is not None and ceiling is not None and fix.upper > ceiling + 0.05:
        # its bound is its latest tick's, above the run's ceiling said before it (review 48)
        return (f" from what was measured, up to about {times(fix.upper)}x at its latest tick (above the "
                f"{times(ceiling)}x the stage's ticks read in the middle),")
    if fix.upper is not None:
        return f" from what was measured, up to about {times(fix.upper)}x,"
    return " from what was measured, maybe more,"


def headline(m: Summary) -> tuple[str, str]:
    """(the stage's title, the rest of the paragraph): what cost the job most, how much, and why;
    for a report too short to judge a run (Summary.snapshot, too_short), only what its ticks held."""
    # Unknown names no stage, so it has no confidence to give (its verdicts carry 0)
    conf = "" if m.stage == UNKNOWN else f" (mean confidence {m.confidence:.2f})"
    ends = f" {m.epochs}" if m.epochs else ""
    if m.snapshot:
        return m.title, f"held the verdict {m.share:.0%} of those ticks{conf}. {m.sentence}{read_at(m)}{ends}".rstrip()
    if m.speedup_run is not None:
        much = (f"{speedup(m.speedup_run)} faster or more, as {floor_why(m.speedup_while, m.speedup_floor_cpus)}"
                if m.speedup_floor
                else f"{gain_words(m.stage)} {speedup(m.speedup_run)} faster")
        if not m.speedup_floor and m.share < 1.0 and m.speedup_while is not None:
            # The run figure counts the stage's gain on the ticks it held and none on the rest; its
            # cause may weigh there too, so it bounds nothing ("up to 1.75x" where the job's
            # oversubscribed workers, fixed, ran 5.4x: their wait weighed on Contention's ticks too;
            # review 44). The ceiling is the figure while it holds.
            much = (f"{speedup(m.speedup_run)} faster, counting only the ticks it held; {gain_words(m.stage)} "
                    f"{speedup(m.speedup_while)} while it holds, and its cause may weigh on the other ticks too")
        # Beside a stage held longer whose cost has no figure (CPU-bound: the job's own compute, which may
        # hold waste no stack sample tells from work), "cost the job most" is a claim among the
        # figures only (review 48: Contention 14 % "cost the job most" beside CPU-bound 83 %).
        most = "cost the job most of what was estimated" if _unestimated_longer(m) else "cost the job most"
        lead = (f"{most}: it held the verdict {m.share:.0%} of the time, and fixing it could make "
                f"the whole run {much}")
    else:
        lead = f"held the verdict {m.share:.0%} of the time"
    text = f"{lead}{conf}. {m.sentence}{read_at(m)}{ends}".rstrip()
    if m.best_fix is not None and m.best_fix.factor is not None:
        part = _unmeasured_part(m.best_fix, m.speedup_while)
        if m.best_fix.factor < MIN_GAIN and not m.best_fix.partial:
            # "expected to gain most: about 1.01x" named a winner among fixes that gain nothing measurable
            text += (f" None of the fixes proposed is expected to gain much: the largest estimate, for "
                     f"{FIX_WORDS[m.best_fix.fix]}, is about {times(m.best_fix.factor)}x while the stage holds "
                     "(each fix's own figure is under Remedies).")
        elif m.stage == GPU_BOUND:  # the GPU's own fixes carry no estimate: "gain most" compared with none
            much = "up to" if m.best_fix.bound else "about"
            text += (f" Of the fixes proposed, {FIX_WORDS[m.best_fix.fix]} is expected to give {much} "
                     f"{times(m.best_fix.factor)}x{part} while the stage holds; the GPU-side fixes are not "
                     "estimated (each fix's own figure is under Remedies).")
        elif m.fix_above_ceiling:
            # The fix's figure is its tick's, bounded by that tick's ceiling; the stage's own over the run
            # (the median) bounds what it gives over the run, so that is the figure claimed, and the
            # tick's is said as a reading. "About 4.67x while the stage holds" beside "2.80x while it
            # holds bounds any fix" left the reader two figures for one claim (review 32).
            at = f", {m.best_fix_at_s:.0f} s into the run," if m.best_fix_at_s is not None else ""
            text += (f" Of the fixes proposed, {FIX_WORDS[m.best_fix.fix]} is expected to gain most: up to "
                     f"{speedup(m.speedup_while or 0.0)} while the stage holds, the stage's own ceiling over the "
                     f"whole run, which bounds any fix (its latest tick{at} read {times(m.best_fix.factor)}x "
                     "for it; each fix's own figure, from that tick's readings, is under Remedies).")
        else:
            much = "up to" if m.best_fix.bound else "about"
            text += (f" Of the fixes proposed, {FIX_WORDS[m.best_fix.fix]} is expected to gain most: {much} "
                     f"{times(m.best_fix.factor)}x{part} while the stage holds (each fix's own figure is under "
                     "Remedies).")
    most = m.most_held
    # "Most of the time (25%)" read as a majority: under half, it is the largest share
    lead = "" if most is None else "Most of the time" if most.share > 0.5 else "For the largest share of the time"
    if most is not None and most.stage == IDLE:
        # Not training has no cost a fix would give back, yet it is not "less": a torch.compile
        # start held 69 % of a run. What the job did instead is said, from its own sentence.
        what = f". {most.why}" if most.why else "."
        text += f" {lead} ({most.share:.0%}) the verdict was {most.title}, with no pipeline stage to fix{what}"
    elif most is not None and most.stage == UNKNOWN:
        # nothing measured what it cost: not "which cost the run less"
        what = f". {most.why}" if most.why else "."
        text += f" {lead} ({most.share:.0%}) no stage could be named{what}"
    elif most is not None:
        # Ranked on unrounded costs: two figures that read the same are said as the same
        same = (most.speedup_run is not None and m.speedup_run is not None
                and f"{most.speedup_run:.2f}" == f"{m.speedup_run:.2f}")
        cost = (f", at about the same cost to the run (fixing it: {speedup(most.speedup_run or 0.0)} over the run),"
                if same else ", at less cost to the run,")
        if most.stage == GPU_BOUND or most.speedup_run is None or m.speedup_run is None:
            cost = ""  # a healthy job costs nothing, and with no figure on either side no cost is compared
        if _unestimated_longer(m):
            cost = ", at a cost not estimated,"
        text += f" {lead} ({most.share:.0%}){cost} {verdict_was(most.title, most.why)}"
    side = m.beside
    if side is not None:
        what = f". {side.why}" if side.why else "."
        if side.stage == IDLE:
            text += f" For {side.share:.0%} of the time the verdict was {side.title}, with no pipeline stage to fix{what}"
        elif m.stage == UNKNOWN:  # beside no stage named, the stage named most
            text += f" For {side.share:.0%} of the time {verdict_was(side.title, side.why)}"
        else:  # its own share: a run may hold two stages while it trains
            text += f" For {side.share:.0%} of the time, while the job trained, {verdict_was(side.title, side.why)}"
    if m.warnings:
        near = "; ".join(f"{w.title} {w.share:.0%} of the time" + (f" (at its latest: {w.why})" if w.why else "")
                         for w in m.warnings)
        text += f" At warning level beside the verdict: {near}."
    lag = m.straggler
    if lag is not None and lag.leads:
        # In lock-step training the others wait for this rank: that, not one process's stage, holds the job.
        return (f"Rank {lag.rank} holds the other ranks back",
                f"(named on {lag.ticks} of the {lag.of} ticks that showed several ranks). {lag.sentence} "
                f"Per process: {m.title} {text}")
    if lag is not None:
        text += (f" Rank {lag.rank} held the other ranks back on {lag.ticks} of the {lag.of} ticks that showed "
                 f"several ranks: {lag.sentence}")
    return m.title, text


def _unestimated_longer(m: Summary) -> bool:
    """The stage held most is not the headline's, held longer than it, and its cost has no figure
    while it may have one (not healthy GPU-bound, which costs nothing; not idle or unknown, which are
    said apart)."""
    most = m.most_held
    return (most is not None and most.stage != m.stage and most.share > m.share and most.speedup_run is None
            and most.stage not in (GPU_BOUND, IDLE, UNKNOWN) and m.speedup_run is not None)


def verdict_was(title: str, why: str) -> str:
    """``the verdict was TITLE``, then the verdict's own sentence ``why``. A sentence that opens
    with its stage's title ("CPU-bound: the job's own compute...", "Healthy, GPU-bound: ...") says
    it once, its head in the title's place, as Verdict.headed does for a line: "the verdict was
    CPU-bound. CPU-bound: ..." said the title twice in a row."""
    head, sep, rest = why.partition(": ")
    if sep and head.endswith(title) and len(head) <= len(title) + 12:
        return f"the verdict was {head}: {rest}"
    return f"the verdict was {title}" + (f". {why}" if why else ".")


def stage_gain(r: Remedy, snapshot: bool = False) -> str:
    """``held 95% of the time; fixing it: up to 1.86x over this run (1.95x while it holds)``; for a
    snapshot (Summary.snapshot) only the figure while it holds."""
    if r.beside is not None:  # never the verdict: its cuts met beside it (sections._beside)
        return (f"met its own thresholds beside the verdict {r.beside:.0%} of "
                f"{'those ticks' if snapshot else 'the time'}; no run figure for that time: each fix's own "
                "figure below is from its latest such tick")
    held = f"held {r.share:.0%} of {'those ticks' if snapshot else 'the time'}"
    if snapshot and r.speedup_while is not None:
        more = " or more" if r.speedup_floor else ""
        return f"{held}; fixing it: {gain_words(r.stage or '')} {speedup(r.speedup_while)}{more} while it holds"
    # A run figure is counted on the ticks the stage held: its cause may weigh on ticks another stage
    # held too (trial 34: CPU prep held 13 % beside Contention, "up to 1.09x over this run" while the
    # job waited for data 55-78 % of every window), which the figure leaves out.
    ticks = "counted on the ticks it held; " if r.share < 1.0 else ""
    if r.speedup_run is not None and r.speedup_floor:
        why = (": the cap" if capped(r.speedup_while) else ", as the input takes the step's CPUs too"
               if r.speedup_floor_cpus else ", as far as its samples bound it")
        return (f"{held}; fixing it: {speedup(r.speedup_run)} or more over this run ({ticks}"
                f"{speedup(r.speedup_while)} or more while it holds{why})")
    if r.speedup_run is not None and r.speedup_while is not None:
        latest = (f"; {gain_words(r.stage or '')} {speedup(r.latest_while)} at the latest tick, whose readings the "
                  "remedies below quote" if r.latest_while is not None else "")
        # the figure while it holds is the middle of its ticks' (ranking.stage_costs): said so, as the
        # live screens say each tick's own ("6.20x while it holds" stood beside a TUI reading 5.7x at
        # the tick the headline quotes; review 36)
        # Counted on some ticks, the run figure bounds nothing; the words of the ceiling go with the
        # figure while it holds, as the headline says it (review 45: "up to 1.75x over this run" beside
        # the headline's "1.75x faster, counting only the ticks it held")
        words = gain_words(r.stage or "")
        run, held_words = ((speedup(r.speedup_run), f"{words} ") if ticks
                           else (f"{words} {speedup(r.speedup_run)}", ""))
        return (f"{held}; fixing it: {run} over this run "
                f"({ticks}{held_words}{speedup(r.speedup_while)} while it holds, the middle of its ticks' figures{latest})")
    if r.stage == GPU_BOUND:  # the GPU's own work sets the pace: no stage to fix, its fixes may still gain
        return f"{held}; the GPU sets the pace, so no speed-up is estimated for the stage itself"
    return f"{held}; speed-up not estimated"


def epochs_at_end(r: Report) -> str:
    """The epoch section: the run's last verdict's phases (epochs_over)."""
    return epochs_over(r.epochs, r.source.covered_s)


def epochs_over(phases: Sequence[Phase], covered_s: float) -> str:
    """The run's last verdict's phases, led by the span they were counted over: the last minute, or
    the whole of a run shorter than one ("Over the last minute of the run" led the counts of a 27 s
    run); "" where they name none. The epoch section and the headline (Summary.epochs) say these."""
    said = phase_words(phases)
    if not said:
        return ""
    said = said[:1].lower() + said[1:]
    if covered_s <= PHASE_WINDOW_S:
        return f"Over the whole run ({covered_s:.0f} s): {said}"
    # "of the run, to its end" read as the job's end where the recording stopped first (trial 34)
    return f"Over the last minute watched: {said}"


def epochs_none(r: Report) -> str:
    """The epoch section where the run's last minute says no phase. A phase under PHASE_MIN_SHARE
    of the minute is left out, so "none was seen" is said only of re-created workers (named at any
    share); what an earlier minute of the run said is kept, a checkpoint save there included."""
    text = ("No worker re-creation was seen in the last minute watched, and no first-batch wait, validation "
            f"pass or checkpoint save was named in it (one under {PHASE_MIN_SHARE:.0%} of the minute is left out, "
            "as are first-batch waits no longer than the input's steady wait; a validation pass is told by the "
            "name of the function it runs in, such as validate or evaluate, so one written inline in the "
            "training loop is not seen).")
    if r.epochs_earlier:
        # "Earlier, 24 s into the run" read as before the last minute in a 61 s watch (trial 27): the
        # moment is said, and why the last minute no longer names it. Re-created and piled-up sets
        # are named at any share, so they were before that minute; the others may also be under
        # PHASE_MIN_SHARE of it (where the moment lies within it, which of the two is not known).
        at = (f"At {r.epochs_earlier_s:.0f} s into the run" if r.epochs_earlier_s is not None
              else "Earlier in the run")
        said = phase_words(r.epochs_earlier)
        text += f' {at}, over what it had seen by then, the verdict said: "{said}"'
        any_share = all(p.kind in (RESPAWN, LEFT_ALIVE) for p in r.epochs_earlier)
        within = r.epochs_earlier_s is not None and r.source.covered_s - r.epochs_earlier_s <= PHASE_WINDOW_S
        if r.source.covered_s <= PHASE_WINDOW_S:
            # the whole run is its last minute: "or before it" could not be (accum_ckpt, 44 s)
            text += (" The run's last verdict no longer names it" + ("." if any_share else
                     f": under {PHASE_MIN_SHARE:.0%} of the {r.source.covered_s:.0f} s watched."))
        elif any_share or not within:
            text += " That was before the last minute watched."
        else:
            text += (f" The last minute watched no longer names it: under {PHASE_MIN_SHARE:.0%} of that minute, or "
                     "before it.")
    return text


def no_remedy_words(r: Report) -> str:
    """Why the report lists no remedy. Beside "not enough evidence", "Nothing to fix was found" read as a
    clean bill of health on a job that spent 72 % of its time writing logs (trial 41)."""
    if r.summary.stage == UNKNOWN:
        return ("No remedy is proposed: no stage was named with enough evidence, and a remedy is given only "
                "for a cause that was seen.")
    return "Nothing to fix was found."
