"""The diagnose report's sections, renderers and replay path, checked by content."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import types
import typing
from dataclasses import replace
from pathlib import Path

import pytest

from gpuwatch.cli import parse_args
from gpuwatch.model import Evidence, Stall, StackSample, ThreadStack, Unsupported
from gpuwatch.collectors.gpu import THROTTLE_FIRST
from gpuwatch.collectors.pcie import FIRST_WINDOW as PCIE_FIRST_WINDOW, REPLAYS_HELD
from gpuwatch.model.disk import NO_IO
from gpuwatch.model.values import JOB_EXITED, PENDING
from gpuwatch.report import NOT_RECORDED, run_diagnose
from gpuwatch.report import gather
from gpuwatch.report.build import build_report
from gpuwatch.model.field_words import WORDS
from gpuwatch.report.gaps import collect_gaps
from gpuwatch.report.gather import Collected
from gpuwatch.report.model import FAIL, WARN
from gpuwatch.report.progress import Progress
from gpuwatch.report.render_json import render_json
from gpuwatch.report.render_md import render_markdown
from gpuwatch.report.stacks import hot_stacks
from gpuwatch.untrusted import markdown
from tests.test_report_checks import NO_NVML, make_env, make_frame, verdict

RECORDING = Path(__file__).parent / "data" / "report" / "cpu_train_w2.jsonl"


def collected(frames, verdicts, ended="duration reached", early=False) -> Collected:
    got = Collected()
    for f, v in zip(frames, verdicts):
        got.add(f, v)
    got.ended, got.early = ended, early
    return got


def decode_then_gpu_bound():
    """5 decode ticks (speed-up 3, two remedies), 2 io ticks (speed-up 5), 3 GPU-bound ticks."""
    frames = [make_frame(i) for i in range(10)]
    ev = lambda v: (Evidence("decode", "wbusy", v, 0.7, ">=", v >= 0.7, f"workers busy {v:.0%}"),  # noqa: E731
                    Evidence("io", "wio", 0.1, 0.4, ">=", False, "workers in I/O 10%"))
    verdicts = (
        [verdict(frames[i].t, "decode", 0.6 + 0.05 * i, 3.0, ("raise num_workers", "cache decoded images"),
                 ev(0.9 if i < 4 else 0.5), Stall(2.0, 0.4, "checkpoint")) for i in range(5)]
        + [verdict(frames[i].t, "io", 0.5, 5.0, ("copy the data to local NVMe",)) for i in range(5, 7)]
        + [verdict(frames[i].t, "gpu_bound", 0.9) for i in range(7, 10)]
    )
    return frames, verdicts


def test_timeline_summary_evidence_stall_and_ranked_remedies():
    frames, verdicts = decode_then_gpu_bound()
    r = build_report(collected(frames, verdicts), make_env(), "live", pid=100, requested_s=10)
    assert [(s.stage, s.start_s, s.end_s, s.ticks) for s in r.timeline] == [
        ("decode", 0.0, 5.0, 5), ("io", 5.0, 7.0, 2), ("gpu_bound", 7.0, 10.0, 3)]
    assert r.timeline[0].confidence_min == pytest.approx(0.6) and r.timeline[0].confidence_mean == pytest.approx(0.7)
    assert (r.summary.stage, r.summary.share, r.summary.sentence) == ("decode", 0.5, "decode sentence")
    assert r.source.covered_s == 10.0 and r.source.frames == 10 and not r.source.early

    wbusy = next(e for e in r.evidence if e.signal == "wbusy")
    assert (wbusy.stage, wbusy.supports_share, wbusy.value_median) == ("decode", 0.8, 0.9)
    assert not any(e.signal == "wio" for e in r.evidence)  # points at io, but io ticks carried none

    assert (r.stall.period_s, r.stall.idle_s, r.stall.coincides_with, r.stall.seen_share) == (2.0, 0.4, "checkpoint", 0.5)

    # decode: half the run at 3x -> 1 / (0.5 + 0.5 / 3) = 1.5x; io: 20 % at 5x -> 1 / (0.8 + 0.04) = 1.19x
    stage_rem = [x for x in r.remedies if x.stage]
    assert [(x.stage, x.text) for x in stage_rem] == [
        ("decode", "raise num_workers"), ("decode", "cache decoded images"), ("io", "copy the data to local NVMe")]
    assert stage_rem[0].speedup_run == pytest.approx(1.5)
    assert stage_rem[2].speedup_run == pytest.approx(1 / 0.84)
    check_rem = [x for x in r.remedies if x.check]
    # 2 workers for 16 CPUs while loading held the GPU back 70 % of the time: the decode remedy
    # already says "raise num_workers", so the check's fix is not said twice; the job is not NUMA-pinned
    assert {c.id: c.status for c in r.checks}["workers_vs_cores"] == WARN
    assert [x.check for x in check_rem] == ["numa"]


def test_markdown_for_gpu_frames_holds_the_values():
    frames = [make_frame(i, gen=3, width=8) for i in range(6)]
    r = build_report(collected(frames, [verdict(f.t) for f in frames]), make_env(), "live", pid=100, requested_s=6)
    md = render_markdown(r)
    # 6 s: a snapshot (under one 8 s verdict window), whose remedies are not ranked by their cost to the run
    for heading in ("# gpuwatch diagnosis: PID 100", "## Verdict", "## Checks", "## Remedies\n",
                    "## Verdict timeline", "## Evidence per stage", "## Periodic stalls",
                    "## Hottest stacks per thread role", "## Environment", "## Not checked, and why"):
        assert heading in md
    assert "| FAIL | PCIe link at full speed under load | Gen3 x8 instead of Gen5 x16 in 100% of 6 loaded ticks" in md
    assert md.index("| FAIL |") < md.index("| WARN |") < md.index("| PASS |")
    assert "NVIDIA driver 580.159.04, NVML 13.580.159.04, CUDA 13.0" in md
    assert "| 0 | NVIDIA H200 | 0000:17:00.0 | Gen5 x16 | Gen3 x8 (6 ticks) | yes | no | 0 / 0 | 0 (sysfs) | yes |" in md
    assert "**GPU-bound** held the verdict 100% of those ticks (mean confidence 0.80)" in md
    assert "- **main thread** 100% (6 samples), syncing (.item()/.cpu()):" in md
    assert "- GPU performance counters (GPM) (6 ticks). Why: GPM off in this test" in md


def test_markdown_for_a_cpu_only_job_says_why_the_gpu_is_missing():
    gone = Unsupported(NO_NVML)
    frames = [make_frame(i, gpus=gone) for i in range(3)]
    r = build_report(collected(frames, [verdict(f.t, "unknown", 0.0) for f in frames]), make_env(gpus=gone), "live",
                     pid=100, requested_s=3)
    md = render_markdown(r)
    assert f"- NVIDIA driver: n/a ({NO_NVML})" in md
    assert f"- GPUs: n/a ({NO_NVML})" in md
    line = next(x for x in md.splitlines() if x.endswith(f". Why: {NO_NVML}"))
    for title in ("PCIe link at full speed under load", "No other processes on the job's GPUs",
                  "No thermal, power-brake or HW slowdown", "Host-to-device copies from pinned memory",
                  "No uncorrected ECC errors", "Job runs on the GPU's NUMA node"):
        assert f"*{title}*" in line
    assert line.startswith("- GPU readings (NVML) (3 ticks), PCIe link and traffic (3 ticks), NVIDIA driver and CUDA versions, the GPUs' setup; the checks")
    assert "**Unknown** held the verdict 100% of those ticks" in md


def test_early_exit_is_said():
    frames = [make_frame(i) for i in range(3)] + [make_frame(3, alive=False)]
    got = collected(frames, [verdict(f.t) for f in frames], "the job exited (process 100)", early=True)
    md = render_markdown(build_report(got, make_env(), "live", pid=100, requested_s=60))
    assert "**Watching ended early** (the job exited (process 100)): this report covers only the 4 s of the 60 s asked for" in md


def test_json_report_is_versioned_and_complete():
    frames, verdicts = decode_then_gpu_bound()
    doc = json.loads(render_json(build_report(collected(frames, verdicts), make_env(), "live", pid=100)))
    assert (doc["schema"], doc["type"]) == (1, "report")
    assert set(doc) >= {"gpuwatch", "source", "environment", "links", "summary", "checks", "remedies", "timeline",
                        "evidence", "stall", "stacks", "not_checked"}
    assert doc["summary"]["stage"] == "decode"
    assert doc["environment"]["driver"]["cuda_version"] == "13.0"
    assert doc["environment"]["gpus"][0]["local_cpus"] == {"unsupported": "not in this test"}
    checks = {c["id"]: c for c in doc["checks"]}
    assert checks["numa"]["status"] == WARN and checks["numa"]["fix"].startswith("pin each rank")
    assert doc["links"] == [{"index": 0, "gen": 5, "width": 16, "gen_max": 5, "width_max": 16, "loaded_ticks": 10}]
    assert [s["stage"] for s in doc["timeline"]] == ["decode", "io", "gpu_bound"]


def test_json_without_environment_marks_it_unsupported():
    frames = [make_frame(0)]
    doc = json.loads(render_json(build_report(collected(frames, [verdict(1.0)]), NOT_RECORDED, "replay", path="r.jsonl")))
    assert doc["environment"] == {"unsupported": NOT_RECORDED.reason}
    assert doc["source"]["kind"] == "replay" and doc["source"]["path"] == "r.jsonl"


def test_hot_stacks_count_each_sample_once_and_merge_line_numbers():
    def th(role, label, leaf):
        return ThreadStack(1, 1, role, None, "t", label, "d", True, False, (leaf, "caller (x.py:5)"))

    a = StackSample(1.0, (th("main", "data_wait", "get (q.py:10)"), th("worker", "busy", "decode (img.py:3)"),
                          th("other", "other", "feed (q.py:1)")), ())
    b = StackSample(2.0, (th("main", "data_wait", "get (q.py:11)"), th("worker", "idle", "poll (s.py:1)")), ())
    frames = [replace(make_frame(0), stacks=a), replace(make_frame(1), stacks=a), replace(make_frame(2), stacks=b)]
    hs = hot_stacks(frames)
    assert [(h.role, h.label, h.count, h.share) for h in hs] == [
        ("main", "data_wait", 2, 1.0), ("worker", "busy", 1, 0.5), ("worker", "idle", 1, 0.5)]
    assert hs[0].frames == ("get (q.py:10)", "caller (x.py:5)")


def test_gaps_are_deduplicated_and_early_pending_is_dropped():
    f0 = replace(make_frame(0), host=PENDING, stacks=PENDING)
    stalled = [replace(make_frame(i), disk=Unsupported(f"no new reading of disk activity for {i * 3} s (its collector is stalled)"))
               for i in range(1, 4)]
    gaps = {(g.what, g.reason): g.count for g in collect_gaps([f0] + stalled, make_env(gpus=Unsupported("x")))}
    assert ("host", PENDING.reason) not in gaps  # the host collector got going later
    assert gaps[("disk", "no new reading of disk activity for 3 s (its collector is stalled)")] == 3
    assert gaps[("environment.gpus", "x")] == 1
    never = [replace(make_frame(i), host=PENDING) for i in range(2)]
    assert {(g.what, g.reason) for g in collect_gaps(never)} >= {("host", PENDING.reason)}


def test_gaps_leave_out_normal_states_and_the_runs_edges():
    """No CPU quota and a tick without disk requests are facts, not gaps; a counter's first window
    and the reads after the job exited are the run's edges where the place read fine otherwise."""
    frames = [make_frame(i) for i in range(4)]  # make_frame has no CPU quota on every tick
    dev = frames[1].disk.devices[0]
    frames[1] = replace(frames[1], disk=replace(frames[1].disk, devices=(replace(dev, await_ms=NO_IO),)))
    frames[0] = replace(frames[0], pcie=(replace(frames[0].pcie[0], rx_bps=Unsupported(PCIE_FIRST_WINDOW)),),
                        gpus=(replace(frames[0].gpus[0], throttle=THROTTLE_FIRST),))
    gone = "process no longer exists (pid=100)"
    frames[3] = replace(frames[3], disk=Unsupported(f"disk: TargetGone: {gone}"),
                        stacks=Unsupported(f"stacks: {JOB_EXITED} ({gone})"))
    gaps = {g.what: g.reason for g in collect_gaps(frames)}
    assert gaps == {"gpus[].gpm": "GPM off in this test", "host.psi": "no PSI"}  # what make_frame never reads
    # a place that never read past its first window was not measured at all
    never = [replace(f, gpus=(replace(f.gpus[0], throttle=THROTTLE_FIRST),)) for f in frames[:1]]
    assert "gpus[].throttle" in {g.what for g in collect_gaps(never)}


