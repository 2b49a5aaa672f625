"""The diagnosis on a real recording: ``gpuwatch.demo_job --device cpu`` watched on this project's
2-core CPU VM (tests/data/cpu_demo.jsonl, real collectors, no GPU). The demo cycles compute-bound ->
decode-bound -> paused; the VM was shared with other jobs at the time (others used 1-1.9 of the 2
cores and the job's threads waited 10-58 % of the time for a CPU), so contention is a true answer
for the busy phases too. Phase spans below come from the recording's own main-thread stacks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from tests.test_diagnosis_frames import run

RECORDING = Path(__file__).parent / "data" / "cpu_demo.jsonl"
COMPUTE = range(3, 17)
"""Main thread in backward/optimizer: the model computes on the CPU."""
DECODE = range(22, 38)
"""Main thread waiting for batches while one worker decodes."""
PAUSED = range(44, 58)
"""Main thread sleeping in the demo's pause (as during a checkpoint)."""


@pytest.fixture(scope="module")
def verdicts():
    if not RECORDING.exists():
        pytest.skip(f"{RECORDING} is missing")
    return run(load_frames(str(RECORDING)))


def test_no_gpu_stage_without_a_gpu(verdicts):
    stages = {x.stage for x in verdicts}
    assert not stages & {v.GPU_BOUND, v.GPU_MEMORY, v.LAUNCH, v.H2D}


def test_each_phase_gets_a_fitting_verdict(verdicts):
    assert {verdicts[i].stage for i in PAUSED} == {v.IDLE}
    assert {verdicts[i].stage for i in DECODE} <= {v.DECODE, v.CONTENTION}
    # Computing by itself: never an input stage (CPU-bound, or contention).
    assert {verdicts[i].stage for i in COMPUTE} <= {v.CPU_BOUND, v.CONTENTION}


def test_contention_names_the_neighbours_it_saw(verdicts):
    shown = [x for x in verdicts if x.stage == v.CONTENTION]
    assert shown, "the shared VM's neighbours should show"
    assert all("outside the job" in x.sentence for x in shown)


def test_the_verdict_changes_only_with_the_phases(verdicts):
    changes = sum(1 for a, b in zip(verdicts, verdicts[1:]) if a.stage != b.stage)
    assert changes <= 4, [x.stage for x in verdicts]
