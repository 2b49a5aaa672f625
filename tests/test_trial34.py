"""Trial 34's jobs (tests/data/cpu_field/README.md: t34_*), each against its own clock."""

from __future__ import annotations

import re

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

DATA = "tests/data/cpu_field/"


def _verdicts(name: str):
    analysis = Analysis()
    return [analysis.update(f) for f in load_frames(DATA + name)]


@pytest.fixture(scope="module")
def short_epochs():
    return _verdicts("t34_short_epochs.jsonl.gz")


def test_brief_validation_passes_are_counted_as_a_floor(short_epochs):
    """52 passes of ~0.33 s in 56 s by the job's clock read "15 passes in 59 s": passes shorter than
    the samples' spacing fall between them or merge, so the count is said as a floor."""
    said = [x.sentence for x in short_epochs if "validation passes take" in x.sentence]
    assert said
    for s in said:
        m = re.search(r"validation passes take [^(]*\(([^)]*)\)", s)
        assert m and ("too short to time" not in m.group(1) or "at least" in m.group(1)), s


def test_first_batches_leave_out_the_validation_loaders_waits(short_epochs):
    """First batches 19 % beside validation 25 % added to more than the job's clock gave both (4 % +
    31 %): the validation loader's first batches fall inside its passes and count there alone."""
    last = next(x for x in reversed(short_epochs) if x.phases)
    first = next(p for p in last.phases if p.kind == v.EPOCH_START)
    val = next(p for p in last.phases if p.kind == v.VALIDATION)
    assert first.share is not None and first.share <= 0.15
    assert first.share + val.share <= 0.31 + 0.08 + 0.05  # validation + all training waits, by its clock


def test_recreated_workers_are_told_to_persist_under_another_stage(short_epochs):
    """Contention held the verdict, the epochs clause said the workers were re-created at least 54
    times with their first batches a share of the time, and no remedy said how to keep them."""
    contention = [x for x in short_epochs if x.stage == v.CONTENTION and "re-created" in x.sentence]
    assert contention
    said = [r for r in contention[-1].remedies if r.startswith("persistent_workers=True")]
    assert said and "their first batches keep the main thread waiting" in said[0], contention[-1].remedies


def test_cpu_bound_says_how_many_samples_its_no_wait_rests_on():
    """A job waiting 38 % of the time by its own clock read 0 waits in 6 samples for a few ticks:
    "waiting for data 0 %" now says what it was read from."""
    vs = _verdicts("t34_text_iterable.jsonl.gz")
    cpu = [x for x in vs if x.stage == v.CPU_BOUND]
    assert cpu  # the chance runs of samples still read so for a few ticks
    for x in cpu:
        m = re.search(r"waiting for data (\d+) % of the time \((\d+) of its last (\d+) samples?\)", x.sentence)
        assert m and round(100 * int(m.group(2)) / int(m.group(3))) == int(m.group(1)), x.sentence
    assert sum(1 for x in vs if x.stage == v.DECODE) > 4 * len(cpu)  # CPU prep, the clock's story, leads


def test_no_stage_on_one_sample_without_a_gpu():
    """Watched by torchrun's PID, ticks 3-4 read "Input-bound on batch transfer: the main thread waits
    for data 33 % of the time (1 of its last 3 samples)" on a job waiting 2-7 % by its clock: with no
    GPU whose idle time backs it, one sample names no stage."""
    vs = _verdicts("t34_ddp_torchrun.jsonl.gz")
    named = [x for x in vs if x.stage in (v.IO, v.DECODE, v.H2D)]
    thin = [x.sentence for x in named if re.search(r"\(1 of its last \d+ samples?\)", x.sentence)]
    assert not thin, thin
    # and none at all in the ticks where only a few samples were read (its first seconds)
    assert not [x for x in named[:1] if x.t - vs[0].t < 6], [x.sentence for x in named[:1]]


