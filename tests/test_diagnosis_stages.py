"""Each stage from its measured signature, and the honest fallbacks (no GPM, no stacks, no GPU).

GPU readings are the H200 signature table (h200-signatures.md) via tests/test_diagnosis_frames.py;
host-side knobs (thread CPU, stack labels) describe the job each test models.
"""

from __future__ import annotations

import re

from dataclasses import replace

import pytest

from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from tests.test_diagnosis_frames import Knobs, build, last, merge, run

# Host-side pictures of each case, as stack_labels.py labels them (a spin-wait in .item() reads as
# "dispatch" at the user's line).
HEALTHY = Knobs(main_labels={lb.DISPATCH: 0.6, lb.BACKWARD: 0.2, lb.OPTIMIZER: 0.2})
LAUNCH = Knobs(gpu="launch", main_labels={lb.DISPATCH: 0.9, lb.OPTIMIZER: 0.1})
SYNC = Knobs(gpu="sync", main_labels={lb.SYNC: 0.7, lb.DISPATCH: 0.3})
PAGEABLE = Knobs(gpu="pageable", main_labels={lb.DISPATCH: 0.8, lb.OPTIMIZER: 0.2})
PINNED = Knobs(gpu="pinned", main_labels={lb.DISPATCH: 1.0})
LAYOUT = Knobs(gpu="layout", main_labels={lb.DISPATCH: 1.0})
DECODE = Knobs(gpu="starved", main_labels={lb.DATA_WAIT: 0.8, lb.DISPATCH: 0.2}, main_cpu=0.2,
               worker_cpu=0.97, worker_labels={lb.W_BUSY: 1.0}, worker_detail={lb.W_BUSY: "Image.convert"})
IO = Knobs(gpu="starved", main_labels={lb.DATA_WAIT: 0.8, lb.DISPATCH: 0.2}, main_cpu=0.2, worker_cpu=0.03,
           worker_labels={lb.W_IO: 1.0}, worker_d=True, psi_io=35.0, disk_busy=97.0, worker_read_bps=4e8)
IDLE = Knobs(gpu="idle", main_labels={lb.OTHER: 1.0}, main_detail={lb.OTHER: "input (builtins)"}, main_cpu=0.0)


def _pipeline_levels_ok(verdict: v.Verdict) -> None:
    levels = dict(verdict.levels)
    assert set(levels) == set(v.PIPELINE)
    bottlenecks = [s for s, lv in levels.items() if lv == v.LEVEL_BOTTLENECK]
    assert bottlenecks == ([verdict.stage] if verdict.stage in v.PIPELINE else [])
    assert verdict.stage not in verdict.secondary
    keys = [(e.stage, e.signal) for e in verdict.evidence]
    assert len(keys) == len(set(keys)), "one evidence row per stage and signal (the TUI keys rows so)"


@pytest.mark.parametrize(("knobs", "stage"), [
    (HEALTHY, v.GPU_BOUND), (LAUNCH, v.LAUNCH), (SYNC, v.LAUNCH), (PAGEABLE, v.H2D), (PINNED, v.H2D),
    (LAYOUT, v.GPU_MEMORY), (DECODE, v.DECODE), (IO, v.IO), (IDLE, v.IDLE),
], ids=["healthy", "launch", "sync", "pageable", "pinned", "layout", "decode", "io", "idle"])
def test_each_measured_signature_gets_its_stage(knobs, stage):
    verdict = last(knobs, n=10, noise=0.05)
    assert verdict.stage == stage, verdict.sentence
    assert verdict.confidence >= 0.6, verdict.sentence
    _pipeline_levels_ok(verdict)


def test_pinned_copy_reading_util_100_is_not_called_gpu_bound():
    # h200: a pinned H2D loop reads NVML util 100 % with SM 0 %: util alone would say GPU-bound.
    verdict = last(PINNED)
    assert verdict.stage == v.H2D
    assert "link" in verdict.sentence and "copy engine" in verdict.sentence
    rx = next(e for e in verdict.evidence if e.stage == v.H2D and e.signal == "rx_link")
    assert rx.supports and rx.value > 0.9  # 56.5 GiB/s of a gen5 x16 link


