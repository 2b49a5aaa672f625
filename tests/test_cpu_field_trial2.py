"""A second adversarial trial's CPU jobs (tests/data/cpu_field/README.md): claims that need a reading.

- torch.compile's first step: the main thread sits in inductor's code waiting on its compiler
  processes, at ~0 core. Its samples look like the model's code, but a step computed on the CPU uses
  CPU: no "CPU-bound: ... computes the step itself (0.00 core CPU ...)".
- Small files through 2 persistent workers on a host full of other work: the workers are idle in
  Queue.get at 0.22 core each, queued for a CPU 22 % of the time, and the loop waits 26-32 % (its own
  clock) receiving batches. Queued workers that are idle the rest of the time do not compute: no
  "while the 2 DataLoader workers compute".
"""

from __future__ import annotations

import re

from gpuwatch.analysis import Analysis
from gpuwatch.replay import load_frames

COMPILE = "tests/data/cpu_field/compile_start.jsonl.gz"
FILES = "tests/data/cpu_field/small_files.jsonl.gz"
COMPILE_WALL = (1796525901.0, 1796525927.6)  # the job's own log: COMPILE BEGIN, COMPILE END (first step)


def _replay(path: str):
    a = Analysis()
    frames = load_frames(path)
    return frames, [a.update(f) for f in frames]


def test_a_main_thread_waiting_on_its_compiler_is_not_cpu_bound():
    frames, verdicts = _replay(COMPILE)
    compiling = [v for f, v in zip(frames, verdicts) if COMPILE_WALL[0] + 3 <= f.wall <= COMPILE_WALL[1]]
    assert len(compiling) >= 20
    assert not [v.sentence for v in compiling if v.stage == "cpu_bound"]
    assert not any(re.search(r"computes the step itself \(0\.0\d core", v.sentence) for v in verdicts)


def test_idle_workers_queued_for_a_cpu_are_not_said_to_compute():
    _, verdicts = _replay(FILES)
    said = [v.sentence for v in verdicts if "DataLoader workers compute" in v.sentence]
    assert not said, said[:2]
    named = [v for v in verdicts if v.stage == "decode"]
    assert named and all(v.sentence.startswith("Input-bound on batch transfer") for v in named)
    # the decode stage's own evidence agrees with its sentence: no "the workers are computing" mark
    for v in named:
        marks = {e.text: e.supports for e in v.evidence if e.stage == "decode" and e.signal == "workers_computing"}
        assert "the workers are computing" not in marks, marks


def test_contention_without_named_processes_says_where_to_find_them():
    # The first ticks of a watch have no sample of the other processes yet (top_others empty): the
    # remedy read "Processes outside the job use 1.35 cores of 2 CPUs: move or renice them" naming none.
    _, verdicts = _replay(COMPILE)
    said = [r for v in verdicts[:6] for r in v.remedies if r.startswith("Processes outside the job use")]
    assert said
    for r in said:
        assert (re.search(r"CPUs: \w.* \(pid \d+, \d\.\d\d cores?\)", r)
                or "(no single process held a share of it in the latest sample: short-lived processes, or many small "
                   "ones)" in r), r
