"""Remedies, sentences and speed-ups carry what was seen, and the speed-up follows the evidence."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from tests.test_diagnosis_frames import Knobs, build, last, run, then
from tests.test_diagnosis_stages import DECODE, HEALTHY, IO, LAUNCH, LAYOUT, PAGEABLE, PINNED


def _text(verdict: v.Verdict) -> str:
    return " ".join(verdict.remedies)


def _evidence(verdict: v.Verdict, stage: str, signal: str) -> v.Evidence:
    return next(e for e in verdict.evidence if e.stage == stage and e.signal == signal)


def test_decode_remedies_weigh_workers_against_cores():
    few = last(replace(DECODE, workers=4, usable=16, cpu_count=16))
    assert "Raise num_workers from 4 toward 15" in _text(few)
    assert "decode_jpeg" in _text(few)  # the hottest frame is no reason for a decoder: not quoted beside it
    full = last(replace(DECODE, workers=8, worker_cpu=0.97, usable=8, cpu_count=8))
    assert "The 8 usable CPUs are already full (the 8 workers use" in _text(full)
    assert "Raise num_workers" not in _text(full)


def test_io_remedies_name_the_storage_and_the_formats():
    nfs = last(replace(IO, data_path="/mnt/imagenet/train", fstype="nfs4", network=True))
    text = _text(nfs)
    assert "/mnt/imagenet/train on nfs4" in text and "network file system" in text
    assert "/dev/shm" in text and "WebDataset" in text and "LMDB" in text
    assert "prefetch_factor" in text
    # No set of workers was re-created: keeping them is no fix for what was seen (review 36).
    assert "persistent_workers=True" not in text
    assert "nfs4 (network)" in nfs.sentence


def test_respawning_workers_ask_for_persistent_workers():
    frames = build(IO, 6)
    frames = then(frames, replace(IO, worker_pid0=500), 6)  # new worker pids: the epoch restarted them
    verdict = run(frames)[-1]
    # One replacement is a new loader or one epoch, not yet a pattern: the advice is said as a condition.
    assert re.search(r"persistent_workers=True, if the job's epochs re-create its workers \(one set replaced "
                     r"another once in \d+ s", _text(verdict)), _text(verdict)
    frames = then(frames, replace(IO, worker_pid0=600), 6)  # and again: a pattern of epochs
    verdict = run(frames)[-1]
    assert re.search(r"persistent_workers=True: the DataLoader's workers were re-created 2 times in \d+ s",
                     _text(verdict)), _text(verdict)


def test_h2d_remedies_depend_on_whether_memory_is_pinned():
    unpinned = last(PAGEABLE)
    assert "pin_memory=True" in _text(unpinned) and "non_blocking=True" in _text(unpinned)
    pinned_loader = last(replace(PAGEABLE, pin=True))
    assert "pin-memory thread runs" in _text(pinned_loader)
    link = last(PINNED)
    assert "link is full" in _text(link) and "uint8" in _text(link)


def test_a_downtrained_link_is_reported_under_load():
    verdict = last(replace(PINNED, link=(4, 8)))
    assert "gen4 x8 of gen5 x16" in _text(verdict)


def test_launch_remedies_cover_graphs_syncs_and_batch_size():
    text = _text(last(LAUNCH))
    assert 'mode="reduce-overhead"' in text and ".item()" in text and "larger batch" in text
    sync = last(replace(LAUNCH, gpu="sync", main_labels={lb.SYNC: 0.8, lb.DISPATCH: 0.2},
                        main_detail={lb.SYNC: "step (train.py:57)"}))
    assert sync.remedies[0].startswith("Remove per-step synchronisation") and "train.py:57" in sync.remedies[0]


def test_gpu_memory_remedies():
    # The layout fixes only where the main thread was seen in layout ops (review 36): the H200 layout
    # copy's GPU signature alone names the stage, and its first remedy is to find the kernels.
    text = _text(last(LAYOUT))
    assert "torch.profiler" in text and "torch.compile" in text
    assert "channels_last" not in text and ".contiguous()" not in text
    seen = _text(last(replace(LAYOUT, main_detail={lb.DISPATCH: "Tensor.contiguous"})))
    assert "channels_last" in seen and ".contiguous()" in seen and "torch.profiler" not in seen


def test_contention_remedies_name_the_tenants_and_the_quota():
    tenant = last(replace(HEALTHY, tenants=((4242, "other_train.py", 40.0),), our_sm_util=55.0))
    assert "other_train.py (pid 4242)" in _text(tenant)
    quota = last(replace(DECODE, cg_throttled=0.35, cg_quota=3.0, workers=6))
    assert "3.0 cores" in _text(quota) and "fewer DataLoader workers than the 6 alive now" in _text(quota)
    thermal = last(replace(HEALTHY, throttle=(("hw_thermal_slowdown", 0.3),)))
    assert "cooling" in _text(thermal) and "hw_thermal_slowdown" in _text(thermal)
    # Nothing a verdict sees carries the host's NUMA layout: no numactl beside another GPU tenant (review 36).
    assert "numactl" not in _text(tenant) and "numactl" not in _text(quota) and "numactl" not in _text(thermal)


def test_healthy_remedies_suggest_tensor_cores_only_when_they_idle():
    assert "TF32" not in _text(last(HEALTHY))  # tensor 94 % on the bf16 signature


@pytest.mark.parametrize("wait", [0.3, 0.6, 0.85])
def test_input_bound_speedup_follows_the_measured_data_wait(wait):
    knobs = replace(DECODE, main_labels={lb.DATA_WAIT: wait, lb.DISPATCH: 1 - wait}, main_rate=20)
    verdict = last(knobs)
    measured = _evidence(verdict, v.DECODE, "data_wait").value
    assert verdict.speedup == pytest.approx(1 / (1 - measured), abs=0.1)


def test_speedups_grow_with_the_loss_and_stay_none_where_there_is_nothing_to_gain():
    light = last(replace(DECODE, main_labels={lb.DATA_WAIT: 0.3, lb.DISPATCH: 0.7}, main_rate=20))
    heavy = last(replace(DECODE, main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1}, main_rate=20))
    assert 1.0 < light.speedup < heavy.speedup
    launch = last(LAUNCH)
    busy = _evidence(launch, v.LAUNCH, "gpu_active").value
    assert launch.speedup == pytest.approx(1 / busy, abs=0.2)  # the GPU could have work all the time
    assert last(HEALTHY).speedup is None
    assert last(LAYOUT).speedup is None  # memory-bound may be inherent: no promise


def test_sentences_carry_the_numbers():
    decode = last(replace(DECODE, main_rate=20))
    wait = _evidence(decode, v.DECODE, "data_wait").value
    assert f"{wait * 100:.0f} %" in decode.sentence and "4 DataLoader workers" in decode.sentence
    healthy = last(HEALTHY)
    assert "SMs 97 %" in healthy.sentence and "tensor cores 94 %" in healthy.sentence


def test_one_dataloader_worker_reads_as_one():
    from gpuwatch.diagnosis.sentence import _workers

    assert _workers({"workers": 1.0}, "compute", "computes") == "1 DataLoader worker computes"
    assert _workers({"workers": 4.0}, "compute", "computes") == "4 DataLoader workers compute"


def test_workers_that_came_during_the_window_are_never_said_as_none():
    """The count is a mean over the window: workers that started in its last ticks read 0.4, which
    said "the 0 DataLoader workers compute (0.99 core CPU each ...)" in the demo's switch to decode."""
    from gpuwatch.diagnosis.sentence import _workers

    assert _workers({"workers": 0.4}, "compute", "computes") == "1 DataLoader worker computes"
    assert _workers({"workers": 2.4}, "compute", "computes") == "2 DataLoader workers compute"


