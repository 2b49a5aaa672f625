"""Review 48 (2026-12-07): one story across the TUI, the report, the JSON and the metrics, read on the
fixtures' recordings."""

from __future__ import annotations

from gpuwatch.analysis import Analysis
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames

CHECKPOINT = "tests/data/h200/field_checkpoint.jsonl.gz"
LAUNCH = "bench/results/2026-12-02-h200/acc/launch.jsonl"


def _verdicts(path: str) -> list:
    a = Analysis()
    return [a.update(f) for f in load_frames(path)]


def test_a_gpu_idle_only_while_the_host_saves_checkpoints_is_not_put_on_launches():
    """The H200 checkpoint job (tests/data/h200/README.md): the main thread in the step 50-67 % of its
    samples, the GPU kernel-active 40-62 % with SMs 86 % active while it works. Launch stood "at
    warning level beside the verdict" 39 % of the time, "it meets its thresholds too": its idle time
    is the saves', not the launches'."""
    got = _verdicts(CHECKPOINT)
    assert [x for x in got if x.stage == v.IO]
    assert not [x for x in got if x.stage == v.LAUNCH or v.LAUNCH in x.secondary]
    # the launch scenario's GPU idles while the step runs: still named
    lab = _verdicts(LAUNCH)
    named = [x for x in lab if x.stage == v.LAUNCH]
    assert len(named) >= len(lab) - 3
    rows = [e for e in named[-1].evidence if e.signal == "idle_in_step"]
    assert rows and rows[0].supports and rows[0].value > 0.7, rows
    assert "GPU idle while the main thread is in the step" in rows[0].text


def test_a_gpu_bound_job_already_under_torch_compile_is_not_told_to_use_it():
    """The H100 job compiled with max-autotune (tests/data/h100/README.md) was told "torch.compile for
    kernel fusion" once it trained; 5 of its 24 main-thread samples after the compile were in the
    compiled model's frames (OptimizedModule.__call__, CompiledFxGraph.__call__, AOTAutograd's)."""
    got = _verdicts("tests/data/h100/compile_start.jsonl.gz")
    healthy = [x for x in got if x.stage == v.GPU_BOUND]
    assert len(healthy) >= 20
    for x in healthy:
        said = " ".join(x.remedies)
        assert "torch.compile for kernel fusion" not in said
        assert "the model already runs under torch.compile, as its stack samples show" in said
    # a job whose samples show no compiled model is still told of it (the H200 benchmark job)
    plain = [x for x in _verdicts("tests/data/h200/healthy.jsonl") if x.stage == v.GPU_BOUND]
    assert plain and all("torch.compile for kernel fusion" in " ".join(x.remedies) for x in plain)


def test_a_headline_beside_a_longer_stage_with_no_figure_says_its_claim_is_among_the_figures():
    """t38_mlm (a compute-bound control: its step 98.7 % by its own clock): "Contention cost the job
    most: it held the verdict 14%" beside "Most of the time (83%) the verdict was CPU-bound", whose
    cost has no figure: nothing compared the two."""
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown
    from gpuwatch.report import NOT_RECORDED
    path = "tests/data/cpu_field/t38_mlm.jsonl.gz"
    text = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path,
                                        requested_s=None))
    head = next(line for line in text.splitlines() if line.startswith("**Contention**"))
    assert head.startswith("**Contention** cost the job most of what was estimated: it held the verdict 14% of the time")
    assert "Most of the time (83%), at a cost not estimated, the verdict was CPU-bound" in head