def test_a_replay_count_held_while_relaxed_is_no_gap():
    """While relaxed the PCIe replay counter is read every second tick and the tick between carries
    REPLAYS_HELD: the next read counts those replays, so nothing went unchecked."""
    frames = [make_frame(i) for i in range(4)]
    for i in (1, 3):
        frames[i] = replace(frames[i], pcie=(replace(frames[i].pcie[0], replay_delta=REPLAYS_HELD),))
    assert "pcie[].replay_delta" not in {g.what for g in collect_gaps(frames)}
    r = build_report(collected(frames, [verdict(f.t) for f in frames]), make_env(), "replay", path="r.jsonl")
    assert "replays" not in render_markdown(r).split("## Not checked, and why")[1]


def test_not_checked_names_readings_in_plain_words():
    frames = [make_frame(i, gpus=Unsupported(NO_NVML)) for i in range(3)]
    r = build_report(collected(frames, [verdict(f.t) for f in frames]), Unsupported("a recording holds frames only"),
                     "replay", path="r.jsonl")
    md = render_markdown(r).split("## Not checked, and why")[1]
    assert "GPU readings (NVML) (3 ticks), PCIe link and traffic (3 ticks); the checks *" in md
    assert "- The machine's setup; the checks *" in md and f"Why: {NO_NVML}" in md
    assert not re.search(r"`[a-z_]+(\[\])?\.|\b[a-z]+_[a-z_]+\b|\[\]", md.replace("`gpuwatch diagnose --pid PID`", ""))
    doc = json.loads(render_json(r))
    assert {(g["what"], g["title"]) for g in doc["not_checked"]} >= {("gpus", "GPU readings (NVML)"),
                                                                    ("environment", "the machine's setup")}