def test_ranks_are_not_told_to_raise_their_threads_to_every_core():
    """Two gloo ranks with one thread each fill the 2 CPUs: "torch.set_num_threads to the usable cores"
    would oversubscribe them."""
    frames = load_frames(DATA + "t34_ddp_torchrun.jsonl.gz")
    for rank in (None, 0, 1):  # the job's verdict and each rank's own (the TUI's k view, the stream's ranks)
        analysis = Analysis(rank=rank)
        cpu = [x for x in (analysis.update(f) for f in frames) if x.stage == v.CPU_BOUND]
        assert cpu, rank
        assert not [r for x in cpu for r in x.remedies if "set_num_threads" in r], rank


def test_a_secondary_stages_run_gain_says_what_it_counts():
    """"CPU prep (held 13 % of the time; fixing it: up to 1.09x over this run ...)" read as the whole
    gain of fixing the input; the figure counts the ticks the stage held, and says so."""
    path = DATA + "t34_short_epochs.jsonl.gz"
    md = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    lines = [line for line in md.splitlines() if "over this run" in line and "held 100%" not in line]
    assert lines
    for line in lines:
        assert re.search(r"over this run \(counted on the ticks it held; ", line), line


# -- trial 35 (tests/data/cpu_field/README.md: t35_*) ----------------------------------------------

def test_a_workers_own_forks_are_not_workers():
    """subprocess.run in __getitem__: each fork carries the worker's name until it execs, and was read
    as a new worker ("re-created 7 times" beside persistent_workers=True). Recordings are read with
    such forks as the job's other processes; the collector no longer names them workers."""
    from gpuwatch.collectors.target import _Raw, _is_worker

    vs = _verdicts("t35_subproc.jsonl.gz")
    assert not [x for x in vs for p in x.phases if p.kind == v.RESPAWN]
    assert not [r for x in vs for r in x.remedies if r.startswith("persistent_workers=True")]
    worker = _Raw(1, "pt_data_worker", ("python", "job.py"), 0.0, "python")
    assert _is_worker(worker, _Raw(0, "python", ("python", "job.py"), 0.0, "python"))
    assert not _is_worker(worker, worker)  # a worker's child, before its exec


def test_a_worker_waiting_on_its_command_is_not_reading():
    """Popen._execute_child holds "open": a worker waiting on `gzip | sort` read as reading, and Disk
    was named on it."""
    from gpuwatch.model import stacks as lb

    assert lb.activity(lb.ROLE_WORKER, lb.W_IO, "Popen._execute_child") == lb.W_WAIT
    assert lb.activity(lb.ROLE_WORKER, lb.W_IO, "ImageFile.load") == lb.W_IO


def test_a_pass_is_not_split_by_ticks_without_stack_samples():
    """One validation pass of ~59 s (its clock) read as three, "~18.0 s every ~24.5 s", where py-spy
    missed a tick on the busy host."""
    vs = _verdicts("t35_stop_validation.jsonl.gz")
    counts = {p.count for x in vs for p in x.phases if p.kind == v.VALIDATION}
    assert counts == {1}, counts


def test_threaded_workers_are_told_of_their_thread_pools():
    """3 workers running BLAS pools on 2 CPUs, each under a core but with its other threads queued:
    OPENBLAS_NUM_THREADS=1 ran the job 2-5x faster, and no remedy said so."""
    vs = _verdicts("t35_blas_workers.jsonl.gz")
    said = [r for x in vs if x.stage == v.DECODE for r in x.remedies if r.startswith("Stop thread oversubscription")]
    assert said and "OPENBLAS_NUM_THREADS=1" in said[-1], said[-1:]


def test_loading_inside_validation_is_said_as_the_validation_loaders():
    """The training loader had 2 persistent workers; the validation loader num_workers=0. The loading
    the main thread did itself, all inside validation passes, read "with num_workers=0 the main thread
    loads ... each batch itself" and "Prepare batches in DataLoader workers"."""
    vs = _verdicts("t35_val_inline.jsonl.gz")
    inline = [x for x in vs if x.stage == v.DECODE and "loads and prepares" in x.sentence]
    assert inline
    for x in inline:
        assert x.sentence.startswith("Input-bound on loading in the validation passes"), x.sentence
        assert x.remedies[0].startswith("Give the validation DataLoader workers of its own"), x.remedies


