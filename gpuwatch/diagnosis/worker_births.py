"""DataLoader workers re-created (``persistent_workers=False``), told from the worker PIDs of
successive samples. One rule for the epoch structure (phases.py, per tick over the last minute)
and the window's count (host_signals.job_signals, per procs sample), so that the sentence's
"re-created N times" and the remedy's agree.

A re-creation is told by births, not by a set disjoint from the last: new workers (PIDs never seen
before in the samples given) that appear after the first sample with workers, while some worker
seen before is gone (they replace workers, not join them). Disjoint sets missed the jobs whose
loaders overlap: a Lightning job with a training and a validation loader of 2 non-persistent
workers each replaces one loader's pair at a time, so each sample shares a pair with the last; the
disjoint rule counted 2 of its 9 epochs in 44 s, and the sentence read "every ~5.0 s (2 times in
44 s)" (tests/data/cpu_field/lightning_two_loaders.jsonl.gz).

- The first sample with workers counts none: its workers were born before the samples began.
- Births beside workers that all live on are a loader joining, not a re-creation: a persistent
  validation loader's first set (run 25's ImageFolder job, 14 + 14; Lightning's 2 + 2). An exit
  pays for one re-creation only: a job that kept each iterator (sets piling up beside the old
  ones) while a few crashed read "re-created every ~2.0 s (18 times in 39 s)" where ~3 sets of the
  ~40 it started died (trial 26), as every birth after the first exit had counted.
- One re-creation spans one sample, or two in a row where the second's births come while the
  first's still live: the rest of a set whose forking straddled a sample (run 25's ImageFolder
  job saw 14 workers as 4 + 10 and 1 + 13), or the next loader's set at the same epoch boundary
  (the Lightning job above: the validation pair, then a tick later the next epoch's training pair
  beside it). It closes after two samples, as _sets in phases.py closes a set.
- Births in the next sample whose predecessors are already gone are another re-creation: what was
  just born was replaced again. A loader re-created about every tick does that (run 25's Lightning
  job, 72 sets in 25 s, births in every tick; bench/field_cpu/respawn_workers.py, one loader whose
  ~2.4 s epochs put births in up to five ticks in a row), and so does a training set followed by a
  validation set once the training set has shut down (tests/data/field/short_epochs_cpu.jsonl.gz).
  Merging every run of consecutive births into one would count those as one re-creation.
"""

from __future__ import annotations

from collections.abc import Sequence


def recreations(worker_sets: Sequence[frozenset[int]]) -> list[tuple[int, ...]]:
    """The re-creations seen in ``worker_sets`` (the live worker PIDs of each sample, oldest
    first; an empty set for a sample without workers): for each, the indexes of the one or two
    samples its new workers were first seen in, oldest first (the module's note says the rule)."""
    out: list[tuple[int, ...]] = []
    seen: set[int] = set()
    last_born: tuple[int, frozenset[int]] = (-2, frozenset())  # the latest sample with births, and them
    prev: frozenset[int] = frozenset()
    gone = False  # a worker exited since the last re-creation counted
    for i, live in enumerate(worker_sets):
        gone = gone or bool(seen and prev - live)
        prev = live
        if not live:
            continue
        if not seen:  # the first sample with workers: born before it, so not counted
            seen.update(live)
            continue
        born = live - seen
        if born:
            prev_i, prev_born = last_born
            if out and out[-1] == (prev_i,) and prev_i == i - 1 and prev_born <= live:
                out[-1] = (prev_i, i)  # beside the last sample's births, which live on: the same re-creation
                gone = False  # exits meanwhile (the old set's last workers) are this one's, paid
            elif gone:  # workers exited since the last one counted: the new ones replace them
                out.append((i,))
                gone = False
            last_born = (i, frozenset(born))
        seen.update(live)
    return out
