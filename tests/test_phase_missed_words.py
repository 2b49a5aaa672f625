"""Checkpoint saves that fall between stack samples: the share is said as a floor, with the count.

Trial 32 (tests/data/cpu_field/t32_ckpt_every_n.jsonl.gz: torch.save, fsync and removals every 5
steps, 15.9 % of the job's time by its own clock): the epoch sentence read "Checkpoint saves take 7 %
of the time (~0.5 s every ~4.6 s)", which does not add up (0.5 s every 4.6 s is 11 %): the period
counts the saves the samples missed, the share does not.
"""

from __future__ import annotations

from gpuwatch.diagnosis.sentence import epochs
from gpuwatch.model.verdict import CHECKPOINT
from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames


def test_missed_saves_make_the_share_a_floor_and_the_words_add_up():
    got = from_frames(load_frames("tests/data/cpu_field/t32_ckpt_every_n.jsonl.gz"))
    last = next(p for p in got.verdicts[-1].phases if p.kind == CHECKPOINT)
    assert last.missed > 0 and last.period_s is not None and last.each_s is not None
    said = epochs(got.verdicts[-1].phases)
    assert f"checkpoint saves take at least {last.share * 100:.0f} %" in said.lower()
    assert f"{last.count} seen in {last.span_s:.0f} s, about {last.missed} more fell between the stack samples" in said
    # what the words imply (every save ~each_s long, count + missed of them) is the floor or more
    implied = (last.count + last.missed) * last.each_s / last.span_s
    assert implied >= last.share
    # and no phase without missed saves is said as a floor
    for v in got.verdicts:
        for p in v.phases:
            if p.kind == CHECKPOINT and not p.missed:
                assert "at least" not in epochs((p,))