def test_workers_that_leave_cpu_idle_are_not_said_to_fill_it():
    """Trial 24's sharded IterableDataset on 2 CPUs: one worker at 0.99 core, the other at 0.22, the
    host 66 % busy, the main thread waiting: "The 2 workers already fill the 2 usable CPUs" said what
    the readings deny. Uneven workers are said as such, with the idle CPU."""
    from dataclasses import replace

    from gpuwatch.model import stacks as lb
    from gpuwatch.model import verdict as v
    from tests.test_diagnosis_frames import Knobs, build, run

    k = Knobs(gpu=None, cpu_count=2, usable=2, workers=2, main_cpu=0.12, worker_cpu=0.6,
              main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1}, worker_labels={lb.W_BUSY: 1.0})
    frames = build(k, 20)
    uneven = []
    for f in frames:  # the same total, split 0.99 / 0.21 between the two workers
        w0, w1 = f.procs.by_role("worker")
        procs = (f.procs.processes[0], replace(w0, cpu_pct=99.0), replace(w1, cpu_pct=21.0))
        uneven.append(replace(f, procs=replace(f.procs, processes=procs)))
    verdict = run(uneven)[-1]
    assert verdict.stage == v.DECODE, verdict.sentence
    said = " ".join(verdict.remedies)
    assert "already full" not in said, said
    assert "Even out the workers' work: the busiest uses 0.99 core, the least busy 0.21 core" in said, said
    # the same workers with the host full: they fill it, and that is said
    full = run([replace(f, host=replace(f.host, cpu_pct=97.0)) for f in uneven])[-1]
    said = " ".join(full.remedies)
    assert ("The 2 usable CPUs are already full (the 2 workers use 1.20 cores, the training process and any "
            "other processes the rest)") in said, said