def test_every_place_that_can_go_unread_has_plain_words():
    """The words cover every Maybe field of a frame and of the environment, so no report falls back."""
    def places(tp, path):
        args = typing.get_args(tp)
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            yield from ([path] if Unsupported in args else [])
            for a in args:
                yield from places(a, path)
        elif typing.get_origin(tp) is tuple:
            for a in args:
                yield from places(a, path + "[]")
        elif dataclasses.is_dataclass(tp):
            hints = typing.get_type_hints(tp)
            for f in dataclasses.fields(tp):
                yield from places(hints[f.name], f"{path}.{f.name}" if path else f.name)

    from gpuwatch.collectors.environment import Environment
    from gpuwatch.model.frame import Frame
    wanted = set(places(Frame, "")) | set(places(Environment, "environment")) | {"environment"}
    assert len(wanted) > 50 and wanted <= set(WORDS), sorted(wanted - set(WORDS))


def test_long_runs_keep_an_even_sample_of_frames_but_every_mark(monkeypatch):
    monkeypatch.setattr(gather, "MAX_KEPT", 10)
    got = collected([make_frame(i) for i in range(50)], [verdict(100.0 + i) for i in range(50)])
    assert len(got.marks) == 50 and len(got.frames) <= 10
    seqs = [f.seq for f in got.frames]
    assert seqs == list(range(0, 50, got.stride))[: len(seqs)] and got.stride == 8
    assert [v.t for v in got.verdicts] == [f.t for f in got.frames]


