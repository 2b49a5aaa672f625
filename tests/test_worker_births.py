"""DataLoader worker re-creation counted by births (gpuwatch/diagnosis/worker_births.py), and a
period said only where the starts cover the span it is said over (phases._covers).

The fixture, tests/data/cpu_field/lightning_two_loaders.jsonl.gz (README there): a Lightning job
whose training and validation loaders, 2 non-persistent workers each, re-create their pairs a tick
apart every ~5 s epoch. The old "no PID in common with the last set" rule counted 2 re-creations in
44 s, and the sentence read "every ~5.0 s (2 times in 44 s)".
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.host_signals import job_signals
from gpuwatch.diagnosis.phases import phases
from gpuwatch.diagnosis.sentence import epochs
from gpuwatch.diagnosis.timeline import Tick
from gpuwatch.diagnosis.worker_births import recreations
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames

FIXTURE = Path(__file__).parent / "data" / "cpu_field" / "lightning_two_loaders.jsonl.gz"


def _sets(*groups: set[int]) -> list[frozenset[int]]:
    return [frozenset(g) for g in groups]


def test_the_first_sample_with_workers_counts_none():
    assert recreations(_sets({1, 2}, {1, 2}, {1, 2})) == []
    assert recreations(_sets(set(), {1, 2}, {1, 2})) == []  # workers first seen after a sample without
    assert recreations(_sets({1, 2}, {3, 4})) == [(1,)]


def test_two_overlapping_loaders_count_one_re_creation_a_boundary():
    """Lightning's shape: the validation pair is replaced while the training pair lives, then a
    tick later the training pair beside the new validation pair: no two samples are disjoint."""
    ticks = _sets({1, 2, 3, 4}, {1, 2, 3, 4}, {3, 4, 5, 6}, {5, 6, 7, 8}, {5, 6, 7, 8}, {5, 6, 7, 8},
                  {7, 8, 9, 10}, {9, 10, 11, 12}, {9, 10, 11, 12})
    assert recreations(ticks) == [(2, 3), (6, 7)]


def test_a_set_born_over_two_samples_counts_once():
    """14 workers forked across a sample: 4 in one, the other 10 in the next, beside the first 4."""
    old, first, rest = set(range(100, 114)), set(range(200, 204)), set(range(204, 214))
    assert recreations(_sets(old, old, first, first | rest, first | rest)) == [(2, 3)]


def test_a_re_creation_spans_two_samples_at_most():
    assert recreations(_sets({1}, {2}, {2, 3}, {3, 4})) == [(1, 2), (3,)]


def test_an_exit_pays_for_one_re_creation_only():
    """Trial 26: a job kept every iterator (a new set of 2 beside the old ones each second) while a
    few crashed. Every birth after the first exit had counted, "re-created every ~2.0 s (18 times in
    39 s)" where ~3 sets died; births beside workers that all live on since are sets joining."""
    assert recreations(_sets({1}, {2}, {2, 3}, {2, 3, 4})) == [(1, 2)]
    piling = _sets({1, 2}, {1, 2, 3, 4}, {2, 3, 4, 5, 6}, {2, 3, 4, 5, 6, 7, 8}, {2, 3, 4, 5, 6, 7, 8, 9, 10})
    assert recreations(piling) == [(2, 3)]  # 1 exited once: one replacement (over two samples); the rest joined
    # the old set's last worker exiting while the new set's second part is born is that replacement's
    # exit: a persistent loader joining later is no second one
    assert recreations(_sets({1, 2}, {2, 3}, {3, 4}, {3, 4}, {3, 4, 5, 6})) == [(1, 2)]


def test_a_loader_joining_beside_live_workers_is_no_re_creation():
    """A persistent validation loader's first set starts beside the training loader's, which lives
    on: nothing was replaced. Its next set, once the first is gone, is one."""
    assert recreations(_sets({1, 2}, {1, 2}, {1, 2, 3, 4}, {1, 2, 3, 4})) == []
    assert recreations(_sets({1, 2}, {1, 2, 3, 4}, {1, 2}, {1, 2, 5, 6})) == [(3,)]


