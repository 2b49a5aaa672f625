"""A training loop that feeds itself from a queue (a multiprocessing.Pool preprocessing batches, no
DataLoader) waits for data there: it is not CPU-bound, and the verdict says where the batches come from.

The recording (tests/data/cpu_field/pool_queue.jsonl.gz, README there) was made before the queue read
had a label of its own, so its main-thread samples say "other". They are labelled again here from
their frames by the collector's own classifier, as a live watch labels them now; the frames' paths
are rebuilt from the short names a recording keeps (the standard library's under /usr/lib, the job's
script where it ran).
"""

from __future__ import annotations

import re

from gpuwatch.analysis import Analysis
from gpuwatch.collectors.pyspy import FrameRecord, ThreadRecord
from gpuwatch.collectors.stack_labels import classify
from gpuwatch.model import stacks as lb
from gpuwatch.replay import load_frames
from tests.relabel import frame_of, relabelled, stdlib

POOL = "tests/data/cpu_field/pool_queue.jsonl.gz"


def _where(short: str) -> str:
    return f"/tmp/trial20/{short}" if short.startswith("job") else stdlib(short)


def _frame(text: str) -> FrameRecord:
    return frame_of(text, _where)


def _relabelled(tmp_path) -> str:
    return relabelled(POOL, tmp_path / "pool.jsonl", _where)


def test_a_queue_read_from_the_jobs_own_code_is_a_data_wait():
    frames = (_frame("Condition.wait (threading.py:327)"), _frame("Queue.get (queue.py:171)"),
              _frame("<module> (job4_pool.py:38)"))
    label, detail = classify(ThreadRecord(1, 1, "MainThread", False, False, frames), lb.ROLE_MAIN_THREAD)
    assert (label, detail) == (lb.DATA_WAIT, "a queue the job fills itself (Queue.get at job4_pool.py:38)")
    # the same read inside a library (not the job's own loop) is not read as the loop's wait
    lib = (*frames[:2], FrameRecord("Trainer.poll", "/venv/lib/python3.11/site-packages/x/t.py", "x/t.py", 9))
    assert classify(ThreadRecord(1, 1, "MainThread", False, False, lib), lb.ROLE_MAIN_THREAD)[0] != lb.DATA_WAIT


def test_a_pool_fed_loop_is_not_cpu_bound_and_its_helpers_are_said(tmp_path):
    a = Analysis()
    vs = [a.update(f) for f in load_frames(_relabelled(tmp_path))]
    # the job's own timing: 56-61 % of each 5 s in q.get() (job_pool.py.txt), its main thread at ~0.2 core
    assert not any(v.stage == "cpu_bound" for v in vs[5:])
    last = vs[-1]
    assert "waits for data" in last.sentence and "Queue.get at job4_pool.py:38" in last.sentence
    # the pool's 2 processes at ~0.8 core each make the batches (trial 36's rule, input_stages.helpers_computing)
    assert re.search(r"with no DataLoader worker, while the job's 2 other processes compute \(0\.8\d core CPU each\); "
                     r"gpuwatch samples no stacks of them", last.sentence), last.sentence
    assert last.remedies[0].startswith("Make each batch cheaper to build: the 2 processes making them compute flat "
                                       "out and the 2 usable CPUs have no core to spare"), last.remedies
