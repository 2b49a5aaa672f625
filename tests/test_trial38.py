"""Trial 38 (2026-12-07, the 2-vCPU VM, no GPU): real CPU jobs recorded with their own clocks
(tests/data/cpu_field/README.md says what each is). The recordings carry the labels of the code that
recorded them: the main threads are labelled again here (tests/relabel.py), as a watch labels them now.

t38_sampler: a class-balanced BatchSampler calling random.choices over 300k weights for every batch,
in the training process (76 % of the job's time waiting in next(it) by its clock; cumulative
weights built once ran it 2.6x faster, 4 workers no faster). It read "Input-bound on batch
transfer ... receiving batches from the workers", with "return uint8 tensors".
t38_sortish: a bucketing sampler sorting 3M noisy lengths at each epoch's start, with persistent
workers (iter(dl) 18-29 % of each 10 s; sorting once ran it 1.43x faster). It read "Input-bound on
starting workers" with "persistent_workers=True", which the job had.
"""

from __future__ import annotations

import json

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.collectors.pyspy import ThreadRecord
from gpuwatch.collectors.stack_labels import classify
from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from tests.relabel import frame_of, relabelled, stdlib

DATA = "tests/data/cpu_field"
SITE = "/usr/lib/python3/dist-packages/"


def _where(short: str) -> str:
    if short.startswith("job"):
        return f"/tmp/trial38/{short}"  # the job's own script
    return SITE + short if short.startswith(("torch/", "tokenizers/", "PIL/", "torchvision/")) else stdlib(short)


def _clock(name: str) -> list[dict]:
    with open(f"{DATA}/{name}.clock.txt") as f:
        return [r for r in map(json.loads, f) if "share" in r]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    def run(name: str) -> list[v.Verdict]:
        path = relabelled(f"{DATA}/{name}.jsonl.gz", tmp_path_factory.mktemp(name) / f"{name}.jsonl", _where)
        a = Analysis()
        return [a.update(f) for f in load_frames(path)]
    return run


def _main(*texts: str) -> tuple[str, str]:
    frames = tuple(frame_of(t, _where) for t in texts)
    return classify(ThreadRecord(1, 1, "MainThread", True, False, frames), lb.ROLE_MAIN_THREAD)


def test_the_samplers_own_work_is_labelled_as_such_under_the_loaders_wait_and_its_epoch_start():
    under_wait = ("Random.choices (random.py:495)", "BalancedBatches.__iter__ (job5_sampler.py:32)",
                  "_BaseDataLoaderIter._next_index (torch/utils/data/dataloader.py:715)",
                  "_MultiProcessingDataLoaderIter._try_put_index (torch/utils/data/dataloader.py:1539)",
                  "_MultiProcessingDataLoaderIter._process_data (torch/utils/data/dataloader.py:1565)",
                  "_MultiProcessingDataLoaderIter._next_data (torch/utils/data/dataloader.py:1529)",
                  "<module> (job5_sampler.py:38)")
    assert _main(*under_wait) == (lb.SAMPLER, "BalancedBatches.__iter__")
    at_start = ("Sortish.__iter__.<locals>.<listcomp> (job7_sortish.py:30)", "Sortish.__iter__ (job7_sortish.py:30)",
                "_BaseDataLoaderIter._next_index (torch/utils/data/dataloader.py:715)",
                "_MultiProcessingDataLoaderIter._try_put_index (torch/utils/data/dataloader.py:1539)",
                "_MultiProcessingDataLoaderIter._reset (torch/utils/data/dataloader.py:1276)",
                "DataLoader.__iter__ (torch/utils/data/dataloader.py:502)", "<module> (job7_sortish.py:39)")
    assert _main(*at_start) == (lb.SAMPLER, "Sortish.__iter__")
    # a batch received (fd passing) and a set of workers started stay what they were
    recv = ("Connection._recv (multiprocessing/connection.py:395)",
            "_MultiProcessingDataLoaderIter._next_data (torch/utils/data/dataloader.py:1529)")
    assert _main(*recv)[0] == lb.DATA_IPC
    start = ("Popen._launch (multiprocessing/popen_fork.py:71)",
             "_MultiProcessingDataLoaderIter.__init__ (torch/utils/data/dataloader.py:1200)")
    assert _main(*start)[0] == lb.DATA_WAIT


