"""Trial 36 (2026-12-07, the 2-vCPU VM, no GPU): real CPU jobs recorded with their own clocks
(tests/data/cpu_field/README.md says what each is).

t36_http_fetch: two DataLoader workers fetch each sample over HTTP (urllib, a local server with
20-45 ms latency a request); the job waited for batches 78-82 % of each 10 s by its own clock, and
6 workers ran it 2.7x faster. It was told "Input-bound on storage ... disk vda 0 % busy. Data:
/tmp/trial36 on ext4" with "copy a shard to /dev/shm", every local storage sign at zero.
"""

from __future__ import annotations

import json

from gpuwatch.analysis import Analysis
from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

DATA = "tests/data/cpu_field"
HTTP = f"{DATA}/t36_http_fetch.jsonl.gz"


def _clock(name: str) -> list[dict]:
    with open(f"{DATA}/{name}.clock.txt") as f:
        return [r for r in map(json.loads, f) if "share" in r]


def test_workers_fetching_over_http_are_said_to_wait_on_a_server_not_a_local_disk():
    waits = [r["share"]["wait"] for r in _clock("t36_http_fetch")]
    assert min(waits) > 0.7  # the job's own clock: a data wait throughout
    frames = load_frames(HTTP)
    a = Analysis()
    verdicts = [a.update(f) for f in frames]
    named = [x for x in verdicts if x.stage == v.IO]
    assert len(named) > len(verdicts) // 2
    for x in named:
        assert x.sentence.startswith("Input-bound on loading from a server or object store"), x.sentence
        assert "on ext4" not in x.sentence and "Data:" not in x.sentence
        said = " ".join(x.remedies)
        assert "/dev/shm and point the loader" not in said and "pack them into large shards" not in said
        assert "The data comes from a server over a socket" in said
    last = named[-1]
    assert "wait on socket reads" in last.sentence and "in SocketIO.readinto)" in last.sentence and "disk vda" not in last.sentence
    assert any(r.startswith("Raise num_workers above 2: workers waiting on socket reads") for r in last.remedies)
    assert any("the workers wait on a server (worker stacks in socket reads" in e.text for e in last.evidence)
    md = render_markdown(build_report(from_frames(frames), NOT_RECORDED, "replay", path=HTTP))
    head = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "Input-bound on loading from a server or object store" in head and "on ext4" not in head


def test_a_network_read_is_told_by_its_frames_or_by_its_function_in_older_recordings():
    assert lb.on_network("fetch_item" + lb.NETWORK_DETAIL)
    assert lb.on_network("SocketIO.readinto") and lb.on_network("HTTPResponse.read")
    assert not lb.on_network("read_uncached") and not lb.on_network("ImageFile.load")
    # a worker off the CPU in a function not named for reading, under socket frames, still reads
    assert lb.activity(lb.ROLE_WORKER, lb.W_IO, "fetch_item" + lb.NETWORK_DETAIL) == lb.W_IO


def test_a_job_pinned_to_one_cpu_is_told_what_of_the_outside_load_can_reach_it():
    """t36_taskset_cnn: `taskset -c 0` on the 2-CPU host, beside another session's tests. The outside
    load is the host's: "1.62 cores of 1 CPU" said more than one CPU can hold; at least what cannot
    fit on the other CPU runs on the job's (1.62 - 1 = 0.62 core)."""
    frames = load_frames(f"{DATA}/t36_taskset_cnn.jsonl.gz")
    assert {f.procs.usable_cpus for f in frames if f.procs} == {1} and frames[-1].host.cpu_count == 2
    a = Analysis()
    verdicts = [a.update(f) for f in frames]
    held = [x for x in verdicts if x.stage == v.CONTENTION]
    assert held
    for x in held:
        assert " of 1 CPU" not in x.sentence, x.sentence
        assert "of the host's 2 CPUs, at least" in x.sentence and "on the 1 CPU the job may run on" in x.sentence
    said = " ".join(held[-1].remedies)
    assert "widen the job's affinity mask" in said and "give the job its own cores (taskset)" not in said


def test_a_pinned_decode_job_is_told_of_the_host_cpu_its_mask_leaves_idle():
    """t36_taskset_prep: 3 decoding workers pinned to 1 of 2 CPUs, the host about half idle: no
    Contention from 0.22 core outside (its first 16 ticks had said so); CPU prep, with the mask first
    among the remedies (without the pin the job ran 2.06x faster, by the tester's A/B)."""
    frames = load_frames(f"{DATA}/t36_taskset_prep.jsonl.gz")
    waits = [r["share"]["wait"] for r in _clock("t36_taskset_prep")]
    assert min(waits) > 0.8
    a = Analysis()
    verdicts = [a.update(f) for f in frames]
    assert not any(x.stage == v.CONTENTION for x in verdicts)
    last = verdicts[-1]
    assert last.stage == v.DECODE, last.sentence
    assert last.remedies[0].startswith("Let the job use more of the host's CPUs: its affinity mask (taskset, the "
                                       "container's cpuset) allows 1 CPU of the host's 2"), last.remedies[0]
    assert any(r.startswith("The 1 usable CPU is already full") for r in last.remedies)


