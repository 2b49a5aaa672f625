"""The straggler rule: which rank holds the others back, from per-rank signals (pure)."""

from __future__ import annotations

import pytest

from gpuwatch.straggler import GAP, MIN_SAMPLES, RankSignals, find_straggler


def sig(rank, input_share=0.0, collective=0.0, samples=40, top="dispatch", worker_cpu=None, steps=None):
    return RankSignals(rank=rank, samples=samples, input_share=input_share, collective_share=collective,
                       top_label=top, worker_cpu=worker_cpu, steps_per_s=steps)


def test_input_bound_rank_named_when_the_others_wait_in_collectives():
    # The shape measured on tests/jobs/ddp_cpu.py --slow-rank 1: rank 1 waited for data in 28 of 30
    # dumps, rank 0 waited in DDP's buffer broadcast in 30 of 30.
    s = find_straggler([sig(0, 0.0, 1.0), sig(1, 28 / 30, 0.0, top="data_wait", worker_cpu=0.02)])
    assert s is not None
    assert (s.rank, s.cause, s.rule) == (1, "input", "collectives")
    assert "Rank 1 holds rank 0 back" in s.sentence
    assert any("0.02 cores each: mostly waiting" in e for e in s.evidence)


def test_compute_straggler_gets_its_own_label_as_cause():
    s = find_straggler([sig(0, collective=0.6), sig(1, collective=0.55), sig(2, collective=0.05, top="backward"),
                        sig(3, collective=0.7)])
    assert s is not None and (s.rank, s.cause) == (2, "backward")
    assert "ranks 0, 1, 3" in s.sentence


def test_without_collective_frames_the_input_gap_names_the_rank():
    # DDP with only the gradient all-reduce: the fast rank's wait hides inside backward (no collective
    # share), but the slow rank still waits for input far more than the others.
    s = find_straggler([sig(0, 0.02, None), sig(1, 0.7, None, top="data_wait")])
    assert s is not None and (s.rank, s.cause, s.rule) == (1, "input", "input")
    assert "70 %" in s.sentence and "2 %" in s.sentence


@pytest.mark.parametrize("signals", [
    [sig(0, 0.5, 0.1), sig(1, 0.5, 0.1)],                      # all equally input-bound: no straggler
    [sig(0, 0.0, 0.9), sig(1, 0.0, 0.9)],                      # all wait in collectives alike
    [sig(0, 0.0, 0.5), sig(1, 0.0, 0.5 - GAP + 0.01)],         # the gap is within noise
    [sig(0, 0.0, 0.15), sig(1, 0.0, 0.0)],                     # the others hardly wait
    [sig(0, 0.1, 0.0), sig(1, 0.3, 0.0)],                      # input gap below GAP
    [sig(0, 0.0, 0.7, samples=10), sig(1, 0.0, 0.4, samples=10)],  # 0.3 apart, but 10 samples: chance
    [sig(0, 0.0, 1.0, samples=MIN_SAMPLES - 1), sig(1, 0.9, 0.0)],  # too few samples on rank 0
    [sig(0, 0.0, 1.0)],                                        # one rank
    [],
])
def test_no_straggler(signals):
    assert find_straggler(signals) is None


def test_a_wide_gap_needs_few_samples():
    # 10 samples each, all-or-nothing shares: far beyond chance (z about 4.5).
    s = find_straggler([sig(0, 0.0, 1.0, samples=10), sig(1, 1.0, 0.0, samples=10, top="data_wait")])
    assert s is not None and s.rank == 1


def test_ties_name_nobody():
    assert find_straggler([sig(0, 0, 0.0), sig(1, 0, 0.0), sig(2, 0, 0.9)]) is None


def test_steps_rule_when_stacks_are_missing():
    s = find_straggler([sig(0, None, None, samples=0, steps=10.0), sig(1, None, None, samples=0, steps=6.0),
                        sig(2, None, None, samples=0, steps=9.5)])
    assert s is not None and (s.rank, s.rule, s.cause) == (1, "steps", "unknown")
    assert find_straggler([sig(0, samples=0, steps=10.0), sig(1, samples=0, steps=8.5)]) is None


def test_busy_workers_are_called_computing():
    s = find_straggler([sig(0, 0.0, 0.8), sig(1, 0.6, 0.0, worker_cpu=0.95)])
    assert s is not None and any("computing" in e for e in s.evidence)


def test_a_busy_rank_at_less_cpu_than_the_waiting_ones_is_no_straggler_on_a_cpu_job():
    """Trial 24's gloo DDP job (no GPU): rank 1 computes an extra filter each step and reaches the
    explicit all_reduce late, where it reads "collectives"; rank 0 waits for it inside backward
    (DDP's all-reduce has no Python frame) at 0.33 core against rank 1's 0.73. Rule 1 named rank 0."""
    from dataclasses import replace

    fast = replace(sig(0, collective=0.05, top="backward"), cpu_only_main_cpu=0.33)
    slow = replace(sig(1, collective=0.45, top="dispatch"), cpu_only_main_cpu=0.73)
    assert find_straggler([fast, slow]) is None
    # the same shares where the busy rank does use the CPU: named as before
    s = find_straggler([replace(fast, cpu_only_main_cpu=0.9), slow])
    assert s is not None and (s.rank, s.rule) == (0, "collectives")
    # on a GPU job (no CPU reading kept) the shares alone decide
    assert find_straggler([replace(fast, cpu_only_main_cpu=None), replace(slow, cpu_only_main_cpu=None)]).rank == 0


def test_a_gloo_job_on_a_gpu_host_is_judged_by_its_cpu():
    """The ranks hold no GPU though the host has some (NVML lists none of their processes): their
    step is CPU work, and the CPU rule applies as on a host with no GPU (review: 'none_held' brought
    trial 24's misnaming back)."""
    from dataclasses import replace as dc_replace

    from gpuwatch.model import stacks as lb
    from gpuwatch.ranks import rank_signals
    from tests.test_diagnosis_frames import Knobs, build, merge

    fast = Knobs(gpu="none_held", cpu_count=2, usable=2, workers=0, pid=100, rank=0, main_cpu=0.33,
                      main_labels={lb.BACKWARD: 0.95, lb.COLLECTIVE: 0.05})
    slow = dc_replace(fast, pid=200, rank=1, main_cpu=0.73, main_labels={lb.DISPATCH: 0.55, lb.COLLECTIVE: 0.45})
    frames = merge(build(fast, 20), build(slow, 20))
    sig = [rank_signals(frames, r) for r in (0, 1)]
    assert [s.cpu_only_main_cpu is not None for s in sig] == [True, True], sig
    assert find_straggler(sig) is None