def _two_loaders(cpus: int, per_set: int, busy: float, uneven: bool = False):
    """Frames of a job with two loaders of ``per_set`` workers each, forked a second apart: the first
    loader's workers at ``busy`` core (``uneven``: its second half at half that), the second's idle
    (0.05 core, waiting for an index)."""
    from dataclasses import replace

    from gpuwatch.model import stacks as lb
    from tests.test_diagnosis_frames import Knobs, build

    k = Knobs(gpu=None, cpu_count=cpus, usable=cpus, workers=2 * per_set, main_cpu=0.12, worker_cpu=busy,
              main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1}, worker_labels={lb.W_BUSY: 1.0},
              host_cpu=100 * (0.22 + per_set * (busy * (0.75 if uneven else 1.0) + 0.05)) / cpus)
    frames = []
    for f in build(k, 20):
        main, *ws = f.procs.processes
        ws = [replace(w, cpu_pct=(100 * busy / (1 + (uneven and 2 * i >= per_set)) if i < per_set else 5.0),
                      started=100.0 + (i >= per_set))
              for i, w in enumerate(ws)]
        frames.append(replace(f, procs=replace(f.procs, processes=(main, *ws))))
    return frames


def test_two_loaders_workers_are_not_told_to_even_out_their_work():
    """Trial 33: a multitask job iterating two loaders was told "Even out the workers' work" from one
    loader's busy workers and the other's idle ones: num_workers is set per loader, so uneven CPU
    across sets is said as such, and "raise num_workers" names the loader whose workers are busy. The
    workers' CPU leaves the idle set out: averaged in, it halves the working set's."""
    from gpuwatch.model import verdict as v
    from tests.test_diagnosis_frames import run

    verdict = run(_two_loaders(4, 4, 0.9, uneven=True))[-1]
    assert verdict.stage == v.DECODE, verdict.sentence
    assert "compute (0.68 core CPU each in the sets at work while it waits" in verdict.sentence, verdict.sentence
    said = " ".join(verdict.remedies)
    assert "Even out the workers' work" not in said, said
    assert ("The busiest worker uses 0.90 core, the least busy 0.05 core, and 0.88 core of the 4 usable CPUs sat "
            "idle (workers alive: 2 sets of 4): num_workers is set per loader, so give the loader whose workers are "
            "busy more of them") in said, said
    verdict = run(_two_loaders(4, 2, 0.9))[-1]
    assert verdict.stage == v.DECODE, verdict.sentence
    said = " ".join(verdict.remedies)
    assert ("Raise num_workers of the loader whose workers are busy (num_workers is set per loader) from 2 toward "
            "3") in said, said