def test_two_loaders_re_created_in_turn_are_not_read_as_one_pace_with_starts_missed():
    """t36_lightning_epochs: a Lightning job whose training and validation loaders (workers not
    persistent) start their sets 2 and 8-9 s apart in turn, each once an epoch of ~10 s. Their median
    gap made "every ~4.1 s (at least 11 times in 59 s)", 3 said missed, in the report's epoch section
    beside its headline's "at uneven intervals (10 times in 58 s)"."""
    path = f"{DATA}/t36_lightning_epochs.jsonl.gz"
    md = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    assert "re-created every" not in md and "at least 11 times" not in md
    section = md.split("## Epoch structure", 1)[1].split("\n## ", 1)[0]
    assert "re-created at uneven intervals (11 times in 59 s" in section, section


def test_batches_from_the_jobs_own_pool_leave_disk_and_cpu_prep_unjudged_beside_contention():
    """t36_pool: a ProcessPoolExecutor the job starts builds its batches (no DataLoader worker); with
    Contention shown, Disk and CPU prep read "ok" though the main thread waited on the pool's queue:
    nothing measured them ok."""
    a = Analysis()
    verdicts = [a.update(f) for f in load_frames(f"{DATA}/t36_pool.jsonl.gz")]
    shown = [x for x in verdicts if x.stage == v.CONTENTION]
    assert shown
    for x in shown[5:]:
        levels = dict(x.levels)
        # CPU prep is a warning where the pool's process computes flat out (its own evidence), else n/a
        assert levels[v.IO] == "n/a" and levels[v.DECODE] in ("n/a", "warning"), levels


def test_a_pool_of_the_jobs_own_making_the_batches_flat_out_is_named_with_what_was_seen():
    """t36_pool: a ProcessPoolExecutor's one process at ~1 core while the main thread waits on the
    queue it fills. Where Contention does not hold, CPU prep is named on that evidence, said as
    the job's own processes (not DataLoader workers, whose stacks gpuwatch samples)."""
    a = Analysis()
    verdicts = [a.update(f) for f in load_frames(f"{DATA}/t36_pool.jsonl.gz")]
    named = [x for x in verdicts if x.stage == v.DECODE]
    assert named
    x = named[-1]
    assert x.sentence.startswith("Input-bound on the job's own batch-making processes: the main thread waits for "
                                 "data"), x.sentence
    assert "with no DataLoader worker, while the job's 1 other process computes (0.98 core CPU)" in x.sentence
    assert dict(x.levels)[v.DECODE] == "bottleneck" and dict(x.levels)[v.IO] == "n/a"
    assert x.remedies[0].startswith("Give the pool that makes the batches more processes: 1 process at 0.98 core,")
    assert any(e.text == "the job's 1 other process (no DataLoader worker) uses 0.98 core CPU" for e in x.evidence)


def test_the_pools_idle_neighbours_do_not_dilute_its_cpu():
    """Review 41: an idle forkserver or resource tracker beside the pool's processes counted in their
    mean. The same recording with an idle process of the job's added to every sample."""
    from dataclasses import replace

    frames = []
    for f in load_frames(f"{DATA}/t36_pool.jsonl.gz"):
        if f.procs:
            helper = next((p for p in f.procs.processes if p.role == "other"), None)
            if helper is not None:
                idle = replace(helper, pid=helper.pid + 10_000, name="python", cmdline="resource_tracker",
                               cpu_pct=0.0, threads=())
                f = replace(f, procs=replace(f.procs, processes=f.procs.processes + (idle,)))
        frames.append(f)
    a = Analysis()
    named = [x for x in (a.update(f) for f in frames) if x.stage == v.DECODE]
    assert named and "while 1 of the job's 2 other processes computes (0.98 core CPU)" in named[-1].sentence, \
        named[-1].sentence if named else None


def test_the_storage_check_says_what_was_seen_of_where_the_data_is():
    """Review 41: beside "loading from a server or object store" the report's check passed "Data on
    local storage" on the working directory's disk; where no data file was seen open the working
    directory says nothing of where the data is."""
    from gpuwatch.report.checks_host import check_network_fs
    from gpuwatch.report.model import NOT_CHECKED, WARN

    got = check_network_fs(load_frames(HTTP), NOT_RECORDED)
    assert got.status == WARN and "socket reads: the data comes from a server or an object store" in got.reason, got
    cwd_only = check_network_fs(load_frames(f"{DATA}/t35_subproc.jsonl.gz"), NOT_RECORDED)
    assert cwd_only.status == NOT_CHECKED and cwd_only.reason.startswith("no data file was seen open"), cwd_only


def test_a_worker_sets_start_caught_in_two_samples_does_not_unseat_cpu_bound():
    """t36_lightning_epochs (review 44): a CPU-bound Lightning job whose clock puts 2-3 % of each 10 s
    in its epochs' first-batch waits (2-8 % with the other waits) read "Input-bound on starting workers: ... 33 % of the time (2 of
    its last 6 samples)" for 4 ticks, under CPU prep, where the CPU-bound verdict's own wider samples
    held 2 of 16. An input stage unseats CPU-bound only where the wait holds over those too."""
    starts = [r["share"].get("epoch_start_wait", 0.0) + r["share"].get("wait", 0.0)
              for r in _clock("t36_lightning_epochs")]
    assert max(starts) < 0.1  # the job's own clock: its data waits are a few percent
    a = Analysis()
    verdicts = [a.update(f) for f in load_frames(f"{DATA}/t36_lightning_epochs.jsonl.gz")]
    assert not [x for x in verdicts if x.stage in (v.IO, v.DECODE)]
    assert sum(x.stage == v.CPU_BOUND for x in verdicts) > len(verdicts) // 2