def test_progress_bar_on_a_terminal_and_lines_otherwise():
    out = io.StringIO()
    p = Progress(out, 60, "diag", tty=True)
    p.tick(make_frame(0), verdict(1.0, "decode"), 30)
    p.done()
    assert out.getvalue().startswith("\rdiag [" + "#" * 15 + "-" * 15 + "] 30/60 s  verdict: CPU prep")
    assert out.getvalue().endswith("\r")
    log = io.StringIO()
    p = Progress(log, 60, "diag", tty=False)
    for s in range(1, 25):
        p.tick(make_frame(s), verdict(1.0), float(s))
    assert log.getvalue().splitlines() == [f"diag: {s}/60 s watched, verdict so far: GPU-bound" for s in (1, 11, 21)]


def test_diagnose_replay_of_a_real_cpu_recording(tmp_path, capsys):
    out = tmp_path / "report.md"
    assert run_diagnose(parse_args(["diagnose", "--replay", str(RECORDING), "-o", str(out)])) == 0
    md = out.read_text()
    assert md.startswith("# gpuwatch diagnosis: PID 16767\n")
    assert "replay of " in md and "20 s over 20 ticks; end of the recording." in md
    assert "| PASS | DataLoader workers fit the CPUs | 2 DataLoader workers for 1 training process on 2 usable CPUs |" in md
    assert "| PASS | Python stacks readable (py-spy) | stacks in 20 of 20 ticks |" in md
    assert "- **main thread** 82% (33 samples), waiting for a batch: `" in md
    assert "- **DataLoader workers** 50% (5 samples), computing: `burn (cpu_train.py:40)" in md
    # the reason and its fix are said once, under "Not checked, and why", which names the check
    assert "| not checked | PCIe link at full speed under load | see *Not checked, and why* below |" in md
    below = md.split("## Not checked, and why", 1)[1]
    assert "*PCIe link at full speed under load*" in below and "NVML library (libnvidia-ml.so.1) not found" in below
    assert md.count("install the NVIDIA driver") == 1
    # escaped as every reason is (it may quote an error's text); gpuwatch's own reasons carry no
    # Markdown, so nothing in them shows a backslash ("\\`gpuwatch diagnose --pid PID\\`" did; review 36)
    assert f"Not probed: {markdown(NOT_RECORDED.reason, inline=True)}" in md
    assert "a live gpuwatch diagnose --pid PID" in md and "\\`" not in md.split("## Environment", 1)[1]
    assert "report written to" in capsys.readouterr().err


