"""Unit tests of the TUI's pure helpers: plots, number formats, recording names, hot frames."""

from __future__ import annotations

import dataclasses
import time

from gpuwatch.model import Unsupported
from gpuwatch.model.stacks import StackSample
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import hot_frames, label_shares, stack_samples, threads
from gpuwatch.tui.plot import MISSING, bar, plot
from gpuwatch.tui.record import open_recording, recording_name
from tests.test_tui_fixtures import synthetic_frame, synthetic_frames


def test_bar_fills_in_eighths_and_clamps():
    assert bar(0.5, 4) == "██  "
    assert bar(1 / 32, 4) == "▏   "
    assert bar(2.0, 3) == "███"
    assert bar(-1, 3) == "   "
    assert bar(None, 3) == MISSING * 3


def test_plot_is_fixed_scale_right_aligned_and_marks_missing():
    rows = plot([0, 50, 100, None], width=6, height=1, top=100)
    assert rows == ["  " + " ▄█" + MISSING]
    tall = plot([100, 25], width=2, height=2, top=100)
    assert tall == ["█ ", "█▄"]  # 25 % of two rows is half the bottom row
    assert plot([0.1], width=1, top=100) == ["▁"]  # any activity stays visible


def test_formats_say_na_for_unsupported():
    assert fmt.pct(Unsupported("x")) == "N/A"
    assert fmt.pct(42.4) == "42 %"
    assert fmt.size(38.5 * 1024**3) == "38.5 GiB"
    assert fmt.rate(55.2e9) == "55.2 GB/s"
    assert fmt.rate(None) == "N/A"
    assert fmt.duration(3723) == "1:02:03"
    assert fmt.duration(75) == "01:15"
    assert fmt.ellipsize("abcdef", 4) == "abc…"


def test_recording_names_never_overwrite(tmp_path):
    when = time.mktime((2026, 12, 2, 13, 5, 9, 0, 0, -1))
    assert recording_name(when) == "gpuwatch-20261202-130509.jsonl"
    a = open_recording(str(tmp_path), when)
    b = open_recording(str(tmp_path), when)
    a.close()
    b.close()
    assert a.path.endswith("gpuwatch-20261202-130509.jsonl")
    assert b.path.endswith("gpuwatch-20261202-130509-2.jsonl")


def test_hot_frames_count_own_and_total_per_thread_sample():
    samples = stack_samples(synthetic_frames(4))
    assert len(samples) == 4
    workers = threads(samples, lambda t: t.role == "worker")
    assert len(workers) == 8  # two workers, four samples
    hot = hot_frames(workers, limit=2)
    assert hot[0].frame == "convert (PIL/Image.py:995)" and hot[0].own == 8 and hot[0].total == 8
    assert hot[1].own == 0 and hot[1].total == 8
    assert label_shares(workers) == [("busy", 1.0)]


def test_a_stalled_stack_collector_is_counted_once():
    f0 = synthetic_frame(0)
    same = [f0, f0.__class__(**{**{k: getattr(f0, k) for k in f0.__slots__}, "seq": 2})]
    assert len(stack_samples(same)) == 1
    assert isinstance(same[1].stacks, StackSample)


def test_evidence_value_against_threshold_fits_the_value_column():
    from gpuwatch.model.verdict import Evidence
    from gpuwatch.tui.panels.metric_parts import VALUE_W
    from gpuwatch.tui.screens.stage import _against

    def item(value: float, op: str, th: float, unit: str = "%") -> Evidence:
        return Evidence("io", "x", value, th, op, True, "", "x", unit)

    assert _against(item(0.9, ">=", 0.15)) == "90 % ≥ 15 %"  # in the item's unit, as the evidence says it
    assert _against(item(0.00145, "<", 0.95, "cores")) == "0.00 core"  # the pair is too wide: the reading alone
    assert _against(item(0.0375, ">=", 0.0375)) == "4 % ≥ 3.8 %" and len("4 % ≥ 3.8 %") <= VALUE_W
    # Not met, the pair says so: "99 % < 90 %" (the Disk drill-down's GPU kernel-active time on a
    # GPU-bound replay) read as a false statement.
    unmet = dataclasses.replace(item(0.99, "<", 0.90), supports=False)
    assert _against(unmet) == "99 % ≮ 90 %"
    assert _against(dataclasses.replace(item(0.0, ">=", 0.075), supports=False)) == "0 % ≱ 7.5 %"
    # A reading that rounds onto the cut's other side keeps the decimals that place it: "22 % ≮ 22.2 %"
    # (main thread waiting for a batch, H200 replays) read as a false statement.
    assert _against(dataclasses.replace(item(0.0226, "<", 0.0225), supports=False)) == "2.3 % ≮ 2.2 %"
    assert _against(dataclasses.replace(item(0.2226, "<", 2 / 9), supports=False)) == "22.3 %"  # too wide
    assert _against(item(0.0196, "<", 0.02)) == "1.96 % < 2 %"