def test_a_cpu_bound_remedy_names_where_the_main_thread_computes_not_the_model():
    """Trial 24: numpy metrics on the main thread (argsort in an AUC, 94 % of the time) read "The model
    itself is the work: train on a GPU". The remedy names the frames and both readings of them."""
    from gpuwatch.model import stacks as lb
    from gpuwatch.model import verdict as v
    from tests.test_diagnosis_frames import Knobs, build, run

    k = Knobs(gpu=None, cpu_count=2, usable=2, workers=0, main_cpu=1.0, main_labels={lb.DISPATCH: 1.0},
              main_detail={lb.DISPATCH: "auc (metrics.py:12)"})
    verdict = run(build(k, 20))[-1]
    assert verdict.stage == v.CPU_BOUND, verdict.sentence
    said = verdict.remedies[0]
    assert said.startswith("The main thread's compute is the work (most often in auc (metrics.py:12)):"), said
    assert "The model itself" not in said and "run it less often, or move it off the main thread where a CPU is free" in said


def test_the_fill_remedy_agrees_with_the_sentence_read_in_the_waiting_ticks():
    """Ticks alternate between waiting (workers at 0.97 core each) and computing (workers idle): the
    sentence, read over the waiting ticks, says the workers fill the CPUs; a remedy read over the
    whole window said they "leave 0.80 core idle" (review)."""
    from dataclasses import replace

    from gpuwatch.model import stacks as lb
    from tests.test_diagnosis_frames import Knobs, build, run

    wait = Knobs(gpu=None, cpu_count=2, usable=2, workers=2, main_cpu=0.05, worker_cpu=0.97,
                 main_labels={lb.DATA_WAIT: 1.0}, worker_labels={lb.W_BUSY: 1.0},
                 worker_detail={lb.W_BUSY: "Image.convert"})
    step = replace(wait, main_cpu=1.0, worker_cpu=0.05, main_labels={lb.DISPATCH: 1.0}, worker_labels={lb.W_IDLE: 1.0})
    frames = []
    for i in range(30):
        frames += build(wait if i % 3 == 0 else step, 1, t0=1000.0 + i, seq0=i, seed=i)
    verdict = run(frames)[-1]
    said = " ".join(verdict.remedies)
    assert "The workers fill the 2 usable CPUs." in verdict.sentence, verdict.sentence
    assert "The 2 usable CPUs are already full" in said and "sat idle" not in said and "leave" not in said, said


def test_workers_queued_beside_idle_cores_are_told_to_grow():
    """Trial 27: one worker reading small files, queued for a CPU 16 % of the time (wake-up after each
    read) while ~1 core of 2 sat idle, was told "Raise num_workers above 1 only once the workers get a
    CPU ... more workers would queue as well"; a second worker ran the job 1.3x faster. With the
    cores full the queue is a shortage, and that advice stands."""
    base = replace(IO, workers=1, worker_cpu=0.45, cpu_count=2, usable=2, main_cpu=0.1, worker_run_delay=0.16)
    idle = run(build(base, 20))[-1]
    assert idle.stage == v.IO, idle.sentence
    said = " ".join(idle.remedies)
    assert "Raise num_workers above 1: workers waiting on reads use little CPU" in said, said
    full = run(build(replace(base, host_cpu=98.0, others=(("hog", 900, 1.3),)), 20))[-1]
    assert "Raise num_workers above 1 only once the workers get a CPU: they queue for a CPU" in " ".join(full.remedies)