def test_sync_bound_is_told_from_dispatch_by_the_sync_frames():
    assert last(SYNC).sentence.startswith("Sync-bound")
    assert last(LAUNCH).sentence.startswith("Launch-bound")


def test_contention_causes_come_first_and_are_named():
    tenant = last(replace(HEALTHY, tenants=((4242, "other_train.py", 40.0),), our_sm_util=55.0))
    assert tenant.stage == v.CONTENTION and "other_train.py (pid 4242)" in tenant.sentence
    thermal = last(replace(HEALTHY, throttle=(("sw_power_cap", 0.4), ("hw_thermal_slowdown", 0.3))))
    assert thermal.stage == v.CONTENTION and "throttled 30 %" in thermal.sentence
    # A decode-bound job whose cgroup quota throttles it: the quota is the cause (§11 precedence).
    quota = last(replace(DECODE, cg_throttled=0.35, cg_quota=3.0))
    assert quota.stage == v.CONTENTION and v.DECODE in quota.secondary
    assert "3.0 cores" in quota.sentence


def test_sw_power_cap_alone_is_healthy_not_contention():
    # h200: healthy bf16 runs with the SW power cap bit set; that is normal at full load.
    verdict = last(replace(HEALTHY, throttle=(("sw_power_cap", 0.9),)))
    assert verdict.stage == v.GPU_BOUND


def test_cpu_neighbours_matter_only_while_the_host_limits_the_job():
    hogs = (("stress-ng", 900, 12.0),)
    starved = last(replace(DECODE, others=hogs, worker_run_delay=0.35, main_run_delay=0.2, host_cpu=99.0))
    assert starved.stage == v.CONTENTION and "stress-ng (pid 900, 12.00 cores)" in " ".join(starved.remedies)
    saturated = last(replace(HEALTHY, others=hogs, main_run_delay=0.02, host_cpu=95.0))
    assert saturated.stage == v.GPU_BOUND


def test_self_contention_is_decode_not_an_outside_tenant():
    # 8 workers on 2 usable CPUs: each gets a quarter core and waits for a CPU, nobody else runs.
    many = replace(DECODE, workers=8, worker_cpu=0.24, worker_run_delay=0.6, cpu_count=2, usable=2)
    verdict = last(many)
    assert verdict.stage == v.DECODE
    assert any("The 2 usable CPUs are already full" in r for r in verdict.remedies)


def test_inline_loading_on_the_main_thread():
    inline = replace(DECODE, workers=0, main_cpu=1.0, main_labels={lb.INLINE_LOAD: 0.75, lb.DISPATCH: 0.25},
                     main_detail={lb.INLINE_LOAD: "Image.resize"})
    verdict = last(inline)
    assert verdict.stage == v.DECODE and "num_workers=0" in verdict.sentence
    # the main thread's per-item work may be tokenising or parsing: the remedy says "prepare"
    move = next(r for r in verdict.remedies if "num_workers=0" in r)
    assert move.startswith("Prepare batches in DataLoader workers") and "decod" not in move, move
    reading = replace(inline, main_cpu=0.15, disk_busy=95.0, worker_read_bps=5e7)
    assert last(reading).stage == v.IO
    # a busy disk with no read of the job's own is the host's: no storage stage (trial 25)
    assert last(replace(reading, worker_read_bps=0.0)).stage != v.IO


def test_pin_thread_saturated_is_h2d_not_decode():
    pin = replace(DECODE, worker_cpu=0.1, worker_labels={lb.W_IDLE: 1.0}, pin=True, pin_cpu=0.98,
                  pin_labels={lb.PIN_BUSY: 1.0})
    verdict = last(pin)
    assert verdict.stage == v.H2D and "pin-memory thread" in verdict.sentence


def test_starved_gpu_with_main_thread_outside_pytorch_is_not_blamed_on_a_stage():
    # The starved signature (9 % busy), but the main thread sleeps in the job's own code.
    odd = Knobs(gpu="starved", main_labels={lb.OTHER: 0.9, lb.DISPATCH: 0.1}, main_cpu=0.05,
                main_detail={lb.OTHER: "sleep (train.py:40)"})
    verdict = last(odd)
    assert verdict.stage == v.UNKNOWN and verdict.confidence == 0.0
    assert "sleep (train.py:40)" in verdict.sentence