def test_process_order_sorts_filters_and_draws_the_tree():
    """htop's sort, filter and tree over SYNTHETIC processes (tui/proc_order.py)."""
    import dataclasses

    from gpuwatch.tui.proc_order import order
    from tests.test_tui_fixtures import synthetic_frame

    main, w1, w2 = synthetic_frame(0).procs.processes
    launcher = dataclasses.replace(main, pid=4200, ppid=1, role="launcher")
    helper = dataclasses.replace(w2, pid=4260, ppid=w2.pid, role="other", cpu_pct=1.0)
    procs = (launcher, main, w1, w2, helper)
    assert [x.proc.pid for x in order(procs, None, False)] == [4200, 4242, 4250, 4251, 4260]
    assert [x.proc.pid for x in order(procs, "cpu", False)][:2] == [4250, 4251]  # 98 %, PID breaks the tie
    tree = order(procs, None, True)
    assert [(x.proc.pid, x.prefix) for x in tree] == [
        (4200, ""), (4242, "└─"), (4250, "  ├─"), (4251, "  └─"), (4260, "    └─")]
    kept = order(procs, None, True, keep={4260})  # a match keeps its ancestors, to show where it lives
    assert [x.proc.pid for x in kept] == [4200, 4242, 4251, 4260]
    assert [x.proc.pid for x in order(procs, None, False, keep={4260})] == [4260]


def test_views_read_a_recorded_worker_sleep_as_a_wait_like_the_diagnosis():
    """Recordings made before the "wait" label call a worker asleep in __getitem__ "io": the
    processes table and the stacks shares read it as the diagnosis and the report do (a wait), and
    a worker in a function named for reading stays a read."""
    from gpuwatch.model.stacks import ThreadStack
    from gpuwatch.tui.hot import label_shares
    from gpuwatch.tui.panels.processes import thread_summary

    def worker(detail: str) -> ThreadStack:
        return ThreadStack(pid=7, tid=7, role="worker", rank=None, thread_name="pt_data_worker", label="io",
                           detail=detail, active=False, owns_gil=False, frames=(f"{detail} (x.py:1)",))

    asleep, reading = worker("time.sleep"), worker("Dataset.read_shard")
    assert label_shares([asleep, asleep, reading]) == [("wait", 2 / 3), ("io", 1 / 3)]
    assert thread_summary(asleep).startswith("waiting, no read in its stack: ")
    assert thread_summary(reading).startswith("reading: ")


def test_an_idle_worker_reads_as_idle_not_as_its_helper_thread():
    """A persistent DataLoader worker between epochs, as sampled on the H200 (Lightning, persistent
    workers): its resource-sharer thread in socket.accept came first and the table said 'outside
    training: socket.accept'; the worker's own thread says it is idle."""
    from gpuwatch.model.stacks import StackSample, ThreadStack
    from gpuwatch.tui.panels.processes import hottest

    def th(role, label, name, detail, active=False):
        return ThreadStack(pid=9, tid=hash(name) % 1000, role=role, rank=None, thread_name=name, label=label,
                           detail=detail, active=active, owns_gil=False, frames=(f"{detail} (x.py:1)",))

    sample = StackSample(t=1.0, threads=(
        th("other", "other", "Thread-1 (_serve)", "socket.accept", active=True),
        th("other", "other", "QueueFeederThread", "Condition.wait"),
        th("worker", "idle", "MainThread", "Queue.get"),
    ), dumps=())
    assert hottest(sample, 9) == "idle: Queue.get"


def test_each_process_hottest_frame_from_one_pass_is_the_one_its_own_threads_give():
    """hottest_by_pid walks a sample once for all processes; for every process of every sample
    of an H200 recording it names what that process's own threads give: a training or worker
    thread first, else one on the CPU, else the first; a process not sampled: nothing."""
    from gpuwatch.model.stacks import StackSample
    from gpuwatch.replay import load_frames
    from gpuwatch.tui.panels.processes import hottest_by_pid, thread_summary

    def own(sample, pid):
        threads = [t for t in sample.threads if t.pid == pid]
        if not threads:
            return ""
        pick = next((t for t in threads if t.role in ("main", "worker")), None) or next(
            (t for t in threads if t.active), threads[0])
        return thread_summary(pick)

    seen = 0
    for frame in load_frames("tests/data/h200/run25_lightning_persistent.jsonl.gz"):
        if not isinstance(frame.stacks, StackSample):
            assert hottest_by_pid(frame.stacks) is None
            continue
        by_pid = hottest_by_pid(frame.stacks)
        for pid in {t.pid for t in frame.stacks.threads} | {p.pid for p in frame.procs.processes}:
            assert by_pid.get(pid, "") == own(frame.stacks, pid)
            seen += 1
    assert seen > 100


def test_watched_time_counts_from_the_first_frame_not_the_history_window():
    """An hour's watch keeps 15 minutes of frames: the header said 'watched 14:59'. It counts from
    the watch's first frame, with the latest frame's tick, as the report's covered time does."""
    import dataclasses

    from gpuwatch.tui.view import View
    from tests.test_tui_fixtures import synthetic_frames, synthetic_verdict

    frames = [dataclasses.replace(f, t=2700.0 + i) for i, f in enumerate(synthetic_frames(900))]
    verdicts = [synthetic_verdict(f) for f in frames]
    view = View(frames[-1], verdicts[-1], tuple(frames), tuple(verdicts), "PID 1", first_t=0.0)
    assert view.watched_s == 3600.0
    ten = frames[:10]
    assert View(ten[-1], verdicts[9], tuple(ten), tuple(verdicts[:10]), "PID 1").watched_s == 10.0


