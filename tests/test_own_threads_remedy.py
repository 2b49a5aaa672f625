"""A training process whose own thread pool oversubscribes the CPUs gets the remedy for it.

Trial 32 (tests/data/cpu_field/t32_lstm_threads.jsonl.gz: torch.set_num_threads(6) on 2 CPUs beside
other work): the verdict named only the processes outside the job, though the job's own process kept
about 3 threads queued for a CPU beside the 0.6 core it ran on.
"""

from __future__ import annotations

from gpuwatch.diagnosis.thresholds import OWN_THREADS_OVER
from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames

OVER = "The training process itself keeps"


def _verdicts(path: str):
    return from_frames(load_frames(path)).verdicts


def test_the_remedy_comes_with_the_readings_that_show_it():
    said = [v for v in _verdicts("tests/data/cpu_field/t32_lstm_threads.jsonl.gz") if v.stage == "contention"]
    assert said
    with_it = [r for v in said for r in v.remedies if r.startswith(OVER)]
    assert len(with_it) > len(said) // 2
    text = with_it[-1]
    running = float(text.split("(")[1].split(" core")[0])
    queued = float(text.split("running, ")[1].split(" queued")[0])
    assert running + queued >= 2 + OWN_THREADS_OVER - 0.05  # 2 usable CPUs on the VM
    assert "torch.set_num_threads(2)" in text


def test_no_such_remedy_where_the_process_keeps_no_more_threads_than_cpus():
    # tests/data/field/cpu_job_neighbours_cpu.jsonl.gz: a CPU job beside CPU hogs (Contention), whose
    # own threads fit the CPUs; and a GPU job on the H200's 16 CPUs
    for path in ("tests/data/field/cpu_job_neighbours_cpu.jsonl.gz", "tests/data/h200/healthy.jsonl"):
        assert not [r for v in _verdicts(path) for r in v.remedies if r.startswith(OVER)], path


def test_another_jobs_dataloader_worker_is_said_to_be_another_jobs():
    """Trial 32: "Processes outside the job use 1.41 cores: pt_data_worker (pid 20983, 0.70 core)"
    read as the job's own worker; it was another session's. stop_cont's neighbours were too."""
    said = [r for v in _verdicts("tests/data/cpu_field/stop_cont.jsonl.gz") for r in v.remedies
            if r.startswith("Processes outside the job use")]
    assert said and any("pt_data_worker of another job (pid " in r for r in said)
    assert not any("pt_data_worker (pid" in r for r in said)


def test_ranks_share_the_cpus_and_beside_a_gpu_the_pool_is_a_condition():
    """Review 37: the readings are each training process's; N ranks told set_num_threads(usable)
    would oversubscribe N-fold. Beside a GPU the runnable threads may be pin, autograd or NCCL
    threads, so the pool is named as a condition there."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.remedies import own_threads_over

    def s(pids, cpu, queued, usable, gpu):
        return SimpleNamespace(job=SimpleNamespace(main_cpu=cpu, main_run_delay=queued, usable_cpus=usable,
                                                   main_pids=frozenset(pids), ranks=len(pids)), gpu=SimpleNamespace(present=gpu))

    one = own_threads_over(s({1}, 0.6, 3.0, 2, False))
    assert "its threads outnumber the CPUs: torch.set_num_threads(2) or OMP_NUM_THREADS=2 for torch's own pool" in one
    assert "fewer threads in any pool the job runs itself" in one  # a ThreadPoolExecutor's threads too
    four = own_threads_over(s({1, 2, 3, 4}, 1.0, 4.0, 16, True))
    assert "(4 for each of its 4 training processes)" in four and "torch.set_num_threads(4)" in four
    assert "if its own thread pool" in four
    assert own_threads_over(s({1, 2, 3, 4}, 1.0, 2.0, 16, True)) is None  # 3 threads on its 4 CPUs: fits


def test_no_persistent_workers_gain_without_the_remedy_that_proposes_it():
    """Review 37: the remedy went where no re-creation was seen, its gain stayed in the stream's
    gains ("each proposed fix's own expected gain"), e.g. on every tick of t32_ratelimit."""
    from gpuwatch.model.verdict import PERSISTENT_WORKERS

    for path in ("tests/data/cpu_field/t32_ratelimit.jsonl.gz", "tests/data/h200/field_tokenize.jsonl.gz",
                 "tests/data/cpu_field/t32_imagefolder_rrc.jsonl.gz"):
        for v in _verdicts(path):
            if any(g.fix == PERSISTENT_WORKERS for g in v.gains):
                assert any("persistent_workers=True" in r for r in v.remedies), (path, v.t, v.remedies)