def test_cpu_only_job_whose_main_thread_sleeps_in_its_own_code_says_so():
    """No GPU, two idle workers ahead, the loop sleeps after each step (bench/field_cpu/sleepy_loop.py:
    main thread 69 % outside every training frame, in main (sleepy_loop.py:56)). It read "Not enough
    evidence: no stage's signals are conclusive" while the stacks showed where the time goes."""
    sleepy = replace(HEALTHY, gpu=None, cpu_count=2, usable=2, workers=2, main_cpu=0.12,
                     main_labels={lb.OTHER: 0.8, lb.BACKWARD: 0.1, lb.OPTIMIZER: 0.1},
                     main_detail={lb.OTHER: "main (train.py:56)"})
    verdict = last(sleepy, 20)
    assert verdict.stage == v.UNKNOWN and verdict.speedup is None
    assert "outside every training frame" in verdict.sentence and "main (train.py:56)" in verdict.sentence
    assert "there is no GPU" in verdict.sentence and "not conclusive" not in verdict.sentence
    # the step itself computing keeps the CPU-bound verdict
    assert last(replace(sleepy, main_cpu=1.0, main_labels={lb.BACKWARD: 0.6, lb.OPTIMIZER: 0.4})).stage == v.CPU_BOUND


def test_commands_the_job_runs_are_its_own_cpu_not_contention_nor_rest():
    """Trial 23's job paced by subprocess.run (du and git every 10 steps: 55-70 % of its time by its
    own clock) on a 2-CPU host: the commands' CPU, no row of the table, read as used outside the job
    and named contention with no outside process, then "Not training" while it trained 25 steps/s.
    Counted as the job's (ProcsSample.exited_cpu_pct), the verdict says where the time goes."""
    paced = replace(HEALTHY, gpu=None, cpu_count=2, usable=2, workers=2, main_cpu=0.06, worker_cpu=0.05,
                    main_labels={lb.OTHER: 0.85, lb.BACKWARD: 0.1, lb.DATA_WAIT: 0.05},
                    main_detail={lb.OTHER: "subprocess.run from main (train.py:48)"}, exited_cpu=0.6)
    verdict = last(paced, 20)
    assert verdict.stage == v.UNKNOWN, verdict.sentence
    assert "subprocess.run from main (train.py:48)" in verdict.sentence
    assert "commands it runs and waits for use 0.60 core." in verdict.sentence, verdict.sentence
    assert "outside the job" not in verdict.sentence and "Not training" not in verdict.sentence
    assert verdict.level(v.CONTENTION) == v.LEVEL_OK
    # the same host reading with the commands' CPU uncounted: the job looks at rest
    uncounted = last(replace(paced, exited_cpu=0.0, host_cpu=100 * (0.06 + 0.1 + 0.1 + 0.6) / 2), 20)
    assert uncounted.stage == v.IDLE, uncounted.sentence


# -- fallbacks -------------------------------------------------------------------------------------
def test_without_gpm_healthy_is_said_with_less_confidence_and_layout_cannot_be_seen():
    full, blind = last(HEALTHY), last(replace(HEALTHY, gpm=False))
    assert blind.stage == v.GPU_BOUND and blind.confidence < full.confidence
    assert "without GPM" in blind.sentence
    layout = last(replace(LAYOUT, gpm=False))
    assert layout.stage == v.GPU_BOUND  # memory-bound needs GPM (or layout frames): said, not guessed
    sm = next(e for e in layout.evidence if e.stage == v.GPU_MEMORY and e.signal == "gpm")
    assert "no GPM" in sm.text


def test_without_gpm_pinned_copies_still_show_as_the_link():
    verdict = last(replace(PINNED, gpm=False))
    assert verdict.stage == v.H2D and verdict.confidence < last(PINNED).confidence


def test_without_stacks_input_stages_come_from_worker_cpu_and_storage_with_less_confidence():
    for knobs, stage in ((DECODE, v.DECODE), (IO, v.IO)):
        full, blind = last(knobs), last(replace(knobs, stacks=False))
        assert blind.stage == stage and blind.confidence < full.confidence
        assert "no stacks" in blind.sentence
        assert any("CAP_SYS_PTRACE" in e.text or "ptrace" in e.text for e in blind.evidence)