def test_workers_replaced_in_consecutive_samples_count_each_time():
    """What was just born is gone in the next sample: a loader re-created about every tick (run
    25's Lightning job), or a training set then a validation set once the first has shut down."""
    assert recreations(_sets({1, 2}, {3, 4}, {5, 6}, {7, 8})) == [(1,), (2,), (3,)]
    assert recreations(_sets({1, 2}, set(), {3, 4}, set(), {5, 6})) == [(2,), (4,)]


def _ticks(workers: list[set[int]]) -> list[Tick]:
    return [Tick(t=float(i), dt=1.0, workers=frozenset(w)) for i, w in enumerate(workers)]


def test_starts_bunched_late_in_the_span_get_no_period():
    """Two re-creations 5 s apart, 33 s into a 44 s span: "every ~5.0 s (2 times in 44 s)" cannot
    both hold, so the count alone is said."""
    w = [{1, 2}] * 33 + [{3, 4}] * 5 + [{5, 6}] * 7
    respawn = phases(_ticks(w))[0]
    assert (respawn.kind, respawn.count, respawn.period_s) == (v.RESPAWN, 2, None)
    assert respawn.sparse and not respawn.uneven
    text = epochs((respawn,))
    assert "re-created 2 times in 44 s" in text and "every" not in text and "at least" not in text, text


def test_starts_that_cover_the_span_keep_their_period():
    w = [{e * 10, e * 10 + 1} for e in range(9) for _ in range(5)]  # a new pair every 5 ticks
    respawn = phases(_ticks(w))[0]
    assert respawn.count == 8 and respawn.period_s == 5.0 and not respawn.sparse
    assert "re-created every ~5.0 s (8 times in 44 s" in epochs((respawn,))


def test_the_lightning_two_loader_job_counts_each_epoch():
    frames = list(load_frames(str(FIXTURE)))
    analysis = Analysis()
    last = [analysis.update(f) for f in frames][-1]
    respawn = next(p for p in last.phases if p.kind == v.RESPAWN)
    assert 6 <= respawn.count <= 10, respawn
    assert respawn.period_s is not None and abs(respawn.period_s - 5.0) <= 1.0, respawn
    # The count and the period agree with the span they are said over.
    assert respawn.count * respawn.period_s <= respawn.span_s + respawn.period_s + 1.0, respawn
    said = re.search(r"re-created every ~(\d+\.\d) s \((\d+) times in (\d+) s", last.sentence)
    assert said, last.sentence
    period, n, span = float(said.group(1)), int(said.group(2)), int(said.group(3))
    assert n == respawn.count and span >= 40 and 0.7 * span <= n * period <= span + period + 1, last.sentence
    # The window's count (host_signals) follows the same rule.
    assert job_signals(frames, None).worker_respawns == respawn.count


def test_the_lightning_job_keeps_its_cpu_bound_verdict_between_epoch_starts():
    """Its first-batch waits, now seen every epoch, recur: the input stages judge the minute's wait
    (10-14 %, under their cut). The CPU-bound stage judged the window's, up to 29 % where the
    window held epoch starts, over its cut, so neither held there: "Not enough evidence" on 3
    ticks, the last among them. Both judge the same wait now. The job timed itself 73 % in training
    steps and 10 % waiting for data (the ground-truth log of job_lightning.py.txt)."""
    analysis = Analysis()
    verdicts = [analysis.update(f) for f in load_frames(str(FIXTURE))]
    after = [x.stage for x in verdicts[3:]]  # the first ticks collect evidence
    assert v.UNKNOWN not in after, after
    assert verdicts[-1].stage == v.CPU_BOUND, verdicts[-1].sentence