def test_a_job_that_validates_half_its_time_is_told_so_beside_its_step():
    """Trial 27: a CPU job that spent 55-57 % of its time in evaluate() (every ~3 s) read "The main thread
    computes the step itself" and "main thread computing the step: 100 %", its one remedy about the
    model, beside "Validation passes take 58 % of the time"."""
    from gpuwatch.diagnosis.stages import CPU_COMPUTE
    from tests.test_diagnosis_field import VALIDATE

    train = Knobs(gpu=None, cpu_count=2, usable=2, workers=2, worker_cpu=0.02, main_cpu=0.95,
                  main_labels={lb.DISPATCH: 0.5, lb.BACKWARD: 0.3, lb.OPTIMIZER: 0.2})
    val = replace(train, main_labels={lb.DISPATCH: 1.0}, main_frames=VALIDATE)
    frames = build(train, 2)
    for i in range(14):
        frames = then(frames, val if i % 2 == 0 else train, 2 if i % 2 == 0 else 1, seed=i)
    verdict = run(frames)[-1]
    assert verdict.stage == CPU_COMPUTE, verdict.sentence
    assert "computes the step and its validation passes itself" in verdict.sentence, verdict.sentence
    said = [r for r in verdict.remedies if r.startswith("Validation passes take")]
    assert said and "validate less often or on part of the validation set" in said[0], verdict.remedies
    # a job with no validation pass is not told about one
    plain = run(build(train, 20))[-1]
    assert "validation" not in plain.sentence and not any("Validation" in r for r in plain.remedies)


def test_the_decoder_advice_quotes_no_hottest_frame_that_is_no_decoder():
    """Review 28: H100 run 50's ImageFolder job read "use a faster decoder ... (the workers spend their
    time in collate.default_collate)": the hottest frame is no reason for a decoder. The fix's own
    figure says the decoding share where there is one."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames

    path = "bench/results/2026-12-06-h100/run50/accuracy/imagefolder_epochs.jsonl.gz"
    got = from_frames(load_frames(path))
    said = [t for x in got.verdicts for t in x.remedies if "faster decoder" in t]
    assert said and not [t for t in said if "collate" in t], said
    assert any("collate.default_collate" in x.sentence for x in got.verdicts)  # it was the hottest frame
    r = build_report(got, NOT_RECORDED, "replay", path=path)
    assert not [x.text for x in r.remedies if "decoder" in x.text and "collate" in x.text]


def test_an_inline_decoder_advice_says_the_decoding_share_of_the_loading_samples():
    """tests/data/cpu_field/folder_inline.jsonl.gz (trial 28, num_workers=0): the advice said "(the main
    thread spends its loading time in ImageFile.load)", read as all of it; resize, jitter and rotation
    cost as much. It now says how much of the loading was seen decoding."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames

    got = from_frames(load_frames("tests/data/cpu_field/folder_inline.jsonl.gz"))
    said = [t for x in got.verdicts for t in x.remedies if t.startswith("Use a faster decoder")]
    assert said  # once the samples settle that the loading decodes (before, said as a condition)
    for text in said:
        m = re.search(r"Use a faster decoder \(decoding is (\d+) of the main thread's last (\d+) loading samples\): "
                      r"for JPEG files", text)
        assert m and 0 < int(m.group(1)) < int(m.group(2)), text
    assert not [x.sentence for x in got.verdicts if re.search(r"of the time in [A-Z]", x.sentence)]
    assert any("of the time (most often in " in x.sentence for x in got.verdicts)