def test_a_sampler_drawing_weights_each_batch_is_named_with_its_own_remedy(verdicts):
    waits = [r["share"]["data"] for r in _clock("t38_sampler")]
    assert min(waits) > 0.7  # the job's own clock: waiting in next(it), which its sampler is
    got = verdicts("t38_sampler")
    named = [x for x in got if x.stage == v.DECODE]
    assert len(named) > len(got) * 0.9
    sampler = [x for x in named if x.sentence.startswith("Input-bound on the DataLoader's sampler: the main thread "
                                                         "draws the batches' indices itself")]
    assert len(sampler) > len(named) * 0.9
    assert "most often in BalancedBatches.__iter__); the sampler runs in the training process" in sampler[-1].sentence
    said = " ".join(named[-1].remedies)
    assert said.startswith("Make the sampler cheaper") and "uint8" not in said and "num_workers=" not in said
    # the ceiling is the sampler's share: up to 2.8x where cumulative weights ran the job 2.6x faster
    assert all(1.2 <= x.speedup <= 4.2 for x in named if x.speedup is not None)


def test_a_sampler_sorting_at_each_epochs_start_is_not_called_starting_workers(verdicts):
    starts = [r["share"].get("new_epoch", 0.0) for r in _clock("t38_sortish")]
    assert 0.1 < sum(starts) / len(starts) < 0.35
    got = verdicts("t38_sortish")
    assert not [x for x in got if "starting workers" in x.sentence or "new set of workers" in x.sentence]
    assert not [x for x in got for r in x.remedies if r.startswith("persistent_workers=True")]
    named = [x for x in got if x.stage == v.DECODE]
    assert len(named) > len(got) // 2
    assert all(x.sentence.startswith("Input-bound on the DataLoader's sampler") for x in named)
    # sorting once ran it 1.43x faster; the figures read 1.2x-2.0x
    assert all(1.1 <= x.speedup <= 2.1 for x in named if x.speedup is not None)


def test_a_step_short_of_cpu_beside_its_decoding_workers_is_not_told_not_its_input(verdicts):
    """t38_zip_png: PNGs decoded and augmented by 2 workers (0.9 core) beside a step at 0.49 core of
    2 CPUs, its threads queued for a CPU. It read "CPU-bound: the job's own compute on the CPU is the
    limit, not its input", and "torch.set_num_threads to the usable cores" (it ran 2 on 2); a
    pre-decoded cache ran it 2.9x faster."""
    step = [r["share"]["step"] for r in _clock("t38_zip_png")]
    assert min(step) > 0.85  # the step, not the wait, by the job's own clock
    got = verdicts("t38_zip_png")
    bound = [x for x in got if x.stage == v.CPU_BOUND]
    assert len(bound) > len(got) * 0.8
    assert not [x for x in bound if "not its input" in x.sentence]
    last = bound[-1]
    assert last.sentence.startswith("CPU-bound: the job's own compute fills the CPUs, its input's included.")
    assert "the step and its input share the CPUs, so cheaper input work speeds the step too" in last.sentence
    assert last.remedies[0].startswith("Make the input cheaper: the DataLoader workers use")
    assert "set_num_threads" not in " ".join(last.remedies)


def test_a_compute_bound_control_names_no_input_cause(verdicts):
    """t38_mlm: a masked-LM transformer whose clock puts 98.7 % in its step; tokenising workers and
    their threads change little. CPU-bound, its input not blamed (the host's own load named
    Contention for a stretch, which it was)."""
    got = verdicts("t38_mlm")
    assert not [x for x in got if x.stage in (v.IO, v.DECODE)]
    assert sum(x.stage == v.CPU_BOUND for x in got) > len(got) // 2


def test_contention_on_a_multithreaded_step_says_its_figure_may_be_low(verdicts):
    """t38_metrics: a 2-thread MLP whose samples per 10 s fell from about 26,000 to about 4,000
    (6.5x) under one core of outside load, told "about 1.90x": its threads queued 0.9 on average,
    and threads in lock-step lose more than that. The sentence says so, and a remedy fits its threads
    to the CPUs left."""
    clock = [r["samples"] for r in _clock("t38_metrics") if "samples" in r]
    assert max(clock) / min(clock) > 5
    got = verdicts("t38_metrics")
    named = [x for x in got if x.stage == v.CONTENTION]
    assert len(named) > len(got) // 2
    said = [x for x in named if "several threads at once: threads that work in lock-step" in x.sentence]
    assert len(said) > len(named) // 2
    assert any(r.startswith("Or fit the training process's threads to the CPUs the others leave: "
                            "torch.set_num_threads(1)") for r in said[-1].remedies)


def test_one_first_batch_wait_is_said_once_not_of_each_new_set():
    """t38_annot_gc: persistent workers, one set for the whole run, read "Each new set of workers
    makes the main thread wait ~1.0 s for its first batches"."""
    from gpuwatch.diagnosis.sentence import epochs

    a = Analysis()  # as recorded: no sampler here, and the start's wait is told by its recorded detail
    got = [a.update(f) for f in load_frames(f"{DATA}/t38_annot_gc.jsonl.gz")]
    said = [epochs(x.phases) for x in got if "first batches" in epochs(x.phases)]
    assert said and not [x for x in said if "each new set of workers" in x.lower()]
    assert any("a set of workers made the main thread wait ~1.0 s for its first batches once" in x.lower() for x in said)


