"""``gpuwatch compare``: real H200 recordings of an input-bound job (disk) and a healthy one
(bench/results/2026-12-02-h200/acc, see bench/RESULTS.md), as recordings and as JSON reports; the
figures are checked against numbers read straight from the recordings' JSON lines."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from gpuwatch.cli import main
from gpuwatch.compare.diff import compare
from gpuwatch.compare.load import load_side

ROOT = Path(__file__).resolve().parents[1]
ACC = ROOT / "bench" / "results" / "2026-12-02-h200" / "acc"
IO, HEALTHY = str(ACC / "io.jsonl"), str(ACC / "healthy.jsonl")
CPU_ONLY = str(ROOT / "tests" / "data" / "report" / "cpu_train_w2.jsonl")


def raw_ticks(path: str) -> list[dict]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [r for r in map(json.loads, f.read().splitlines()) if r.get("type") == "tick"]


def mean_gpu_busy(path: str) -> float:
    """NVML utilization of the GPUs the job used in the run, straight from the recorded JSON."""
    ticks = raw_ticks(path)
    used = {g["index"] for r in ticks if isinstance(r["frame"]["gpus"], list) for g in r["frame"]["gpus"]
            if g["used_by_target"]}
    vals = [g["util_gpu"] for r in ticks if isinstance(r["frame"]["gpus"], list) for g in r["frame"]["gpus"]
            if g["index"] in used and isinstance(g["util_gpu"], (int, float))]
    return sum(vals) / len(vals)


def mean_worker_cpu(path: str) -> float:
    vals = [sum(p["cpu_pct"] for p in r["frame"]["procs"]["processes"] if p["role"] == "worker")
            for r in raw_ticks(path)]
    return sum(vals) / len(vals)


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["compare", *args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def io_vs_healthy():
    return compare(load_side(IO).figures, load_side(HEALTHY).figures, IO, HEALTHY)


def row(c, key):
    return next(r for r in c.rows if r.key == key)


def test_the_fix_shows_as_disk_time_gone_and_the_gpu_busy(io_vs_healthy):
    c = io_vs_healthy
    assert row(c, "stage.io").before > 50 and row(c, "stage.io").after == 0 and row(c, "stage.io").verdict == "better"
    assert row(c, "stage.gpu_bound").after > 80 and row(c, "stage.gpu_bound").verdict == "better"
    busy = row(c, "gpu_busy")
    assert busy.before == pytest.approx(mean_gpu_busy(IO), abs=1e-3)
    assert busy.after == pytest.approx(mean_gpu_busy(HEALTHY), abs=1e-3)
    assert busy.verdict == "better"
    assert row(c, "worker_cpu").before == pytest.approx(mean_worker_cpu(IO), abs=1e-3)
    assert row(c, "data_wait").before > 80 and row(c, "data_wait").after < 10
    left = row(c, "speedup_left")
    assert left.before > left.after and left.verdict == "better"
    assert "I/O" in left.note
    # the stage shares of each side add up to the whole run
    assert sum(r.before for r in c.rows if r.group == "stage time") == pytest.approx(100.0, abs=0.1)
    assert sum(r.after for r in c.rows if r.group == "stage time") == pytest.approx(100.0, abs=0.1)
    # one GPU model, but two different programs (two scenarios): said once, and the figures still compared
    assert not any("different GPUs" in n for n in c.notes)
    assert any("different programs" in n and "io_bound" in n and "healthy" in n for n in c.notes)


def test_a_json_report_compares_like_its_recording(tmp_path, capsys, io_vs_healthy):
    rep = tmp_path / "io.json"
    assert main(["diagnose", "--replay", IO, "--format", "json", "-o", str(rep)]) == 0
    side = load_side(str(rep))
    assert side.kind == "report" and side.series is None
    assert side.figures == load_side(IO).figures
    rc, out, err = run(capsys, str(rep), HEALTHY, "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["type"] == "compare"
    got = {r["key"]: r for r in doc["rows"]}
    assert got["gpu_busy"]["before"] == pytest.approx(row(io_vs_healthy, "gpu_busy").before)
    assert got["stage.io"]["verdict"] == "better"


def test_text_and_markdown(capsys, io_vs_healthy):
    rc, out, _ = run(capsys, IO, HEALTHY)
    assert rc == 0
    assert "GPU busy (NVML utilization)" in out and "I/O" in out
    left = row(io_vs_healthy, "speedup_left")
    assert f"{left.before:.2f}x" in out and f"{left.after:.2f}x" in out
    rc, md, _ = run(capsys, IO, HEALTHY, "--format", "md")
    assert rc == 0 and md.startswith("# gpuwatch compare")
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert all(line.count("|") == table[0].count("|") for line in table)  # no cell breaks the table


def test_another_gpu_is_said_and_the_rest_still_compared(capsys):
    c = compare(load_side(HEALTHY).figures, load_side(CPU_ONLY).figures)
    assert any("different GPUs" in n and "NVIDIA H200" in n and "none readable" in n for n in c.notes)
    assert row(c, "gpu_busy").after is None and row(c, "gpu_busy").verdict == "not comparable"
    assert any("GPU busy" in n and "not measured after" in n for n in c.notes)
    assert row(c, "worker_cpu").before is not None and row(c, "worker_cpu").after is not None


@pytest.mark.parametrize("content, says", [
    (None, "no such file"),
    (b"", "is empty"),
    (b"hello\n", "holds no frames"),
    (b'{\n "type": "tick"\n}\n', "not a gpuwatch report"),
    (b'{\n "type": "report"\n}\n', "without run figures"),
    (b"{\n not json", "not valid JSON"),
    (b"\x1f\x8b\x08\x00junk", "the compressed data is damaged"),  # gzip by its bytes, whatever the name
])
def test_unreadable_inputs_get_one_line_and_exit_2(tmp_path, capsys, content, says):
    bad = tmp_path / "bad.jsonl"
    if content is not None:
        bad.write_bytes(content)
    rc, out, err = run(capsys, str(bad), HEALTHY)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err


def test_a_folder_or_a_pipe_is_refused(tmp_path, capsys):
    import os

    rc, _, err = run(capsys, HEALTHY, str(tmp_path))
    assert rc == 2 and "is a folder" in err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, _, err = run(capsys, str(fifo), HEALTHY)  # refused before opening: no hang waiting for a writer
    assert rc == 2 and "is a pipe or a device" in err


def test_html_side_by_side_with_charts_on_one_scale(tmp_path, capsys, io_vs_healthy):
    from tests.test_report_html import parse, values_of

    out = tmp_path / "c.html"
    rc, _, err = run(capsys, IO, HEALTHY, "--format", "html", "-o", str(out))
    assert rc == 0 and "comparison written" in err
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe")]
    keys = [a["data-key"] for t, a in page.tags if t == "tr" and "data-key" in a]
    assert keys == [r.key for r in io_vs_healthy.rows]
    assert "<td>0.0 %</td><td>87.4 %</td>" in text  # GPU busy before and after, as the text form says
    sides = [a["data-side"] for t, a in page.tags if t == "div" and a.get("class") == "pair"]
    assert sides == ["before", "after"] * 7
    # the page keeps one chart per name (the later one), so check the scales through the raw SVG tags
    tops = {}
    for t, a in page.tags:
        if t == "svg":
            tops.setdefault(a["data-chart"], set()).add(a["data-y-max"])
    assert all(len(v) == 1 for k, v in tops.items() if k in ("pcie", "worker_cpu", "gpu", "host")), tops
    after_busy = [v for _, v in values_of(page.charts["gpu"], "gpu_busy")]
    assert sum(after_busy) / len(after_busy) == pytest.approx(mean_gpu_busy(HEALTHY), abs=0.1)


def test_html_with_a_report_on_one_side_charts_the_recording_only(tmp_path, capsys):
    rep = tmp_path / "io.json"
    assert main(["diagnose", "--replay", IO, "--format", "json", "-o", str(rep)]) == 0
    capsys.readouterr()
    rc, out, _ = run(capsys, str(rep), HEALTHY, "--format", "html")
    assert rc == 0
    assert "need both runs' recordings" in out
    assert out.count("<svg") == 7 and 'data-side="after"' in out and 'data-side="before"' not in out


def test_speed_up_left_is_not_a_small_stage_standing_for_an_unestimated_big_one():
    from gpuwatch.report.figures import SpeedupLeft
    from gpuwatch.report.measure import speedup_left
    from gpuwatch.report.model import Remedy

    launch = Remedy("graphs", "launch", None, 0.1, 20.0, 1.11)
    pcie = Remedy("pin memory", "h2d", None, 0.84, None, None)
    decode = Remedy("more workers", "decode", None, 0.9, 8.0, 6.9)
    assert speedup_left([launch, pcie]) == speedup_left([pcie, launch])
    left = speedup_left([launch, pcie])  # 84 % of the run not estimated: at most 1 / 0.16
    assert (left.stage, left.factor, left.upper_bound) == ("h2d", 6.25, True)
    assert speedup_left([launch, decode]) == SpeedupLeft("decode", 6.9, False)
    assert speedup_left([launch]) == SpeedupLeft("launch", 1.11, False)
    # a few ticks of a stage without an estimate: the bound says little is left
    blip = Remedy("graphs", "launch", None, 0.03, None, None)
    assert speedup_left([blip]) == SpeedupLeft("launch", 1.03, True)
    assert speedup_left([blip, Remedy("more workers", "decode", None, 0.2, 2.0, 1.11)]).upper_bound is False
    # a remedy of a stage outside the pipeline (the epoch structure) counts when it comes with an estimate
    assert speedup_left([Remedy("persistent workers", "unknown", None, 0.6, 1.5, 1.26)]).factor == 1.26
    assert speedup_left([Remedy("fix the link", None, "pcie_link", 0.0, None, None)]) is None


def test_blank_lines_first_and_a_cut_off_recording(tmp_path, capsys):
    """A recording cut short (a copy that stopped halfway) still compares, and the skipped lines are said."""
    import gzip

    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(Path(IO).read_bytes())[:20000])
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n" + Path(HEALTHY).read_text())
    rc, out, err = run(capsys, str(cut), str(blank))
    assert rc == 0, err
    assert "unreadable line was skipped in the recording before" in out
    assert "GPU-bound" in out
    spaces = tmp_path / "spaces.jsonl"
    spaces.write_text("\n \n")
    rc, _, err = run(capsys, str(spaces), HEALTHY)
    assert rc == 2 and "is empty" in err


def test_a_crafted_report_cannot_act_on_the_terminal_or_the_page(tmp_path, capsys):
    """Stage names and the command line come from the file; none reach an output raw."""
    rep = tmp_path / "io.json"
    assert main(["diagnose", "--replay", IO, "--format", "json", "-o", str(rep)]) == 0
    doc = json.loads(rep.read_text())
    evil = "x\x1b]0;PWNED\x07\x1b[2J\n# INJECTED <script>alert(1)</script> | cell"
    doc["figures"]["stage_shares"] = [[evil, 0.5], ["io", 0.5]]
    doc["figures"]["cmdline"] = evil
    rep.write_text(json.dumps(doc, indent=2))
    capsys.readouterr()
    for fmt in ("text", "md", "html", "json"):
        rc, out, err = run(capsys, str(rep), HEALTHY, "--format", fmt)
        assert rc == 0, err
        assert "\x1b" not in out and "\x07" not in out, fmt
        if fmt == "html":
            assert "<script>" not in out
        if fmt == "md":  # a Markdown viewer renders raw HTML: every '<' from the file is backslash-escaped
            assert not re.search(r"(?<!\\)<", out)
        if fmt == "md":
            rows = [line for line in out.splitlines() if line.startswith("| ")]
            assert all(line.count("|") - line.count("\\|") == rows[0].count("|") for line in rows)
            assert "\n# INJECTED" not in out


FIELD = ROOT / "tests" / "data" / "h200"


@pytest.mark.parametrize("before, after, fix, stage", [
    ("field_tokenize", "field_tokenize_workers", "--workers 12 --fixed", "decode"),
    ("field_lightning", "field_lightning_persistent", "--persistent", None),
])
def test_a_real_fix_on_the_h200_shows_as_a_fix(before, after, fix, stage):
    """Issue 20's field jobs on an H200 (tests/data/h200/README.md): the same job before and after
    its fix (12 DataLoader workers instead of 2; persistent workers in Lightning)."""
    b, a = (load_side(str(FIELD / f"{n}.jsonl.gz")) for n in (before, after))
    c = compare(b.figures, a.figures)
    # what was measured: the GPU busier, the training thread waiting less
    for key in ("gpu_busy", "sm_active"):
        assert row(c, key).verdict == "better" and row(c, key).after > row(c, key).before + 15
    assert row(c, "data_wait").verdict == "better"
    # what the verdicts say of it (the diagnosis may refine its stages; the direction must hold)
    assert row(c, "stage.gpu_bound").verdict == "better" and row(c, "stage.gpu_bound").after > 50
    assert row(c, "speedup_left").verdict != "worse"
    if stage:
        assert row(c, f"stage.{stage}").verdict == "better"
    # the same program with the fix's arguments added, said as such
    assert [n for n in c.notes if "program" in n] == [f"The runs are the same program with other arguments: after has {fix}."]
    # GPU busy, straight from the recordings' JSON
    assert row(c, "gpu_busy").before == pytest.approx(mean_gpu_busy(str(FIELD / f"{before}.jsonl.gz")), abs=1e-3)
    assert row(c, "gpu_busy").after == pytest.approx(mean_gpu_busy(str(FIELD / f"{after}.jsonl.gz")), abs=1e-3)


def test_stalls_are_not_measured_where_the_gpu_was_not_read(capsys):
    # trial finding 21: a run without a GPU reading said "0.0 % -> 0.0 % same" for stalls.
    c = compare(load_side(CPU_ONLY).figures, load_side(HEALTHY).figures)
    share = row(c, "stall_share")
    assert share.before is None and share.after is not None and share.verdict == "not comparable"
    assert any("periodic GPU stall" in n and "not measured before" in n for n in c.notes)
    rc, out, _ = run(capsys, CPU_ONLY, HEALTHY)
    assert rc == 0
    line = next(ln for ln in out.splitlines() if "periodic GPU stall" in ln)
    assert "not measured" in line and "same" not in line


def test_a_compacted_json_report_compares_like_the_indented_one(tmp_path, capsys):
    # trial finding 18: `python3 -m json.tool --compact r.json` made compare say "holds no frames".
    indented = tmp_path / "r.json"
    assert main(["diagnose", "--replay", IO, "--format", "json", "-o", str(indented)]) == 0
    compact = tmp_path / "c.json"
    compact.write_text(json.dumps(json.loads(indented.read_text()), separators=(",", ":")) + "\n")
    capsys.readouterr()
    assert load_side(str(compact)).figures == load_side(str(indented)).figures
    rc, out, err = run(capsys, str(compact), str(indented))
    assert rc == 0 and err == "" and "holds no frames" not in out


def test_a_plain_recording_named_gz_and_a_report_with_sorted_keys(tmp_path, capsys):
    # trial finding 20: a valid plain recording named x.jsonl.gz was "not a gpuwatch recording"
    # (the name chose gzip, not the bytes); a one-line report with its keys sorted (jq -S -c).
    plain_gz = tmp_path / "x.jsonl.gz"
    plain_gz.write_bytes(Path(IO).read_bytes())
    assert load_side(str(plain_gz)).figures == load_side(IO).figures
    indented = tmp_path / "r.json"
    assert main(["diagnose", "--replay", IO, "--format", "json", "-o", str(indented)]) == 0
    doc = json.loads(indented.read_text())
    sorted_keys = tmp_path / "s.json"
    sorted_keys.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")))
    assert load_side(str(sorted_keys)).kind == "report"
    capsys.readouterr()
    rc, out, err = run(capsys, str(plain_gz), str(sorted_keys))
    assert rc == 0 and err == ""


def test_a_stall_period_measured_as_absent_reads_none_seen(capsys):
    # run 50 (H100): the Lightning job stalled every ~1.4 s; kept workers, it had no stall, and its
    # period read "not measured" beside a stall share measured at 0.0 %
    run50 = ROOT / "bench" / "results" / "2026-12-06-h100" / "run50" / "accuracy"
    before, after = str(run50 / "lightning.jsonl.gz"), str(run50 / "lightning_persistent.jsonl.gz")
    c = compare(load_side(before).figures, load_side(after).figures, before, after)
    assert row(c, "stall_share").after == 0.0 and row(c, "stall_period_s").after is None
    assert row(c, "stall_period_s").absent == (False, True)
    rc, out, _ = run(capsys, before, after)
    line = next(x for x in out.splitlines() if "stall period" in x)
    assert rc == 0 and "none seen" in line and "not measured" not in line, line
    # a run with no GPU utilization read has its stall "not measured", never "none seen"
    c = compare(load_side(before).figures, load_side(CPU_ONLY).figures, before, CPU_ONLY)
    assert load_side(CPU_ONLY).figures.stall_measured is None
    assert row(c, "stall_period_s").absent == (False, False)


def test_one_job_watched_by_its_launcher_and_by_a_rank_is_one_script():
    """An adversarial trial (session 31): one torchrun job watched once by torchrun's PID and once by
    a rank's (nvidia-smi lists the ranks) read "different programs, so they may be different jobs". The command lines are the
    real ones of tests/data/cpu_field/t34_ddp_torchrun.jsonl.gz (its launcher and a rank)."""
    from gpuwatch.compare.diff import command_note
    from gpuwatch.replay import load_frames

    procs = load_frames("tests/data/cpu_field/t34_ddp_torchrun.jsonl.gz")[-1].procs.processes
    launcher = next(p.cmdline for p in procs if p.role == "launcher")
    rank = next(p.cmdline for p in procs if p.role == "main")
    alone = "as its own process (one rank's, or a run without the launcher)"
    assert command_note(launcher, rank) == (f"The runs are the same script (ddp_gloo.py): before under its launcher, "
                                            f"after {alone}.")
    # the --local_rank=N a launcher adds to a rank's arguments is no argument of the job's
    assert command_note(rank + " --local_rank=1", launcher + " --epochs 4") == (
        f"The runs are the same script (ddp_gloo.py): before {alone}, after under its launcher, with other arguments: "
        "after has --epochs 4.")
    # review 40: the script is the word both commands hold (a launcher's option may name a .py file),
    # and its whole path: exp_a/train.py and exp_b/train.py are two scripts
    hooked = launcher.replace("torchrun", "torchrun --rdzv-conf hooks.py")
    assert "same script (ddp_gloo.py)" in command_note(hooked, rank)
    assert "different programs" in command_note("torchrun exp_a/train.py", "python -u exp_b/train.py")
    # another script under the launcher is another program
    assert "different programs" in command_note(launcher.replace("ddp_gloo.py", "other.py"), rank)


def test_the_script_is_the_one_the_process_of_its_own_runs():
    """Review 41: the first ".py" word both commands held named cfg.py "the same script" for train.py
    and other.py; "./train.py" beside "train.py" read as different programs; "--local_rank 0" with a
    space stayed as an argument."""
    from gpuwatch.compare.diff import command_note

    assert "different programs" in command_note("torchrun --nproc_per_node=2 train.py --config cfg.py",
                                                "python other.py --config cfg.py")
    assert command_note("torchrun --nproc_per_node=2 train.py", "python -u ./train.py").startswith(
        "The runs are the same script (./train.py): before under its launcher")
    assert command_note("python -u train.py --local_rank 0 --epochs 3", "deepspeed train.py --epochs 3") == (
        "The runs are the same script (train.py): before as its own process (one rank's, or a run without the "
        "launcher), after under its launcher.")


def test_a_scripts_path_is_normalised_and_a_bare_local_rank_flag_keeps_the_next_argument():
    """Review 42: "python ./train.py" beside "python train.py" read as different programs; a bare
    "--local_rank" took the next argument with it."""
    from gpuwatch.compare.diff import command_note

    assert command_note("python ./train.py --w 2", "python train.py --w 8").startswith(
        "The runs are the same program with other arguments")
    assert command_note("torchrun train.py --lr 1", "python -u train.py --local_rank --lr 1").endswith(
        "with other arguments: after has --local_rank.")


def test_a_script_path_written_two_ways_is_said_as_such():
    """Review 43: "./train.py" beside "train.py" with the same arguments read "its arguments in another
    order"; a config file's path after the script is no script."""
    from gpuwatch.compare.diff import command_note

    assert command_note("python ./train.py --w 2", "python train.py --w 2") == (
        "The runs are the same program, its script's path written differently (before: python ./train.py; after: "
        "python train.py).")
    assert "another order" not in command_note("python train.py -c ./cfg.py", "python train.py -c cfg.py")