def test_the_jpeg_decoder_is_offered_for_jpeg_files_only():
    """Trial 33: a job of PNG files was told "Use a faster decoder: torchvision.io.decode_jpeg". The
    stacks show PIL's ImageFile.load, which decodes every format, so the JPEG decoder is offered for
    JPEG files by name, beside what helps PNG (store as JPEG, or pre-decode)."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames

    got = from_frames(load_frames("tests/data/cpu_field/image_workers.jsonl.gz"))
    said = [t for x in got.verdicts for t in x.remedies if "decode_jpeg" in t]
    assert said
    for text in said:
        assert "for JPEG files, torchvision.io.decode_jpeg" in text, text
        assert "PNG decodes several times slower than JPEG in most libraries: pre-decode it offline" in text, text


def test_waits_inside_validation_passes_are_said_to_be_the_validation_loaders():
    """Trial 29: a Lightning job's 25 % data wait was 23 points the validation loader's (its training
    loader waited 1.9 % of the time), and the remedies only spoke of the training loader. Waits that
    fall inside an evaluation pass are said as the validation loader's, and its remedies are pointed
    at that loader; waits outside one are not."""
    from tests.test_diagnosis_field import VALIDATE

    val = replace(DECODE, main_frames=VALIDATE)
    verdict = last(val, 12)
    assert verdict.stage == v.DECODE, verdict.sentence
    said = re.search(r"Most of these waits are the validation loader's: (\d+) of the (\d+) samples waiting", verdict.sentence)
    assert said and said[1] == said[2], verdict.sentence  # every wait of this job is inside a pass
    assert verdict.remedies[0].startswith("Most waits are for the validation loader's batches"), verdict.remedies
    assert "give the validation DataLoader workers of its own" in verdict.remedies[0]
    assert "the training loader's fixes below leave those waits as they are" in verdict.remedies[0]
    # the training loader's estimate leaves the passes' waits as they are, and says so
    assert any("validation pass in them" in r and "kept as they are" in r for r in verdict.remedies[1:]), verdict.remedies
    plain = last(DECODE, 12)
    assert plain.stage == v.DECODE
    assert "validation" not in plain.sentence and not any("validation loader" in r for r in plain.remedies)
    # the flag the collector sets from the whole stack counts where the kept frames name no pass
    flagged = build(DECODE, 12)
    flagged = [replace(f, stacks=replace(f.stacks, threads=tuple(
        replace(t, evaluating=t.role == lb.ROLE_MAIN_THREAD) for t in f.stacks.threads))) for f in flagged]
    assert "Most of these waits are the validation loader's" in run(flagged)[-1].sentence


def test_an_unmeasured_input_verdict_says_what_the_workers_samples_showed():
    """An Unknown verdict the workers' CPU decided said "with no stack sample of them at work" beside an
    evidence row of 100 % of their samples computing: it now says what the samples showed, from the
    verdict's own facts, and a share of fewer than MIN_WORKER_SAMPLES as a count (review 38: "100 %"
    of one sample)."""
    from gpuwatch.diagnosis.sentence import _worker_samples

    def said(n: int, busy: float | None) -> str:
        return _worker_samples({"worker_n": n, "worker_busy": busy})

    assert said(0, None) == "with no recent stack sample of them"
    assert said(12, 0.0) == "with no stack sample of them at work (12 samples)"
    assert said(1, 1.0) == "with 1 of their 1 stack sample at work, too few to tell what they do"
    assert said(12, 0.25) == "with only 25 % of their 12 stack samples at work"
    assert said(12, 1.0) == ("with 100 % of their 12 stack samples in their own code, yet at that CPU they run "
                             "only part of the time")


def test_outside_processes_named_add_up_to_no_more_than_the_total_beside_them():
    """Trial 34: "Processes outside the job use 0.49 core of 2 CPUs: python (pid 15953, 0.58 core),
    python (pid 8811, 0.40 core)": the total is the middle of the window's readings, the names the
    latest sample's. Where the latest sample holds more, it is said as the latest sample's, with its sum."""
    from gpuwatch.diagnosis.remedies import _outsiders

    rose = {"others_cpu": 0.49, "others": (("python", 15953, 0.58), ("python", 8811, 0.40))}
    assert _outsiders(rose) == (" (the middle of the window's readings; in the latest sample python (pid 15953, "
                                "0.58 core), python (pid 8811, 0.40 core), 0.98 core between them)")
    steady = {"others_cpu": 1.0, "others": (("python", 15953, 0.58), ("python", 8811, 0.40))}
    assert _outsiders(steady) == ": python (pid 15953, 0.58 core), python (pid 8811, 0.40 core)"
    few = {"others_cpu": 1.0, "others": (("pip", 1, 0.3),)}
    assert _outsiders(few).endswith("; the rest by processes too short-lived or small to list")