def test_a_main_thread_in_unlabelled_code_is_not_said_to_be_outside_training():
    """The label for main-thread samples that match no known step named them 'outside training',
    beside frames such as the H200 ImageFolder job's own training step and Lightning's epoch loop."""
    from gpuwatch.model.stacks import ThreadStack
    from gpuwatch.tui.panels.processes import thread_summary

    step = ThreadStack(pid=1, tid=1, role="main", rank=None, thread_name="MainThread", label="other",
                       detail="ImageFolderJob._step (bench/scenarios/imagefolder.py:125)", active=True, owns_gil=True,
                       frames=("ImageFolderJob._step (bench/scenarios/imagefolder.py:125)",))
    said = thread_summary(step)
    assert "outside" not in said and said.startswith("other work: ImageFolderJob._step")


def test_role_label_counts_summed_give_each_roles_label_shares():
    """The activity panel counts each sample once per role (role_label_counts) and sums the window;
    that must read as label_shares over the role's threads, "other" threads only while active.
    Every window of an H200 recording (8 workers, pin thread, helper threads) and the synthetic one."""
    from collections import Counter

    from gpuwatch.diagnosis.stack_counts import shares
    from gpuwatch.replay import load_frames
    from gpuwatch.tui.hot import role_label_counts
    from gpuwatch.tui.roles import ROLES

    for frames in (list(load_frames("tests/data/h200/run25_lightning_persistent.jsonl.gz")), synthetic_frames(12)):
        for end in range(1, len(frames) + 1):
            samples = stack_samples(frames[:end])
            counts = [role_label_counts(s) for s in samples]
            for role, _ in ROLES:
                mine = threads(samples, lambda t, r=role: t.role == r and (t.active or r != "other"))
                summed: Counter[str] = Counter()
                for c in counts:
                    summed.update(c.get(role, ()))
                assert shares(summed) == label_shares(mine)


def test_window_counts_kept_as_the_window_moves_equal_the_window_summed_again():
    """WindowCounts adds the samples that came into the window and takes off those that left: at
    every frame of two H200 recordings one after the other (the window moving over 30 frames) and
    of the synthetic one, each role's counts equal the window's role_label_counts summed afresh,
    with no label left at 0 (a 0 would still be listed by shares); a window that jumps (another
    rank, a seek) too."""
    from collections import Counter

    from gpuwatch.diagnosis.stack_counts import stack_samples as all_samples
    from gpuwatch.replay import load_frames
    from gpuwatch.tui.hot import STACK_WINDOW, WindowCounts, role_label_counts

    recorded = [*load_frames("tests/data/h200/field_lightning_persistent.jsonl.gz"),  # two runs: 60 samples
                *load_frames("tests/data/h200/run25_lightning_persistent.jsonl.gz")]
    for frames in (recorded, synthetic_frames(12)):
        kept = WindowCounts()
        ends = [*range(1, len(frames) + 1), len(frames) // 2, 1, len(frames)]  # then jumps back and forth
        for end in ends:
            samples = stack_samples(frames[max(0, end - STACK_WINDOW):end])
            summed: dict[str, Counter[str]] = {}
            for s in samples:
                for role, counts in role_label_counts(s).items():
                    summed.setdefault(role, Counter()).update(counts)
            totals = kept.update(samples)
            assert {r: c for r, c in totals.items() if c} == summed
            assert all(n > 0 for c in totals.values() for n in c.values())
    assert len(all_samples(recorded)) > len(stack_samples(recorded))  # samples did leave the window


def test_window_counts_count_again_a_rank_sample_that_shares_the_whole_jobs_time():
    """A rank's frames (ranks.frame_for_rank) carry the job's stack sample cut down to that rank's
    threads, with the job's sample time: after the rank key, the same times stand for other
    samples, and each role's counts are those of the rank's own threads (a 2-rank DDP recording)."""
    from collections import Counter

    from gpuwatch.ranks import frame_for_rank
    from gpuwatch.replay import load_frames
    from gpuwatch.tui.hot import WindowCounts, role_label_counts

    def summed(samples) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for s in samples:
            for role, counts in role_label_counts(s).items():
                out.setdefault(role, Counter()).update(counts)
        return {r: +c for r, c in out.items() if +c}

    frames = load_frames("tests/data/ddp_cpu_slow_rank1.jsonl")
    kept = WindowCounts()
    views = [None, 0, 1, None]  # the rank key's cycle: all ranks, rank 0, rank 1, all again
    seen = []
    for rank in views:
        samples = stack_samples([frame_for_rank(f, rank) for f in frames])
        totals = {r: c for r, c in kept.update(samples).items() if c}
        assert totals == summed(samples), rank
        seen.append(totals)
    assert seen[1] != seen[0] != seen[2]  # the ranks' threads do differ from the job's
