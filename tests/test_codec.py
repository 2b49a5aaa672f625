"""Every model type survives the trip to JSON and back, Unsupported values included."""

from __future__ import annotations

import json
import math

import pytest

from gpuwatch.model import (
    BlockDevice, CgroupCpu, DataLocation, DiskSample, DumpResult, Evidence, Frame, GpmMetrics,
    GpuProcess, GpuSample, HostSample, OtherProc, PcieSample, ProcInfo, ProcsSample, Psi,
    StackSample, Stall, TargetInfo, ThreadCpu, ThreadStack, Unsupported, Verdict,
)
from gpuwatch.model.codec import DecodeError, from_dict, to_dict


def full_frame() -> Frame:
    gpu = GpuSample(
        t=10.0, index=0, uuid="GPU-1", name="NVIDIA H200", used_by_target=True,
        util_gpu=100.0, util_mem=24.0, util_trace=((1.0, 100.0), (1.2, 99.0)),
        mem_used=10 << 30, mem_total=143 << 30, temp_c=45.0, power_w=600.0, power_limit_w=700.0,
        sm_clock_mhz=1448.0, sm_clock_max_mhz=1980.0, mem_clock_mhz=3201.0, mem_clock_max_mhz=3201.0,
        clock_reasons=4, throttle=(("sw_power_cap", 0.9),),
        gpm=GpmMetrics(window_s=1.0, gr_engine=100.0, sm_active=96.6, sm_occupancy=14.3, tensor=93.8,
                       dram_bw=17.2, pcie_rx_mibs=13.0, pcie_tx_mibs=Unsupported("field not supported")),
        processes=(GpuProcess(pid=7, local_pid=None, name="python", used_memory=1 << 30,
                              sm_util=Unsupported("no samples"), is_target=True),),
    )
    procs = ProcsSample(t=10.0, usable_cpus=16, processes=(
        ProcInfo(pid=7, ppid=1, role="main", rank=None, main_pid=None, name="python", cmdline="python t.py",
                 cpu_pct=99.0, state="R", rss=1 << 30, num_threads=40, read_bps=0.0,
                 write_bps=Unsupported("denied"), run_delay_frac=0.01,
                 threads=(ThreadCpu(7, "python", 99.0, "R"),), affinity=(0, 1)),
    ))
    return Frame(
        seq=3, t=10.0, wall=1.7e9, interval=1.0, target=TargetInfo(pid=7, cmdline="python t.py", alive=True),
        gpus=(gpu,),
        pcie=(PcieSample(t=10.0, index=0, gen_current=5, gen_max=5, width_current=16, width_max=16,
                         rx_bps=1e9, tx_bps=0.0, capacity_bps=63e9, replay_delta=0),),
        disk=DiskSample(t=10.0, devices=(BlockDevice("vda", 3.0, 1e6, 0.0, 10.0, 0.0, Unsupported("n/a")),),
                        locations=(DataLocation("cwd", "/w", "/", "vda", "ext4", False, 0),), target_read_bps=1e6),
        procs=procs,
        host=HostSample(t=10.0, cpu_count=16, cpu_pct=40.0, steal_pct=0.0, iowait_pct=1.0, load1=3.0,
                        mem_total=1 << 37, mem_available=1 << 36, swap_used=0, swap_in_bps=0.0, swap_out_bps=0.0,
                        psi=Psi(1.0, 2.0, 0.5, 0.0, 0.0), cgroup=CgroupCpu(2, Unsupported("no quota"), 0.0, 0),
                        top_others=(OtherProc(99, "hog", 100.0),)),
        stacks=StackSample(t=10.0, threads=(
            ThreadStack(pid=7, tid=7, role="main", rank=None, thread_name="MainThread", label="data_wait",
                        detail="Queue.get", active=False, owns_gil=False, frames=("get (queue.py:1)",)),),
            dumps=(DumpResult(pid=7, ok=True, ms=6.0),)),
    )


def test_frame_round_trips_through_json():
    frame = full_frame()
    text = json.dumps(to_dict(frame), allow_nan=False)
    back = from_dict(Frame, json.loads(text))
    assert back == frame
    assert back.gpus[0].gpm.pcie_tx_mibs == Unsupported("field not supported")
    assert back.gpus[0].util_trace == ((1.0, 100.0), (1.2, 99.0))


def test_whole_sections_can_be_unsupported():
    frame = full_frame()
    from dataclasses import replace

    f2 = replace(frame, gpus=Unsupported("NVML unavailable: libnvidia-ml.so.1 not found"))
    back = from_dict(Frame, json.loads(json.dumps(to_dict(f2))))
    assert back.gpus == Unsupported("NVML unavailable: libnvidia-ml.so.1 not found")