def test_without_stacks_or_a_gpu_the_sentence_says_the_main_threads_cpu():
    """Trial 28: `--no-stacks` on a host with no GPU read "the GPU has work only not measured of the
    time"; what the verdict rests on there is a main thread that uses little CPU."""
    cpu = {"gpu": None, "cpu_count": 2, "usable": 2, "workers": 2, "stacks": False}
    for knobs, stage in ((DECODE, v.DECODE), (IO, v.IO)):
        blind = last(replace(knobs, **cpu))
        assert blind.stage == stage, blind.sentence
        assert "GPU" not in blind.sentence and "not measured of the time" not in blind.sentence, blind.sentence
        assert re.search(r"the main thread uses only 0\.\d\d core CPU \(a thread waiting for data uses none\)",
                         blind.sentence), blind.sentence


def test_without_stacks_launch_needs_the_tiny_kernel_signature():
    assert last(replace(LAUNCH, stacks=False)).stage == v.LAUNCH
    # Without stacks and without GPM a busy main thread could be inline loading too: no verdict.
    blind = last(replace(LAUNCH, stacks=False, gpm=False))
    assert blind.stage == v.UNKNOWN and blind.confidence == 0.0
    assert "no stacks" in blind.sentence and "no GPM" in blind.sentence


def test_cpu_only_jobs_are_diagnosed_for_io_decode_and_contention():
    cpu = {"gpu": None, "cpu_count": 2, "usable": 2, "workers": 2}
    assert last(replace(DECODE, **cpu)).stage == v.DECODE
    assert last(replace(IO, **cpu)).stage == v.IO
    assert last(replace(DECODE, cg_throttled=0.4, cg_quota=1.0, **cpu)).stage == v.CONTENTION
    assert last(replace(DECODE, steal=20.0, **cpu)).stage == v.CONTENTION
    for k in (DECODE, IO):
        stages = {x.stage for x in run(build(replace(k, **cpu), 12, noise=0.05))}
        assert not stages & {v.GPU_BOUND, v.GPU_MEMORY, v.LAUNCH, v.H2D}


def test_cpu_only_compute_bound_job_is_not_called_gpu_bound():
    verdict = last(replace(HEALTHY, gpu=None, cpu_count=2, usable=2, workers=2))
    assert verdict.stage == v.CPU_BOUND and verdict.confidence >= 0.5
    assert verdict.sentence.startswith("CPU-bound") and "no GPU" in verdict.sentence
    assert verdict.speedup is None


def test_a_job_that_holds_no_gpu_on_a_gpu_host():
    computing = last(replace(HEALTHY, gpu="none_held"))
    assert computing.stage == v.CPU_BOUND and "holds no GPU" in computing.sentence
    sleeping = last(replace(IDLE, gpu="none_held"))
    assert sleeping.stage == v.IDLE and "holds no GPU" in sleeping.sentence


def test_an_exited_job_is_idle():
    frames = build(HEALTHY, 5) + build(replace(HEALTHY, alive=False), 1, t0=1005.0, seq0=5)
    verdict = run(frames)[-1]
    assert verdict.stage == v.IDLE and "exited" in verdict.sentence


def test_first_ticks_are_said_with_low_confidence():
    one = run(build(DECODE, 1))[0]
    assert one.confidence < last(DECODE).confidence


def test_each_rank_gets_its_own_verdict():
    a = build(replace(HEALTHY, pid=100, rank=0, gpu_index=0), 10)
    b = build(replace(DECODE, pid=200, rank=1, gpu_index=1), 10)
    frames = merge(a, b)
    assert run(frames, rank=0)[-1].stage == v.GPU_BOUND
    rank1 = run(frames, rank=1)[-1]
    assert rank1.stage == v.DECODE and rank1.rank == 1


def test_verdicts_survive_the_recording_codec():
    from gpuwatch.model.codec import from_dict, to_dict

    for knobs in (HEALTHY, DECODE, replace(IO, stacks=False), replace(HEALTHY, gpu=None)):
        verdict = last(knobs)
        assert from_dict(v.Verdict, to_dict(verdict)) == verdict


