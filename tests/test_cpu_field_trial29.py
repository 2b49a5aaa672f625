"""Trial 29's CPU jobs (tests/data/cpu_field/README.md): remedies and sentences that claimed what
was not seen."""

from __future__ import annotations

from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames

RECORDING = "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"


def test_batch_transfer_says_its_own_samples_and_no_gpu_where_there_is_none():
    """Trial 29: "the main thread spends 33 % of its time receiving batches" was the whole data
    wait of a 6-sample window, said as the transfer's, and its remedy read "normalise on the GPU"
    on a host without one."""
    # lightning_val_ckpt's minute held 4 times as many samples waiting as receiving, so it names batch
    # transfer no more (input_stages.receiving_leads); t38_annot_gc's receiving leads its waits
    assert not [x for x in from_frames(load_frames(RECORDING)).verdicts
                if x.sentence.startswith("Input-bound on batch transfer")]
    verdicts = from_frames(load_frames("tests/data/cpu_field/t38_annot_gc.jsonl.gz")).verdicts
    ipc = [x for x in verdicts if x.sentence.startswith("Input-bound on batch transfer")]
    assert ipc
    for x in ipc:
        assert "receiving batches from the workers" in x.sentence and " samples)" in x.sentence.split(" Epochs:")[0]
        said = " ".join(x.remedies)
        assert "on the GPU" not in said and "normalise in the training process" in said


def test_more_torch_threads_are_proposed_only_where_the_training_process_leaves_cores_idle():
    """Trial 29: a compute-bound job at 1.91 cores of 2 was told "torch.set_num_threads to the usable cores"."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.remedies import _cpu_compute

    def said(main_cpu, usable, ranks=(1,)):
        job = SimpleNamespace(main_cpu=main_cpu, usable_cpus=usable, ranks=len(ranks), main_run_delay=None)
        return _cpu_compute({}, "", SimpleNamespace(job=job, input_on_cpus=None))[0]

    assert "set_num_threads" not in said(1.91, 2)
    assert "torch.set_num_threads up to the usable cores if torch.get_num_threads() is lower" in said(1.0, 8)
    assert "torch.set_num_threads up to the usable cores" in said(None, 8)  # unread: the advice stands, as before
    # ranks divide the CPUs (trial 34: two gloo ranks at 0.8 core each on 2 CPUs)
    assert "set_num_threads" not in said(0.8, 2, ranks=(1, 2))
    assert "torch.set_num_threads up to each rank's share of the usable cores" in said(1.0, 8, ranks=(1, 2))


def test_the_more_workers_estimate_reads_the_wait_its_verdict_says():
    """The README demo's verdict read "waits for data 75 % of the time (6 of its last 8 samples)" over
    "the data wait of 100 % of the time shrinks": the stage in force reads its stack shares over a
    longer window than the signals the fix was priced on. The estimate now reads the sentence's wait."""
    from types import SimpleNamespace

    from gpuwatch.diagnosis.fix_gains import split

    s = SimpleNamespace(epoch_ticks=[], phases=(), input_wait=1.0)
    assert split(s, 0.75) == (0.0, 0.75, 0.25)
    assert split(s) == (0.0, 1.0, 0.0)


def test_a_few_samples_in_a_pipe_read_are_no_batch_transfer_where_the_minute_waits_on_workers():
    """Trial 39 (t39_longtail): 3 of a window's 14 samples in Connection._recv named "Input-bound on
    batch transfer" with "return uint8 tensors" for a 10 KB float batch, while the minute held 4 such
    samples against 41 in the queue's poll: long-tail batches behind prefetch_factor=1 (4 ran it
    1.44x faster by its clock). Receiving must lead the minute's waits to be named."""
    verdicts = from_frames(load_frames("tests/data/cpu_field/t39_longtail.jsonl.gz")).verdicts
    assert not [x for x in verdicts if "batch transfer" in x.sentence or "receiving batches" in x.sentence]
    assert not [x for x in verdicts if any("uint8" in r for r in x.remedies)]