def test_diagnose_replay_json_counts_bad_lines(tmp_path, capsys):
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(RECORDING.read_text() + '{"schema": 1, "type": "tick", "frame": {"seq": "x"}}\n')
    assert run_diagnose(parse_args(["diagnose", "--replay", str(damaged), "--format", "json"])) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["source"]["bad_lines"] == 1 and doc["source"]["frames"] == 20
    assert "line 22: bad frame" in captured.err
    assert {c["id"]: c["status"] for c in doc["checks"]}["pcie_link"] == "not_checked"


def test_unwritable_output_is_refused_before_watching(tmp_path):
    from gpuwatch.cli import UsageError

    with pytest.raises(UsageError, match="no folder"):
        run_diagnose(parse_args(["diagnose", "--replay", str(RECORDING), "-o", str(tmp_path / "nope" / "r.md")]))


def test_fail_and_warn_fixes_follow_the_stage_remedies():
    frames = [make_frame(i, gen=3, workers=8, usable=2) for i in range(4)]
    r = build_report(collected(frames, [verdict(f.t) for f in frames]), make_env(), "live", pid=1)
    checks = [x.check for x in r.remedies]
    assert checks[0] == "pcie_link" and {"workers_vs_cores", "numa"} <= set(checks[1:])
    assert {c.id: c.status for c in r.checks}["pcie_link"] == FAIL


def test_stage_remedies_keep_the_latest_wording_and_frequent_ones_only():
    frames = [make_frame(i) for i in range(4)]
    verdicts = [verdict(f.t, "contention", 0.7, 1.2,
                        (f"other processes use {1 + i / 10:.1f} cores: pytest (pid {100 + i})",)
                        + (("pin the job to its cores",) if i < 3 else ())
                        + (("a one-off idea",) if i == 0 else ())) for i, f in enumerate(frames)]
    r = build_report(collected(frames, verdicts), make_env(), "live", pid=1)
    assert [x.text for x in r.remedies if x.stage] == [
        "other processes use 1.3 cores: pytest (pid 103)", "pin the job to its cores"]
    md = render_markdown(r)
    assert ("1. **Contention** (held 100% of those ticks; fixing it: about 1.20x while it holds)\n"
            "   - other processes use 1.3 cores: pytest (pid 103)\n   - pin the job to its cores\n") in md