def test_a_diagnosis_bug_gives_an_unknown_verdict_not_an_exception(monkeypatch):
    import gpuwatch.diagnosis as diagnosis

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(diagnosis, "extract", broken)
    verdict, state = diagnosis.diagnose(build(HEALTHY, 3), None)
    assert verdict.stage == v.UNKNOWN and verdict.confidence == 0.0 and "ZeroDivisionError" in verdict.sentence


def test_unknown_signals_are_shown_as_unknown_never_as_zero():
    verdict = last(replace(HEALTHY, gpm=False))
    sm = [e for e in verdict.evidence if e.signal == "sm_active"]
    assert sm and all(e.value is None and not e.supports for e in sm)


def test_between_starved_and_saturated_host_causes_come_first_then_the_gpu():
    # Kernel-active 80-85 %: above §11's 70 % "starved", below its 90 % "saturated".
    layout = last(replace(LAYOUT, trace=lambda w: 82.0))
    assert layout.stage == v.GPU_MEMORY
    mostly = last(replace(HEALTHY, trace=lambda w: 82.0))
    assert mostly.stage == v.GPU_BOUND and mostly.sentence.startswith("Mostly GPU-bound")
    assert mostly.confidence < last(HEALTHY).confidence
    waiting = replace(DECODE, gpu="healthy", trace=lambda w: 80.0)
    assert last(waiting).stage == v.DECODE


def test_a_trainer_that_waits_leaves_its_core_to_one_more_worker():
    """Trial 23: one worker decoding at 1.0 core, the trainer waiting at 0.15, the host 59 % busy on
    2 CPUs, was told "the 1 worker and the training process already fill the 2 usable CPUs"; a
    second worker ran the job 1.5x faster. The idle CPU is measured, not assumed full."""
    job = replace(DECODE, gpu=None, workers=1, worker_cpu=1.0, main_cpu=0.15, cpu_count=2, usable=2)
    text = " ".join(last(job).remedies)
    assert "already full" not in text
    assert "Raise num_workers from 1 toward 2" in text and "sat idle" in text
    # with its figure beside it: the gain comes from the same proposal (fix_gains.proposed_workers);
    # the demo's line had carried neither a figure nor a reason
    raise_line = next(r for r in last(job).remedies if r.startswith("Raise num_workers from 1 toward 2"))
    assert "; expected: about 1.75x faster, because 2 workers would build 1.8x the batches of 1" in raise_line, raise_line
    # Where the trainer does use its core, the CPUs are full and the advice stays as it was.
    busy = replace(job, main_cpu=0.95)
    assert "The 2 usable CPUs are already full" in " ".join(last(busy).remedies)


def test_one_save_or_validation_pass_is_said_once_not_as_a_share_of_the_time():
    """On the first ticks a single save read "Checkpoint saves take 100 % of the time (~1.0 s)",
    falling as the watch went on (trial 23's sync_logging job): one is no share of the time yet."""
    from gpuwatch.diagnosis.sentence import epochs
    from gpuwatch.model.verdict import CHECKPOINT, RESPAWN, VALIDATION, Phase

    one = Phase(CHECKPOINT, 1, 1.0, None, 1.0, 1.0)
    # no "Epochs:" lead for saves and passes alone (review 46: "Epochs: Checkpoint saves take ...")
    assert epochs((one,)) == " A checkpoint save (~1.0 s) was seen once."  # not "once in 1 s"
    val = Phase(VALIDATION, 1, 0.2, None, 2.0, 10.0)
    assert epochs((val,)) == " A validation pass (~2.0 s) was seen once in 10 s."
    two = Phase(CHECKPOINT, 2, 0.1, 10.0, 1.0, 20.0)
    assert epochs((two,)) == " Checkpoint saves take 10 % of the time (~1.0 s every ~10.0 s)."
    sets = Phase(RESPAWN, 3, None, 10.0, None, 30.0)  # the workers' sets are what epochs make: led so
    assert epochs((sets, two)).startswith(" Epochs: the DataLoader workers are re-created every ~10.0 s")


