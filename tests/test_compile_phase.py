"""torch.compile compiling is not a pipeline stage: while the main thread is in the compiler no step
runs, and the verdict says so instead of naming a stage from the compiler's own frames (they read
as "running ops" before, so a job without a GPU was called CPU-bound "mostly in
CppCodeCache.load_async", with torch.compile proposed as its fix).

The recording (tests/data/cpu_field/compile_start.jsonl.gz, README there) is a job watched from its
start on the 2-core CPU VM; its own log says it compiled from 02:58:20 to 02:58:47 (the first step
took 26.7 s, with g++ child processes), then trained. It was made before the compile label existed:
its main-thread samples are labelled again from their frames (tests/relabel.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.collectors.pyspy import ThreadRecord
from gpuwatch.collectors.stack_labels import classify, waits_on_compiler
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import CPU_BOUND, IDLE, LAUNCH
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown
from tests.relabel import frame_of, relabelled, stdlib

RECORDING = "tests/data/cpu_field/compile_start.jsonl.gz"
SITE = "/venv/lib/python3.11/site-packages/"
COMPILE_START = dt.datetime(2026, 12, 6, 2, 58, 20, tzinfo=dt.timezone.utc).timestamp()
COMPILE_END = dt.datetime(2026, 12, 6, 2, 58, 47, tzinfo=dt.timezone.utc).timestamp()


def _where(short: str) -> str:
    return SITE + short if short.startswith(("torch/", "triton/")) else stdlib(short)


def _main(*texts: str, active: bool = True) -> tuple[str, str]:
    frames = tuple(frame_of(t, _where) for t in texts)
    return classify(ThreadRecord(1, 1, "MainThread", active, False, frames), lb.ROLE_MAIN_THREAD)


def test_compiler_frames_are_compiling_and_a_compiled_models_step_is_not():
    # a C++ build under Inductor's async compile (frames from the recording)
    assert _main("Popen.communicate (subprocess.py:1196)", "_run_compile_cmd (torch/_inductor/cpp_builder.py:696)",
                 "CppCodeCache.load_async (torch/_inductor/codecache.py:3786)",
                 "GraphLowering._compile_to_module (torch/_inductor/graph.py:2679)", active=False) == (
        lb.COMPILE, "cpp_builder._run_compile_cmd")
    # AOTAutograd compiles the backward graph lazily, on the first backward: inside Tensor.backward
    assert _main("compile_fx_inner (torch/_inductor/compile_fx.py:700)",
                 "CompiledFunction.backward (torch/_functorch/_aot_autograd/runtime_wrappers.py:2200)",
                 "_engine_run_backward (torch/autograd/graph.py:841)",
                 "Tensor.backward (torch/_tensor.py:623)")[0] == lb.COMPILE
    # Dynamo tracing a frame on a cache miss, with the model's own forward running under it
    assert _main("Linear.forward (torch/nn/modules/linear.py:125)",
                 "InstructionTranslator.run (torch/_dynamo/symbolic_convert.py:1500)",
                 "_compile (torch/_dynamo/convert_frame.py:1100)")[0] == lb.COMPILE
    # a compiled model's step: Dynamo's wrapper, AOTAutograd's runtime wrapper, Inductor's launcher
    step = _main("CompiledFxGraph.__call__ (torch/_inductor/output_code.py:600)",
                 "runtime_wrapper (torch/_functorch/_aot_autograd/runtime_wrappers.py:350)",
                 "_TorchDynamoContext.__call__.<locals>._fn (torch/_dynamo/eval_frame.py:1000)")
    assert step[0] == lb.DISPATCH
    # steps that run through files which also compile: CUDA-graph replay (mode="reduce-overhead"),
    # the compiled graph's call before torch 2.6 (codecache.py), a Triton kernel's launch
    assert _main("cudagraphify.<locals>.run (torch/_inductor/compile_fx.py:1700)",
                 "CompiledFxGraph.__call__ (torch/_inductor/output_code.py:600)")[0] == lb.DISPATCH
    assert _main("CompiledFxGraph.__call__ (torch/_inductor/codecache.py:1200)",
                 "forward (torch/_functorch/_aot_autograd/runtime_wrappers.py:300)")[0] == lb.DISPATCH
    launch = (frame_of("CompiledKernel.launch_metadata (triton/compiler/compiler.py:480)", _where),
              frame_of("JITFunction.run (triton/runtime/jit.py:700)", _where))
    assert classify(ThreadRecord(1, 2, "Dummy-1", True, False, launch), lb.ROLE_OTHER_THREAD)[0] == lb.OTHER
    # Inductor's compile-worker pool keeps a timer thread waiting for as long as the job runs: no compile
    timer = (frame_of("Timer.check (torch/_inductor/compile_worker/timer.py:43)", _where),
             frame_of("Thread.run (threading.py:1010)", _where))
    assert classify(ThreadRecord(1, 2, "subproc_worker_timer", False, False, timer), lb.ROLE_OTHER_THREAD)[0] == lb.OTHER


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    path = relabelled(RECORDING, tmp_path_factory.mktemp("compile") / "compile.jsonl", _where)
    a = Analysis()
    return [(f.wall, a.update(f)) for f in load_frames(path)], path


def test_the_compile_phase_reads_compiling_and_ends_with_it(verdicts):
    vs, _ = verdicts
    said = [(t, v) for t, v in vs if v.sentence.startswith("Compiling, not training")]
    # every "compiling" verdict lies inside the job's own compile (a tick's slack at the end)
    assert said and all(COMPILE_START <= t <= COMPILE_END + 1.0 for t, _ in said)
    assert all(v.stage == IDLE and not v.secondary for _, v in said)
    # from the fourth second of the compile to its end the verdict says so, every tick
    assert all(v.stage == IDLE for t, v in vs if COMPILE_START + 4 <= t <= COMPILE_END)
    # the compiler's frames never make a stage: no CPU-bound "most often in CppCodeCache.load_async"
    assert not any(v.stage in (CPU_BOUND, LAUNCH) for _, v in vs)
    last = said[-1][1]
    assert "torch.compile's compiler holds the main thread 100 % of the time (14 of its last 14 samples)" in last.sentence
    assert any("TORCH_LOGS=recompiles" in r for r in last.remedies)
    # the other processes the job started (g++, cc1plus) are said with their CPU
    assert any("the job's 2 other processes use" in v.sentence for _, v in said)


def test_the_report_says_what_idle_was_where_it_held_most(verdicts):
    _, path = verdicts
    text = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    head = text.split("## Verdict", 1)[1].split("##", 1)[0]
    assert "the verdict was Idle, with no pipeline stage to fix. Compiling, not training" in head
    assert "less cost to the run" not in head
    # the job's exit, the run's last Idle tick, does not stand for the 69 % the compile held
    frames = load_frames(path)
    gone = dataclasses.replace(frames[-1], seq=frames[-1].seq + 1, t=frames[-1].t + 1, wall=frames[-1].wall + 1,
                               target=dataclasses.replace(frames[-1].target, alive=False,
                                                          exit_reason="process 25247 exited"))
    text = render_markdown(build_report(from_frames([*frames, gone]), NOT_RECORDED, "replay", path=path))
    head = text.split("## Verdict", 1)[1].split("##", 1)[0]
    assert "with no pipeline stage to fix. Compiling, not training" in head


def test_a_second_compile_recording_reads_compiling_once_the_samples_show_it(tmp_path):
    """tests/data/field/compile_cpu.jsonl.gz (README there): another job compiling through all its
    16 ticks (Inductor, g++ and cc1plus children). Once three main-thread samples are in, every tick
    says it compiles; none names a stage."""
    path = relabelled("tests/data/field/compile_cpu.jsonl.gz", tmp_path / "c.jsonl", _where)
    a = Analysis()
    vs = [a.update(f) for f in load_frames(path)]
    assert all(v.stage == IDLE and v.sentence.startswith("Compiling, not training") for v in vs[4:])


H100 = "tests/data/h100/compile_start.jsonl.gz"
H100_COMPILE_END = 1796534547.361
"""The job's own marker: its first step (forward and backward compiled, max-autotune) done at
05:22:27.36 UTC, 50.5 s after its compile began (tests/data/h100/README.md)."""


def _h100_where(short: str) -> str:
    return "/opt/torch/.venv/lib/python3.12/site-packages/" + short if short.startswith(
        ("torch/", "triton/", "sympy/")) else "/usr/lib/python3.12/" + short


def test_on_a_gpu_the_backward_compile_on_the_autograd_thread_reads_compiling(tmp_path):
    """On the H100 the forward graph compiled on the main thread (11 s), then the main thread sat
    38 s in ``_engine_run_backward`` while the autograd engine's own thread built the backward
    graph's Triton kernels: "Not enough evidence" then. A main thread waiting in backward while
    another thread of its process compiles is compiling; GPU-bound once the first step is done."""
    # main threads as labelled live (whole stacks); the other threads' compile label came after
    path = relabelled(H100, tmp_path / "h100.jsonl", _h100_where, roles=(lb.ROLE_OTHER_THREAD,))
    a = Analysis()
    vs = [(f.wall, a.update(f)) for f in load_frames(path)]
    compiling = [(t, v) for t, v in vs if v.sentence.startswith("Compiling, not training")]
    assert all(t <= H100_COMPILE_END + 2.0 for t, _ in compiling)
    during = [v for t, v in vs if vs[4][0] <= t <= H100_COMPILE_END]
    assert sum(v.stage == IDLE for v in during) >= 0.9 * len(during), [v.stage for v in during]
    assert any("on Dummy-1; the main thread waits in backward" in v.sentence for _, v in compiling)
    after = [v for t, v in vs if t >= H100_COMPILE_END + 4.0]
    assert after and all(v.stage == "gpu_bound" for v in after)


def test_only_the_autograd_engines_thread_compiling_holds_the_main_threads_backward():
    def st(role, name, label, frames=(), active=False):
        return lb.ThreadStack(pid=1, tid=2 if role != lb.ROLE_MAIN_THREAD else 1, role=role, rank=None,
                              thread_name=name, label=label, detail="x", active=active, owns_gil=False,
                              frames=frames)

    main = st(lb.ROLE_MAIN_THREAD, "MainThread", lb.BACKWARD)
    engine = st(lb.ROLE_OTHER_THREAD, "Dummy-1", lb.COMPILE)
    own = st(lb.ROLE_OTHER_THREAD, "eval-loop", lb.COMPILE, ("compile (triton/compiler/compiler.py:324)",))
    assert waits_on_compiler([main, engine])[0].label == lb.COMPILE
    assert waits_on_compiler([main, own])[0].label == lb.BACKWARD  # the job's own thread compiling its own model
    assert waits_on_compiler([dataclasses.replace(main, active=True), engine])[0].label == lb.BACKWARD