def test_one_remedy_worded_in_the_singular_and_the_plural_is_listed_once():
    """bench/field_cpu/respawn_workers.py's report listed "Processes outside the job use 0.51 core of
    2 CPUs: ..." and, from other ticks, "... use 1.08 cores of 2 CPUs: ...": one fix, twice."""
    frames = [make_frame(i) for i in range(4)]
    verdicts = [verdict(f.t, "contention", 0.7, 1.2, (f"other processes use {n} of 2 CPUs: pytest (pid 7)",))
                for f, n in zip(frames, ("1.08 cores", "1.08 cores", "1.08 cores", "0.51 core"))]
    r = build_report(collected(frames, verdicts), make_env(), "live", pid=1)
    assert [x.text for x in r.remedies if x.stage] == ["other processes use 0.51 core of 2 CPUs: pytest (pid 7)"]


def test_the_decoder_advice_given_as_a_condition_goes_once_the_samples_settle_it():
    """Trial 26: the report listed "If the workers decode images, use a faster decoder" (early
    verdicts, too few worker samples) beside "Make each item cheaper to build ...: no worker sample
    was in an image decoder" (the later ones)."""
    frames = [make_frame(i) for i in range(6)]
    early = ("If the workers decode images, use a faster decoder: for JPEG files, torchvision.io.decode_jpeg",)
    late = ("Make each item cheaper to build (the workers are most often in f): no stack sample of the workers was in an "
            "image decoder",)
    verdicts = [verdict(f.t, "decode", 0.7, 2.0, early if i < 3 else late) for i, f in enumerate(frames)]
    texts = [x.text for x in build_report(collected(frames, verdicts), make_env(), "live", pid=1).remedies if x.stage]
    assert texts == [late[0]]


def test_evidence_renders_per_stage_with_median_and_share():
    frames, verdicts = decode_then_gpu_bound()
    md = render_markdown(build_report(collected(frames, verdicts), make_env(), "live", pid=1))
    # the middle of the readings, with its own wording, so the text and the median agree
    assert "**CPU prep**\n\n- ● workers busy 90%: met in 80% of the ticks CPU prep held (the middle reading is shown)" in md
    assert "The GPU idled about 0.4 s every 2.0 s, coinciding with checkpoint (seen in 50% of the ticks; the middle of their figures)." in md


def test_a_report_that_cannot_be_written_goes_to_stdout_instead(tmp_path, capsys):
    from gpuwatch.errors import UsageError
    from gpuwatch.output import write_text

    with pytest.raises(UsageError) as e:  # a folder: open() fails after the watch; cli.py says it, exit 2
        write_text("# the report\n", str(tmp_path))
    assert capsys.readouterr().out == "# the report\n"
    assert str(e.value).startswith(f"cannot write {tmp_path}: ") and str(e.value).endswith("; the report went to stdout")


async def test_a_source_that_breaks_midway_still_yields_what_was_seen():
    class Breaks:
        async def _gen(self):
            yield make_frame(0)
            yield make_frame(1)
            raise RuntimeError("collector thread died")

        def frames(self):
            return self._gen()

    got = await gather.watch_live(Breaks())
    assert len(got.frames) == 2 and got.early
    assert got.ended == "watching stopped on an error (RuntimeError: collector thread died)"


def test_a_fact_without_a_cut_is_not_said_unseen_while_it_held():
    """field_lightning's report: "○ pin_memory is on (its pin-memory thread runs): seen in 0% of
    the ticks PCIe held", while the pinned-memory check beside it says the pin thread exists. The
    share is of the ticks the fact pointed to the stage (the mark's meaning), not of those it was seen."""
    path = Path(__file__).parent / "data" / "h200" / "field_lightning.jsonl.gz"
    from gpuwatch.replay import load_frames

    frames = load_frames(str(path))
    md = render_markdown(build_report(gather.from_frames(frames), NOT_RECORDED, "replay", path=str(path)))
    assert "its pin-memory thread runs)" in md
    assert not re.search(r": seen in \d+% of the ticks", md)
    assert "○ pin_memory is on (its pin-memory thread runs): pointed to PCIe in 0% of the ticks PCIe held" in md
    assert re.search(r"● GPU kernel-active time: \d+ % \(needs under 90 %[^)]*\): met in 100% of the ticks PCIe held", md)