def test_batches_made_by_the_jobs_own_threads_leave_disk_and_cpu_prep_unjudged():
    """A thread pool in the training process made the batches: the verdict said gpuwatch does not
    measure where they come from, while the pipeline panel, the JSON levels and Prometheus said Disk
    and CPU prep were "ok", as if checked and fine."""
    vs = _verdicts("t35_threadpool.jsonl.gz")
    fed = [x for x in vs if x.stage == v.UNKNOWN and "come from elsewhere" in x.sentence]
    assert fed
    for x in fed:
        assert x.level(v.IO) == v.LEVEL_NA and x.level(v.DECODE) in (v.LEVEL_NA, v.LEVEL_WARNING), x.levels


def test_a_worker_waiting_for_its_forks_exec_is_not_on_the_disk():
    """subprocess starts its command with vfork, and the worker sits in D state until the child
    execs: "33 % in D state" named Disk for workers reading 0 B/s (review 39)."""
    from dataclasses import replace

    from gpuwatch.diagnosis.host_signals import _d_share
    from gpuwatch.model.procs import ROLE_OTHER, ProcsSample, forking

    frames = load_frames(DATA + "t35_subproc.jsonl.gz")
    with_fork = [f.procs for f in frames if forking(f.procs)]
    assert with_fork  # the worker's command was caught alive beside it in some samples
    for sample in with_fork:
        workers = list(sample.by_role("worker"))
        stuck = [replace(w, state="D") if w.pid in forking(sample) else w for w in workers]
        assert _d_share(stuck, sample) == _d_share(workers, sample)  # a forking worker's D is not counted
    # and a worker in D with no fork of its own still is
    sample = with_fork[0]
    lone = ProcsSample(sample.t, tuple(p for p in sample.processes if p.role != ROLE_OTHER), sample.usable_cpus)
    workers = list(lone.by_role("worker"))
    assert _d_share([replace(workers[0], state="D"), *workers[1:]], lone) > 0


def test_a_long_blackout_of_stack_samples_does_not_join_two_passes():
    """Ticks without stack samples carry a pass over BRIDGE_TICKS of them at most."""
    from gpuwatch.diagnosis.phases import BRIDGE_TICKS, _runs

    inside = [True, True, False, True, True] + [False] * (BRIDGE_TICKS + 1) + [True]
    sampled = [True, True, False, True, True] + [False] * (BRIDGE_TICKS + 1) + [True]
    ticks = list(range(len(inside)))
    runs = _runs(ticks, lambda i: inside[i], lambda i: not sampled[i])
    assert runs == [(0, 4), (len(inside) - 1, len(inside) - 1)], runs


def test_an_old_torchs_worker_fork_is_no_worker():
    """torch 2.3/2.4 name a worker and its un-exec'd fork alike (pt_main_thread, the same argv)."""
    from gpuwatch.collectors.target import ROLE_WORKER, _Raw, assign_roles

    argv = ("python", "train.py")
    info = {1: _Raw(0, "python", argv, 0.0, "python"), 2: _Raw(1, "pt_main_thread", argv, 1.0, "python"),
            3: _Raw(2, "pt_main_thread", argv, 2.0, "python")}
    roles = assign_roles(1, info, {})
    assert roles[2] == ROLE_WORKER and roles[3] != ROLE_WORKER, roles


def test_loading_in_a_frame_named_like_validate_without_workers_is_the_training_loaders():
    """A num_workers=0 job whose dataset code runs pydantic's model_validate is not told its
    validation loader has num_workers=0: that reading needs a training loader with workers."""
    from gpuwatch.diagnosis.validation_loader import validation_loads

    assert not validation_loads({"val_load": 12, "load_n": 12, "loader_workers": 0})
    assert validation_loads({"val_load": 2, "load_n": 2, "loader_workers": 2})