def test_a_ranks_view_counts_its_sibling_ranks_as_the_job_not_as_contention():
    """Trial 24's two-rank gloo DDP job on 2 CPUs: each rank's verdict said "processes outside the
    job use 1.00 core" (its sibling rank's CPU), while the job's verdict had no outside load."""
    from gpuwatch.ranks import frame_for_rank

    both = 100 * (0.3 + 0.1 + 1.0 + 0.1) / 2  # the host's busy time: the two ranks and nothing else
    slow = replace(HEALTHY, gpu=None, cpu_count=2, usable=2, workers=0, pid=100, rank=0, main_cpu=0.3,
                   host_cpu=both, main_run_delay=0.2, main_labels={lb.COLLECTIVE: 0.8, lb.BACKWARD: 0.2})
    busy = replace(slow, pid=200, rank=1, main_cpu=1.0, main_labels={lb.DISPATCH: 0.9, lb.COLLECTIVE: 0.1})
    frames = merge(build(slow, 20), build(busy, 20))
    for rank in (0, 1):
        view = [frame_for_rank(f, rank) for f in frames]
        verdict = run(view)[-1]
        assert verdict.level(v.CONTENTION) == v.LEVEL_OK and "outside the job" not in verdict.sentence, \
            (rank, verdict.sentence)
    # rank 0's view with its sibling's 1.1 core forgotten reads it as used outside the job
    blind = [replace(f, procs=replace(f.procs, siblings_cpu_pct=0.0)) for f in (frame_for_rank(f, 0) for f in frames)]
    assert run(blind)[-1].level(v.CONTENTION) != v.LEVEL_OK


def test_a_writer_threads_writes_are_no_checkpoint_save():
    """Trial 25: a logging thread writing 80-100 MB/s (fsync'd event files) beside a main thread
    computing 98 % of the time read "a checkpoint save (~1.0 s) was seen once" on every tick. A tick
    no stack sample covers is a save by its writes only where no sampled tick shows the process
    writing that fast with its main thread elsewhere."""
    writer = replace(HEALTHY, gpu=None, cpu_count=2, usable=2, workers=0, main_write_bps=9e7,
                     main_labels={lb.DISPATCH: 0.7, lb.BACKWARD: 0.3})
    frames = build(writer, 20)
    # every fourth tick without stack samples (a dump that failed or fell outside the tick)
    thinned = [replace(f, stacks=replace(f.stacks, threads=(), dumps=())) if i % 4 == 3 else f
               for i, f in enumerate(frames)]
    verdict = run(thinned)[-1]
    assert not any(p.kind == "checkpoint" for p in verdict.phases), verdict.phases
    assert "checkpoint" not in verdict.sentence.lower(), verdict.sentence


def test_a_cpu_job_that_fills_its_cgroup_quota_on_a_large_host_computes():
    """A CPU-only job under a 2-core quota on a 16-core host: its main process at 0.60 core beside
    two workers at 0.70 fills the quota. Read against the host's 16 CPUs the CPU looked spare, and
    a process under a core with CPU to spare is no compute-bound step (review)."""
    job = replace(HEALTHY, gpu=None, cpu_count=16, usable=16, workers=2, worker_cpu=0.7, main_cpu=0.6)
    assert last(replace(job, cg_quota=2.0)).stage == v.CPU_BOUND
    assert last(job).stage != v.CPU_BOUND  # no quota: 14 CPUs idle, the process is off the CPU 40 % of the time


def test_launch_says_tiny_kernels_only_where_their_signature_was_read():
    """Review 30: a GPU-bound job's warm-up tick read "its SMs are 38 % active (tiny kernels)" beside
    its own evidence "SM active / graphics-engine active: 0.89 (needs at most 0.25)": not met."""
    from gpuwatch.diagnosis.sentence import _launch

    assert "active (tiny kernels) while" in last(LAUNCH).sentence
    f = {"busy": 0.42, "sm": 0.38, "ratio": 0.89, "main_cpu": 1.0, "dispatch": 0.9}
    text = _launch(f, "dispatch", None)
    assert "its SMs are 38 % active while" in text and "tiny" not in text, text
    assert "(tiny kernels)" in _launch({**f, "ratio": 0.01}, "dispatch", None)