def test_a_sampler_that_works_in_its_iter_call_is_the_samplers_and_its_detail_names_its_code():
    """Review 45: a batch_sampler whose __iter__ builds its batches before it returns an iterator works
    under iter(sampler) in the iterator's _reset (with workers read as "workers starting", without as
    running ops); a sampler calling numpy was named by numpy's internals."""
    at_reset = ("MyBuckets.__iter__ (job9.py:12)",
                "_BaseDataLoaderIter._reset (torch/utils/data/dataloader.py:703)",
                "_MultiProcessingDataLoaderIter._reset (torch/utils/data/dataloader.py:1276)",
                "DataLoader.__iter__ (torch/utils/data/dataloader.py:502)", "<module> (job9.py:40)")
    assert _main(*at_reset) == (lb.SAMPLER, "MyBuckets.__iter__")
    at_init = ("MyBuckets.__iter__ (job9.py:12)", "_BaseDataLoaderIter._reset (torch/utils/data/dataloader.py:703)",
               "_SingleProcessDataLoaderIter.__init__ (torch/utils/data/dataloader.py:760)",
               "DataLoader.__iter__ (torch/utils/data/dataloader.py:502)", "<module> (job9.py:40)")
    assert _main(*at_init) == (lb.SAMPLER, "MyBuckets.__iter__")
    numpy = ("_wrapfunc (numpy/core/fromnumeric.py:57)", "argsort (numpy/core/fromnumeric.py:1133)",
             "Sorter.__iter__ (job9.py:12)", "_BaseDataLoaderIter._next_index (torch/utils/data/dataloader.py:715)",
             "<module> (job9.py:40)")
    assert _main(*numpy) == (lb.SAMPLER, "Sorter.__iter__")
    builtin = ("RandomSampler.__iter__ (torch/utils/data/sampler.py:170)",
               "BatchSampler.__iter__ (torch/utils/data/sampler.py:330)",
               "_BaseDataLoaderIter._next_index (torch/utils/data/dataloader.py:715)", "<module> (job9.py:40)")
    assert _main(*builtin) == (lb.SAMPLER, "RandomSampler.__iter__")
    # torch's own iterator set-up (its workers' start) is no sampler's
    start = ("Popen._launch (multiprocessing/popen_fork.py:71)",
             "_MultiProcessingDataLoaderIter.__init__ (torch/utils/data/dataloader.py:1200)",
             "DataLoader.__iter__ (torch/utils/data/dataloader.py:502)", "<module> (job9.py:40)")
    assert _main(*start)[0] == lb.DATA_WAIT


def test_a_sampler_verdict_is_no_loading_that_more_workers_would_help(verdicts):
    """Review 45: the workers check read a sampler verdict as loading ("far fewer workers than cores
    while loading data held the job back", "raise num_workers") beside "more workers do not help"."""
    from gpuwatch.report.checks_host import _loading

    named = [x for x in verdicts("t38_sampler") if x.stage == v.DECODE and x.sentence.startswith(
        "Input-bound on the DataLoader's sampler")]
    assert named and not [x for x in named if _loading(x)]


def test_a_main_thread_loading_itself_beside_a_larger_sampler_share_is_still_judged_as_a_load():
    """Review 45: with num_workers=0, a sampler share of 40 % beside inline loading of 35 % hid the
    load from the I/O and unmeasured stages (a loop's share had an exception for it, the sampler's not)."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.input_stages import loads_inline

    shares = {lb.INLINE_LOAD: 0.35, lb.SAMPLER: 0.40}
    s = SimpleNamespace(stacks=SimpleNamespace(share=shares.get), input_wait=0.0)
    assert loads_inline(s, "sampler")


def test_contention_blames_no_lock_step_on_the_training_process_for_its_workers_queue():
    """Review 45: t35_blas_workers' main process at 0.0 core with 0.06 threads queued read "The training
    process would use 1.68 cores, several threads at once", from a worker's BLAS pool queueing 1.8."""
    a = Analysis()
    got = [a.update(f) for f in load_frames(f"{DATA}/t35_blas_workers.jsonl.gz")]
    assert [x for x in got if x.stage == v.CONTENTION]
    assert not [x for x in got if "The training process would use" in x.sentence]
    assert not [x for x in got for r in x.remedies if r.startswith("Or fit the training process's threads")]