def test_verdict_round_trips():
    v = Verdict(t=1.0, stage="decode", confidence=0.8, sentence="s",
                evidence=(Evidence("decode", "wait", 0.6, 0.2, ">=", True, "main waits 60 %"),),
                secondary=("io",), speedup=2.5, remedies=("more workers",),
                levels=(("io", "warning"), ("decode", "bottleneck")), stall=Stall(2.0, 0.4, "checkpoint"))
    assert from_dict(Verdict, to_dict(v)) == v


def test_nan_is_written_as_null_and_read_back_as_nan():
    d = to_dict(float("nan"))
    assert d is None
    assert math.isnan(from_dict(GpmMetrics, {**to_dict(full_frame().gpus[0].gpm), "gr_engine": None}).gr_engine)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("seq"), "missing field 'seq'"),
    (lambda d: d.__setitem__("seq", "three"), "expected an integer"),
    (lambda d: d["target"].__setitem__("alive", "yes"), "expected true or false"),
])
def test_bad_frames_name_the_problem(mutate, message):
    d = to_dict(full_frame())
    mutate(d)
    with pytest.raises(DecodeError, match=message):
        from_dict(Frame, d)


def test_non_finite_numbers_are_written_as_null_and_huge_ones_refused_on_read():
    import math

    from gpuwatch.model.codec import DecodeError, from_dict, to_dict

    assert to_dict([math.inf, -math.inf, math.nan, 1.5]) == [None, None, None, 1.5]
    f = to_dict(full_frame())
    f["interval"] = 1e308  # finite, but the first sum or rate over it would overflow
    with pytest.raises(DecodeError, match="interval: 1e\\+308 is out of range"):
        from_dict(Frame, f)


@pytest.mark.parametrize("name", ["frame", "unsupported_gpus", "nan", "verdict", "scalars"])
def test_to_json_writes_what_to_dict_and_json_dumps_write(name):
    """The --json stream's line writer (codec.to_json) gives the very bytes of the dict route,
    non-finite numbers (null) and Unsupported markers included."""
    from dataclasses import replace

    from gpuwatch.model.codec import to_json

    frame = full_frame()
    obj = {
        "frame": frame,
        "unsupported_gpus": replace(frame, gpus=Unsupported("NVML unavailable")),
        "nan": replace(frame, interval=math.nan, gpus=(replace(frame.gpus[0], power_w=math.inf),)),
        "verdict": Verdict(t=1.0, stage="decode", confidence=0.8, sentence="s \u00e9\n\"q\"",
                           evidence=(Evidence("decode", "wait", None, 0.2, ">=", True, "w"),), secondary=(),
                           speedup=None, remedies=(), levels=(("io", "warning"),)),
        "scalars": {"a": [1, 2.5, -math.inf, None, True, "x"], "b": (Stall(2.0, 0.4, None),)},
    }[name]
    assert to_json(obj) == json.dumps(to_dict(obj), separators=(",", ":"), allow_nan=False)


def test_to_json_refuses_what_json_cannot_write():
    from gpuwatch.model.codec import to_json

    with pytest.raises(TypeError):
        to_json({"a": {1, 2}})


def test_an_older_recordings_job_exit_reads_in_words_not_the_exception_name():
    """Recordings made before the collectors said the job's end in words carry
    "procs: TargetGone: process 1289 exited" (run25, field): replayed, the processes panel, the
    host line and the report showed the exception's name and the field's key."""
    from pathlib import Path

    from gpuwatch.model.values import Unsupported
    from gpuwatch.replay import load_frames

    rec = Path(__file__).parent / "data" / "h200" / "run25_imagefolder_persistent.jsonl.gz"
    frames = load_frames(str(rec))
    reasons = [getattr(f, name).reason for f in frames for name in ("procs", "disk", "stacks", "host")
               if isinstance(getattr(f, name), Unsupported)]
    assert reasons and not [r for r in reasons if "TargetGone" in r or r.startswith(("procs:", "disk:"))]
    assert frames[-1].procs.reason == "the job's processes: the job exited (process 1289)"
    assert from_dict(Frame, {**to_dict(frames[-1]), "disk": {"unsupported": "disk: TargetGone: process no longer "
                                                              "exists (pid=7)"}}).disk.reason == \
        "disk activity: the job exited (process 7)"  # psutil's words too (review 46)
