"""The overhead benchmarks' tools: pty runner, phase schedule, step counter, process-tree sampler."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from bench import observe, overhead
from bench import self as self_bench
from bench.pty_run import normalise, run_piped, run_pty

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Draws like a TUI: escape sequences between the words, a cursor move instead of a space.
FAKE_TUI = textwrap.dedent("""
    import os, sys, time
    c, r = os.get_terminal_size(1)
    sys.stdout.write("\\x1b[?1049h\\x1b[2J\\x1b[1;1Hwaiting" + ("" if sys.stdout.isatty() else " no tty"))
    sys.stdout.flush()
    time.sleep(0.3)
    sys.stdout.write(f"\\x1b[1;1H\\x1b[1mPID\\x1b[0m\\x1b[1C4242 size {c}x{r}\\x1b]0;title\\x07")
    sys.stdout.flush()
    time.sleep(60)
""")


def test_normalise_drops_escapes_and_blanks():
    assert normalise(b"\x1b[1mPID\x1b[0m\x1b[3C 42\r\n\x1b]0;t\x07x\x1b(B") == b"PID42\nx"


def test_pty_runner_sees_the_marker_at_the_terminal_size():
    run = run_pty([sys.executable, "-c", FAKE_TUI], cols=123, rows=45, marker="PID 4242 size 123x45")
    try:
        s = run.wait_marker(20)
        assert s is not None and s >= 0.3  # the marker came with the second draw, not the first
        assert run.alive()
    finally:
        rc = run.stop(grace=2)
    assert rc is not None and rc != 0  # stopped by SIGTERM, not finished
    assert not run.alive()


def test_pty_runner_gives_up_when_the_program_exits_without_the_marker():
    run = run_pty([sys.executable, "-c", "print('hello')"], marker="never shown")
    try:
        t0 = time.monotonic()
        assert run.wait_marker(30) is None
        assert time.monotonic() - t0 < 15  # did not sit out the whole timeout
        assert "hello" in run.tail()
    finally:
        run.stop(grace=1)


def test_piped_runner_matches_a_line_start_and_re_escaped_markers():
    code = "import time; print('# gpu pwr'); print('    0    71'); print('PID 7 x', flush=True); time.sleep(60)"
    for marker in (r"(?m)^\d", re.escape("PID 7 x")):
        run = run_piped([sys.executable, "-c", code], marker)
        try:
            assert run.wait_marker(20) is not None, marker
        finally:
            run.stop(grace=1)


def test_stop_ends_the_whole_process_group():
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print('up', flush=True)\ntime.sleep(60)")
    run = run_piped([sys.executable, "-c", code], "up")
    try:
        assert run.wait_marker(20) is not None
        kids = psutil.Process(run.pid).children(recursive=True)
        assert kids
    finally:
        run.stop(grace=2)
    gone, alive = psutil.wait_procs(kids, timeout=5)
    assert not alive


def test_schedule_puts_every_observer_between_two_alone_phases():
    phases = observe.schedule(["tui", "json"], rounds=2)
    assert phases == [None, "tui", None, "json", None, "tui", None, "json", None]
    rates = [100.0, 90.0, 110.0]
    assert observe.neighbours_ratio(rates, 1) == pytest.approx(90 / 105)


def test_overhead_summary_compares_each_phase_with_its_neighbours():
    obs = [observe.Observer("a", ["a"], False, "x"), observe.Observer("b", ["b"], False, "x")]
    rates = [100, 95, 100, 100, 110, 99, 90, 90, 100]  # alone a alone b alone a alone b alone
    records = [{"observer": n, "steps_per_s": r, "attach_s": 0.5 if n else None, "observer_alive": True}
               for n, r in zip(observe.schedule(["a", "b"], 2), rates)]
    rows = {r["observer"]: r for r in overhead.summarise(records, obs)}
    assert rows["a"]["ratios"] == pytest.approx([0.95, 99 / 100])
    assert rows["b"]["ratios"] == pytest.approx([100 / 105, 90 / 95])
    assert rows["a"]["attach_s"]["mean"] == 0.5
    assert rows["alone"]["phases"] == 5
    md = overhead.markdown(list(rows.values()), 6)
    assert "| a | 2 |" in md and "0.970" in md  # mean of 0.95 and 0.99


def test_a_missing_tool_gets_a_not_installed_row():
    o = observe.external("nope", "gpuwatch-bench-no-such-tool", (), False, "x")
    assert o.argv is None and o.missing == "not installed"
    md = self_bench.markdown([{"observer": "nope", "missing": o.missing},
                              {"observer": "alone", "job_steps_per_s": observe.spread([1.0])}], 20)
    assert "| nope | not installed |" in md
    assert "not measured" in md  # no gpuwatch TUI row: its targets are not judged


def test_tree_sampler_counts_the_cpu_of_children_that_exited():
    # the child burns 1 s of CPU (process time, so load on this machine only stretches the wall
    # time) and is reaped before the last sample: its time must still be counted
    code = textwrap.dedent("""
        import subprocess, sys, time
        burn = "import time\\nwhile time.process_time() < 1.0: pass"
        subprocess.run([sys.executable, "-c", burn])
        print("done", flush=True)
        time.sleep(60)
    """)
    run = run_piped([sys.executable, "-c", code], "done")
    try:
        sampler = observe.TreeSampler(run.pid, every=0.2)
        assert run.wait_marker(60) is not None
        sampler.finish()
    finally:
        run.stop(grace=1)
    last = sampler.samples[-1]
    assert last.kids_cpu >= 0.95
    assert last.own_rss > 1_000_000


@pytest.mark.slow
def test_step_counter_follows_a_cpu_job(tmp_path):
    counter = str(tmp_path / "steps")
    reader = observe.StepReader(counter)
    assert reader.read() == 0
    job = observe.start_job("cpu", 1, counter, str(tmp_path / "job.log"))
    try:
        observe.wait_warm(reader, job, warmup_s=0.5, timeout=50)
        a = reader.mark()
        time.sleep(1.0)
        b = reader.mark()
        assert b[1] > a[1] > 0 and observe.rate(a, b) > 0
    finally:
        observe.stop_job(job)
    assert job.poll() is not None
    # a bounded run leaves exactly its step count behind
    subprocess.run([sys.executable, "-m", "bench.steady_job", "--device", "cpu", "--workers", "0",
                    "--counter", counter, "--steps", "25"], cwd=REPO, check=True, timeout=60, capture_output=True)
    assert reader.read() == 25


def test_first_frame_times_each_start_and_sums_up_what_it_saw(tmp_path):
    from bench import first_frame

    script = tmp_path / "fake_tui.py"
    script.write_text(FAKE_TUI)
    o = observe.Observer("fake", [sys.executable, str(script)], True, r"PID 4242")
    times = first_frame.time_starts(o, 2)
    assert len(times) == 2 and all(t is not None and 0.25 < t < 10 for t in times), times
    got = first_frame.summary([*times, None])
    assert got["starts"] == 3 and got["seen"] == 2 and got["times_s"][-1] is None
    assert got["min_s"] <= got["median_s"] <= got["max_s"]
    assert first_frame.summary([None])["median_s"] is None


def test_tui_cost_reads_a_recording_and_measures_a_replay():
    from bench import tui_cost

    path = os.path.join(REPO, "tests", "data", "h200", "healthy.jsonl")
    n, span = tui_cost._frames(path)
    assert n == 10 and 8.5 < span < 10.5  # ten 1 s ticks of the real H200 recording
    got = tui_cost.one_run(path, 80, 24, settle=1.0)
    assert "error" not in got, got
    assert got["frames"] > 5 and got["cpu_s"] > 0 and got["ms_per_frame"] > 0


def test_loop_cost_writes_the_same_tick_lines_as_the_json_stream(tmp_path):
    import json

    from bench import loop_cost
    from gpuwatch.analysis import Analysis
    from gpuwatch.recording import dumps, tick_record
    from gpuwatch.replay import load_frames

    path = os.path.join(REPO, "tests", "data", "h200", "healthy.jsonl")
    out = tmp_path / "ticks.jsonl"
    assert loop_cost.main([path, "--passes", "1", "--verdicts", str(out)]) == 0
    lines = out.read_text().splitlines()
    analysis = Analysis()
    want = [dumps(tick_record(f, analysis.update(f))) for f in load_frames(path)]
    assert lines == want and len(lines) == 10
    assert all(json.loads(x)["verdict"]["stage"] for x in lines)


def test_draw_cost_times_each_frame_it_hands_the_app():
    import asyncio

    from bench import draw_cost

    path = os.path.join(REPO, "tests", "data", "h200", "healthy.jsonl")
    ticks = draw_cost.analysed(path)
    runs = asyncio.run(draw_cost.one_pass(ticks, (80, 24), skip=2))
    assert len(runs) == len(ticks) - 2 == 8
    assert all(whole > panels > 0 for whole, panels in runs)


def test_startup_trace_marks_the_stages_of_a_replay_start(tmp_path):
    """The probe's marks are patched into gpuwatch from outside: a renamed method would silently
    drop a stage. One replay start (no collectors) must mark the app's stages in order."""
    from bench import startup_trace

    path = os.path.join(REPO, "tests", "data", "h200", "healthy.jsonl")
    start = startup_trace.one_start(["replay", path], None, str(tmp_path / "marks.jsonl"))
    marks = start["marks"]
    stages = ["interpreter started", "imported gpuwatch.cli", "imported gpuwatch.commands", "imported textual.app",
              "imported gpuwatch.tui.app", "app created", "app mounted", "first verdict",
              "first frame put on the widgets", "first frame with data written to the terminal"]
    assert all(s in marks for s in stages), sorted(marks)
    times = [marks[s]["t"] for s in stages]
    assert times == sorted(times) and 0 < times[-1] < startup_trace.TIMEOUT_S, times
    steps = marks[startup_trace.LAST_MARK]["spans"]
    assert {"CSS parse", "CSS apply", "layout", "render and write"} <= set(steps), steps
    assert all(cpu > 0 and calls >= 1 for cpu, calls in steps.values()), steps
    md = startup_trace.report([start], {"gpuwatch.cli": (1500, 2000), "textual.app": (9000, 90000)})
    assert "| app mounted | " in md and "| collectors prestarted | - | - | 0 |" in md
    assert "| textual | 9.0 |" in md and "| CSS apply |" in md


def test_self_keeps_the_observers_only_names_and_leaves_those_skip_names():
    from bench import self as bench_self

    names = [o.name for o in bench_self.observers(1, 1.0)]
    assert [o.name for o in bench_self.chosen(bench_self.observers(1, 1.0), "", "tui")] == [names[0]]
    assert names[0].startswith("gpuwatch TUI")
    left = [o.name for o in bench_self.chosen(bench_self.observers(1, 1.0), "nvidia-smi,py-spy", "")]
    assert left == [n for n in names if not n.startswith(("nvidia-smi", "py-spy"))] and len(left) == len(names) - 2
    assert bench_self.chosen(bench_self.observers(1, 1.0), "", "") == bench_self.observers(1, 1.0)
