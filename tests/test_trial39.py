"""Trial 39: real CPU recordings of new training jobs (tests/data/cpu_field/README.md, t39_*), each
with its own clock and the tester's A/B runs without gpuwatch. Each test reads what a user is told
against what the job's clock and its fixes showed."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

DATA = Path(__file__).parent / "data" / "cpu_field"


def _got(name: str):
    path = str(DATA / f"{name}.jsonl.gz")
    got = from_frames(load_frames(path))
    return got, build_report(got, NOT_RECORDED, "replay", path=path)


def test_workers_filling_the_steps_cpus_give_a_floor_not_a_ceiling():
    """t39_npz_reopen read "up to 3.50x while it holds"; loading the array once ran it 51x faster by
    its clock. Its workers fill the 2 CPUs its step runs on: a cheaper input gives the step CPU too,
    so each figure is a floor, said with that reason (not the samples')."""
    got, r = _got("t39_npz_reopen")
    decode = [x for x in got.verdicts if x.stage == v.DECODE and x.speedup is not None]
    assert decode and all(x.speedup_floor and x.speedup_floor_cpus for x in decode)
    assert r.summary.stage == v.DECODE and r.summary.speedup_floor and r.summary.speedup_floor_cpus
    md = render_markdown(r)
    assert "faster or more, as its input takes the CPUs the step runs on too" in md
    assert "up to" not in md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "as the input takes the step's CPUs too" in md


def test_an_optimizer_bound_cpu_step_is_told_of_foreach_and_fewer_groups():
    """t39_optim_loop: the single-tensor AdamW over ~200 groups with clipping and averaging loops took
    53 % of the job by its clock; it was told only "torch.compile, channels_last". Where the
    optimizer is the largest part of the main thread's work, the remedy names it."""
    got, r = _got("t39_optim_loop")
    said = [t for x in got.verdicts if x.stage == v.CPU_BOUND for t in x.remedies]
    opt = [t for t in said if t.startswith("The optimizer step is the largest part of the main thread's work")]
    assert opt and all("adam._single_tensor_adam" in t and "foreach=True" in t for t in opt)
    assert any(t.startswith("The optimizer step") for rem in r.remedies if rem.stage == v.CPU_BOUND
               for t in [rem.text])
    assert all("channels_last for a conv net" in t for t in said if t.startswith("The main thread's compute"))


def test_python_loops_on_the_main_thread_are_told_to_get_cheaper_and_threads_only_where_set_lower():
    """t39_main_aug: a Cutout in Python loops on the main thread (56 % by its clock) was told
    "torch.set_num_threads to the usable cores", already the default, and "off the main thread",
    which ran it 1.0x on a quiet 2-CPU host; tensor slices ran it 2.2x."""
    got, _ = _got("t39_main_aug")
    said = [t for x in got.verdicts if x.stage == v.CPU_BOUND for t in x.remedies
            if t.startswith("The main thread's compute")]
    assert said and any("cutout_ (job_main_aug.py:" in t for t in said)
    for t in said:
        assert "make it cheaper (tensor ops in place of Python loops over elements)" in t
        assert "move it off the main thread where a CPU is free" in t
        assert "torch.set_num_threads to the usable cores," not in t
        assert ("set_num_threads" not in t or "torch.set_num_threads up to the usable cores if torch.get_num_threads() "
                "is lower" in t)


def test_the_validation_remedy_does_not_tell_a_job_to_do_what_it_may_already_do():
    """Trial 39: "validate ... under torch.no_grad() or torch.inference_mode()" was said to a job
    whose evaluate() already ran under torch.no_grad(), which stack samples cannot show. H200
    field_imagefolder_epochs validates 37 % of its time: its remedy says it as a condition."""
    path = Path(__file__).parent / "data" / "h200" / "field_imagefolder_epochs.jsonl.gz"
    said = [t for x in from_frames(load_frames(str(path))).verdicts for t in x.remedies
            if t.startswith("Validation passes take")]
    assert said and all("and, if it does not already, under torch.no_grad() or torch.inference_mode() (stack "
                        "samples do not show it)" in t for t in said)
