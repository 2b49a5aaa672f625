"""The report's pass / warn / fail checks, each on a constructed situation.

GPU numbers are the H200 measurements of /work/shared/docs/h200-signatures.md (driver 580.159.04,
PCIe Gen5 x16, GPM PCIe RX of pinned H2D 56,509 MiB/s, pageable 6,608 MiB/s); the link capacity is
the derived 63.04 GB/s of a Gen5 x16 link (signals.md section 1.4, DCGM's per-lane figure). Other
values are synthetic situations.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuwatch.collectors.environment import (
    CgroupEnv, CpuEnv, DriverInfo, Environment, GpuEnv, PtraceEnv, StorageEnv, TargetEnv,
)
from gpuwatch.model import (
    BlockDevice, CgroupCpu, DataLocation, DiskSample, DumpResult, Frame, GpuProcess, GpuSample,
    HostSample, PcieSample, ProcInfo, ProcsSample, StackSample, TargetInfo, ThreadStack, Unsupported,
    Verdict,
)
from gpuwatch.model.host import NO_CPU_QUOTA
from gpuwatch.model.verdict import MORE_WORKERS, PERSISTENT_WORKERS, PIPELINE, FixGain
from gpuwatch.report.checks import run_checks
from gpuwatch.report.checks_gpu import check_other_processes
from gpuwatch.report.model import FAIL, NOT_CHECKED, PASS, WARN

GEN5_X16_BPS = 3.94e9 * 16
PINNED_BPS = 56509 * 2**20
PAGEABLE_BPS = 6608 * 2**20
NO_NVML = "NVML library (libnvidia-ml.so.1) not found: install the NVIDIA driver"


def proc(pid: int, role: str, affinity=tuple(range(16)), cpu_pct=50.0, main=100) -> ProcInfo:
    return ProcInfo(pid=pid, ppid=1 if role == "main" else main, role=role, rank=None,
                    main_pid=None if role == "main" else main, name="python" if role == "main" else "pt_data_worker",
                    cmdline="python train.py", cpu_pct=cpu_pct, state="S", rss=1 << 28, num_threads=4,
                    read_bps=0.0, write_bps=0.0, run_delay_frac=0.0, threads=(), affinity=affinity)


def make_frame(seq: int, *, util=95.0, gen=5, width=16, rx=1e9, others=(), throttle=(("sw_power_cap", 0.5),),
               workers=2, usable=16, swap_in=0.0, fstype="ext4", network=False, main_label="sync",
               stacks=True, gpus: object = None, quota=None, throttled=0.0, affinity=tuple(range(16)),
               alive=True, worker_cpu=50.0) -> Frame:
    t = 100.0 + seq
    gpu = GpuSample(
        t=t, index=0, uuid="GPU-0", name="NVIDIA H200", used_by_target=True, util_gpu=util, util_mem=10.0,
        util_trace=(), mem_used=20 << 30, mem_total=141 << 30, temp_c=50.0, power_w=500.0, power_limit_w=700.0,
        sm_clock_mhz=1980.0, sm_clock_max_mhz=1980.0, mem_clock_mhz=3201.0, mem_clock_max_mhz=3201.0,
        clock_reasons=4, throttle=throttle, gpm=Unsupported("GPM off in this test"),
        processes=(GpuProcess(100, 100, "python", 18 << 30, 90.0, True),) + tuple(others),
    )
    pcie = PcieSample(t=t, index=0, gen_current=gen, gen_max=5, width_current=width, width_max=16, rx_bps=rx,
                      tx_bps=0.0, capacity_bps=GEN5_X16_BPS, replay_delta=0)
    procs = ProcsSample(t=t, usable_cpus=usable, processes=(proc(100, "main", affinity),)
                        + tuple(proc(200 + i, "worker", affinity, worker_cpu) for i in range(workers)))
    host = HostSample(t=t, cpu_count=16, cpu_pct=30.0, steal_pct=0.0, iowait_pct=0.0, load1=2.0,
                      mem_total=64 << 30, mem_available=32 << 30, swap_used=0, swap_in_bps=swap_in,
                      swap_out_bps=0.0, psi=Unsupported("no PSI"),
                      cgroup=CgroupCpu(2, quota if quota is not None else NO_CPU_QUOTA, throttled, 0),
                      top_others=())
    disk = DiskSample(t=t, devices=(BlockDevice("nvme0n1", 5.0, 1e6, 0.0, 10.0, 0.0, 0.2),),
                      locations=(DataLocation("data", "/data/imagenet", "/data", "nvme0n1", fstype, network, 8),),
                      target_read_bps=1e6)
    st = StackSample(t=t, threads=(
        ThreadStack(100, 100, "main", None, "MainThread", main_label, "", True, True, ("step (train.py:10)",)),
    ), dumps=(DumpResult(100, True, 6.0),)) if stacks else Unsupported("stack sampling is off (--no-stacks)")
    return Frame(seq=seq, t=t, wall=1.8e9 + seq, interval=1.0,
                 target=TargetInfo(100, "python train.py", alive, None if alive else "process 100 exited"),
                 gpus=(gpu,) if gpus is None else gpus, pcie=(pcie,) if gpus is None else gpus,
                 disk=disk, procs=procs, host=host, stacks=st)


def verdict(t: float, stage="gpu_bound", confidence=0.8, speedup=None, remedies=(), evidence=(), stall=None) -> Verdict:
    return Verdict(t=t, stage=stage, confidence=confidence, sentence=f"{stage} sentence", evidence=evidence,
                   secondary=(), speedup=speedup, remedies=remedies,
                   levels=tuple((s, "ok") for s in PIPELINE), stall=stall)


def make_env(numa_node=0, affinity=tuple(range(16)), nodes=((0, tuple(range(8))), (1, tuple(range(8, 16)))),
             ecc=(0, 0), gpus: object = None, storage=None, ptrace_ok=True) -> Environment:
    gpu = GpuEnv(index=0, name="NVIDIA H200", uuid="GPU-0", pci_bus_id="0000:17:00.0", pcie_gen_max=5,
                 pcie_width_max=16, pcie_gen_now=5, pcie_width_now=16, persistence_mode=True, mig_enabled=False,
                 ecc_enabled=True, ecc_uncorrected_volatile=ecc[0], ecc_uncorrected_aggregate=ecc[1],
                 numa_node=numa_node, numa_source="sysfs", local_cpus=Unsupported("not in this test"),
                 used_by_target=True)
    return Environment(
        wall=1.8e9, hostname="h", kernel="6.8",
        driver=DriverInfo("580.159.04", "13.580.159.04", "13.0") if gpus is None else gpus,
        gpus=(gpu,) if gpus is None else gpus,
        cpus=CpuEnv(16, nodes),
        target=TargetEnv(100, "python train.py", affinity, (0,), 1, 2),
        ptrace=PtraceEnv(1, ptrace_ok, True, ptrace_ok, "ok" if ptrace_ok else
                         "kernel.yama.ptrace_scope is 1 and gpuwatch lacks CAP_SYS_PTRACE: run as root"),
        cgroup=CgroupEnv(2, "/job", None, None),
        storage=storage if storage is not None else (StorageEnv("cwd", "/home/u", "/", "ext4", "/dev/nvme0n1p1", False, False, 0),),
    )


def checks_of(frames, verdicts=None, env=None) -> dict:
    verdicts = verdicts if verdicts is not None else [verdict(f.t) for f in frames]
    return {c.id: c for c in run_checks(frames, verdicts, make_env() if env is None else env)}


def test_healthy_gpu_job_passes_everything():
    frames = [make_frame(i) for i in range(10)]
    c = checks_of(frames)
    assert {k: v.status for k, v in c.items()} == {
        "pcie_link": PASS, "other_gpu_processes": PASS, "throttling": PASS, "pageable_h2d": PASS, "ecc": PASS,
        "workers_vs_cores": PASS, "cpu_quota": PASS, "swap": PASS, "network_fs": PASS, "numa": WARN, "stacks": PASS,
    }
    assert "Gen5 x16 = maximum in all 10 loaded ticks" in c["pcie_link"].reason
    assert c["pageable_h2d"].reason == "copies dominated no tick of 10"  # not "only 0 of 10 ticks"
    assert "SW power cap 50% of the time (normal" in c["throttling"].reason


def test_two_cpus_and_eight_workers_warns_more_workers_than_cores():
    c = checks_of([make_frame(i, workers=8, usable=2) for i in range(5)])["workers_vs_cores"]
    assert c.status == WARN
    assert c.reason.startswith("more workers than cores: 8 DataLoader workers for 1 training process on 2 usable CPUs")
    assert "num_workers to at most 2 (the CPUs it may use; 1 leaves each training process a core of its own)" in c.fix


def test_cpu_quota_counts_as_the_cores_the_workers_get():
    c = checks_of([make_frame(i, workers=6, usable=16, quota=4.0, worker_cpu=70.0) for i in range(3)])["workers_vs_cores"]
    assert c.status == WARN and "a CPU quota of 4 cores" in c.reason


def test_more_workers_than_cores_that_do_not_compute_pass_and_say_why():
    # Review 30: two CPU ranks with 2 workers each at 0.01 core on 2 CPUs were told "lower num_workers
    # to at most 2" (they had 2 each) while rank 1 waited on its workers: workers that sleep or wait
    # on a service take no CPU from anyone. Workers at 0.05 core, no thread queued: a pass, with why.
    c = checks_of([make_frame(i, workers=8, usable=2, worker_cpu=5.0) for i in range(5)])["workers_vs_cores"]
    assert c.status == PASS and not c.fix
    assert c.reason.startswith("more workers than cores (8 DataLoader workers for 1 training process on 2 usable "
                               "CPUs), but they do not compete for them: the workers use 0.40 core together"), c.reason
    assert "under 80% of the CPUs" in c.reason
    assert "ready to run with no CPU free (under 0.10; 0 of 5 ticks at or over it)" in c.reason
    # queued for a CPU in 2 of its 5 ticks: they compete part of the run, which the middle
    # readings alone passed (review 31)
    frames = [make_frame(i, workers=8, usable=2, worker_cpu=5.0) for i in range(5)]
    queued = [replace(f, procs=replace(f.procs, processes=tuple(replace(p, run_delay_frac=0.5) for p in f.procs.processes)))
              if i in (1, 3) else f for i, f in enumerate(frames)]
    assert checks_of(queued)["workers_vs_cores"].status == WARN


def test_several_training_processes_are_told_each_loaders_share_of_the_cpus():
    def two_ranks(seq: int) -> Frame:
        f = make_frame(seq, workers=0, usable=4)
        mains = (proc(100, "main"), proc(101, "main"))
        workers = tuple(proc(200 + i, "worker", cpu_pct=90.0, main=100 + i % 2) for i in range(8))
        return replace(f, procs=replace(f.procs, processes=mains + workers))
    c = checks_of([two_ranks(i) for i in range(5)])["workers_vs_cores"]
    assert c.status == WARN and "8 DataLoader workers for 2 training processes on 4 usable CPUs" in c.reason
    assert c.fix == ("lower num_workers to at most 2 in each of the 2 training processes, which share the CPUs, "
                     "or give the job more CPUs")


def test_far_fewer_workers_warns_only_when_loading_holds_the_gpu_back():
    frames = [make_frame(i, workers=1, usable=32) for i in range(10)]
    assert checks_of(frames)["workers_vs_cores"].status == PASS
    decode = [verdict(f.t, stage="decode") for f in frames]
    c = checks_of(frames, decode)["workers_vs_cores"]
    assert c.status == WARN and c.reason.startswith("far fewer workers than cores") and "100%" in c.reason
    assert "while loading data held the job back" in c.reason  # a CPU-only job has no GPU to hold back


def test_far_fewer_workers_is_no_warning_where_the_wait_is_their_start_up():
    # a loader whose wait is its workers' start-up proposes keeping them (persistent workers), not
    # more of them: this check had added "raise num_workers toward 15" beside it (review 28, run 50's
    # Lightning job: 4 workers re-created every epoch on 16 CPUs, idle at 0.05 core each)
    frames = [make_frame(i, workers=1, usable=32) for i in range(10)]
    keep = FixGain(PERSISTENT_WORKERS, 1.2, "the sets' start-up")
    starting = [replace(verdict(f.t, stage="decode"), gains=(keep,)) for f in frames]
    assert checks_of(frames, starting)["workers_vs_cores"].status == PASS
    more = [replace(v, gains=(keep, FixGain(MORE_WORKERS, 1.8, "more workers"))) for v in starting]
    c = checks_of(frames, more)["workers_vs_cores"]
    assert c.status == WARN and c.fix.startswith("raise num_workers toward ")
    # half the loading ticks propose more workers: enough to warn, and the reason says the time
    # loading held the job back, all of it, not only the ticks that proposed more
    half = starting[:5] + more[5:]
    c = checks_of(frames, half)["workers_vs_cores"]
    assert c.status == WARN and "while loading data held the job back 100% of the time" in c.reason, c.reason


def test_data_on_a_network_file_system_warns():
    c = checks_of([make_frame(i, fstype="nfs4", network=True) for i in range(3)])["network_fs"]
    assert c.status == WARN
    assert c.reason == "the data is on a network file system: nfs4 at /data (/data/imagenet)"


def test_link_downgraded_under_load_fails():
    c = checks_of([make_frame(i, gen=3, width=8) for i in range(6)])["pcie_link"]
    assert c.status == FAIL
    assert c.reason.startswith("Gen3 x8 instead of Gen5 x16 in 100% of 6 loaded ticks")


def test_link_lowered_only_while_idle_is_not_blamed():
    frames = [make_frame(i, util=95.0) for i in range(5)] + [make_frame(5 + i, util=0.0, gen=1) for i in range(5)]
    assert checks_of(frames)["pcie_link"].status == PASS
    idle = [make_frame(i, util=0.0, gen=1) for i in range(5)]
    c = checks_of(idle)["pcie_link"]
    assert c.status == NOT_CHECKED and "never >= 50 % busy" in c.reason


def test_a_brief_downgrade_under_load_warns():
    frames = [make_frame(i) for i in range(9)] + [make_frame(9, gen=4)]
    c = checks_of(frames)["pcie_link"]
    assert c.status == WARN and "in 10% of 10 loaded ticks" in c.reason


def test_other_process_using_the_sms_fails_and_one_holding_memory_warns():
    hog = GpuProcess(999, None, "other_job", 30 << 30, 40.0, False)
    c = checks_of([make_frame(i, others=(hog,)) for i in range(4)])["other_gpu_processes"]
    assert c.status == FAIL and "PID 999 (other_job) on GPU 0: 40 % SM, 30.0 GiB" in c.reason
    idle = GpuProcess(998, None, "notebook", 2 << 30, Unsupported("no samples"), False)
    c = checks_of([make_frame(i, others=(idle,)) for i in range(4)])["other_gpu_processes"]
    assert c.status == WARN and "SM use unknown" in c.reason


def test_the_jobs_own_exited_process_is_not_another_tenant():
    """The H200 field recording (tests/data/h200/field_imagefolder_epochs.jsonl.gz, 2026-12-03) ends
    on a tick where the job had exited and the driver still listed its main process, PID 559, which
    the collector of then marked as not the job's: the check warned of "PID 559 (python3)", the job."""
    from gpuwatch.replay import load_frames

    frames = list(load_frames("tests/data/h200/field_imagefolder_epochs.jsonl.gz"))
    last = frames[-1].gpus[0].processes
    assert [(p.pid, p.is_target) for p in last] == [(559, False)] and frames[-1].target.pid == 559
    c = check_other_processes(frames, make_env())
    assert c.status == PASS and c.reason == f"only the job's processes over {len(frames)} ticks"
    # a stranger beside it is still named
    hog = GpuProcess(999, None, "other_job", 30 << 30, 40.0, False)
    c = checks_of([make_frame(i, others=(hog,)) for i in range(4)])["other_gpu_processes"]
    assert c.status == FAIL and "PID 999" in c.reason


def test_thermal_slowdown_fails_power_cap_alone_passes():
    hot = (("sw_power_cap", 0.1), ("hw_thermal", 0.3))
    c = checks_of([make_frame(i, throttle=hot) for i in range(4)])["throttling"]
    assert c.status == FAIL and c.reason.startswith("slowed down 30% of the time")
    capped = (("sw_power_cap", 1.0), ("hw_thermal", 0.0))
    assert checks_of([make_frame(i, throttle=capped) for i in range(4)])["throttling"].status == PASS


def test_throttle_falls_back_to_the_reason_bits():
    frames = [replace(f, gpus=(replace(f.gpus[0], throttle=Unsupported("no counters"), clock_reasons=0x40),))
              for f in (make_frame(i) for i in range(3))]
    assert checks_of(frames)["throttling"].status == FAIL


def test_pageable_copies_warn_with_the_link_fraction():
    frames = [make_frame(i, util=14.0, rx=PAGEABLE_BPS, main_label="h2d") for i in range(5)]
    c = checks_of(frames, [verdict(f.t, stage="h2d") for f in frames])["pageable_h2d"]
    assert c.status == WARN
    assert "RX ran at 6.9 GB/s = 11% of the link's 63 GB/s" in c.reason
    assert "pin_memory=True" in c.fix


def test_pinned_copies_at_link_speed_pass():
    frames = [make_frame(i, util=100.0, rx=PINNED_BPS, main_label="h2d") for i in range(5)]
    c = checks_of(frames)["pageable_h2d"]  # verdicts say gpu_bound: the main thread's stacks alone count
    assert c.status == PASS and "59.3 GB/s = 94% of the link" in c.reason


def test_swap_activity():
    frames = [make_frame(i, swap_in=50 * 2**20 if i < 3 else 0.0) for i in range(10)]
    c = checks_of(frames)["swap"]
    assert c.status == FAIL and c.reason == "swapping in 3 of 10 ticks, up to 52.4 MB/s"
    assert checks_of([make_frame(0, swap_in=2 * 2**20)] + [make_frame(i) for i in range(1, 20)])["swap"].status == WARN


def test_cgroup_cpu_throttling():
    assert checks_of([make_frame(i, throttled=0.3) for i in range(3)])["cpu_quota"].status == FAIL


def test_numa_job_on_the_far_node_fails_pinned_passes():
    far = make_env(numa_node=1, affinity=tuple(range(8)))
    c = checks_of([make_frame(i) for i in range(2)], env=far)["numa"]
    assert c.status == FAIL and c.reason == "GPU 0 is on node 1 (CPUs 8-15) but the job runs only on CPUs 0-7"
    assert "numactl --cpunodebind" in c.fix
    near = make_env(numa_node=1, affinity=tuple(range(8, 16)))
    assert checks_of([make_frame(0)], env=near)["numa"].status == PASS
    one_node = make_env(nodes=((0, tuple(range(16))),))
    assert checks_of([make_frame(0)], env=one_node)["numa"].reason == "the host has one NUMA node: nothing to mismatch"
    # no GPU seen (NVML missing on a CPU host): no GPU's node to be on, so no PASS (trial 26)
    cpu_host = replace(one_node, gpus=Unsupported("NVML library (libnvidia-ml.so.1) not found"))
    c = checks_of([make_frame(0)], env=cpu_host)["numa"]
    assert c.status == NOT_CHECKED and "NVML" in c.reason


def test_numa_unknown_on_the_gpu_is_not_checked_with_the_reason():
    env = make_env(numa_node=Unsupported("NUMA node: not supported on this GPU or driver (NVML: Not Supported); "
                                         "sysfs numa_node is -1"))
    c = checks_of([make_frame(0)], env=env)["numa"]
    assert c.status == NOT_CHECKED and "sysfs numa_node is -1" in c.reason


def test_ecc_errors():
    assert checks_of([make_frame(0)], env=make_env(ecc=(2, 5)))["ecc"].status == FAIL
    c = checks_of([make_frame(0)], env=make_env(ecc=(0, 5)))["ecc"]
    assert c.status == WARN and c.reason == "GPU 0: 5 over its life"


def test_stacks_denied_by_ptrace_fails_with_the_reason():
    frames = [make_frame(i, stacks=False) for i in range(2)]
    frames = [replace(f, stacks=Unsupported("py-spy: Permission denied")) for f in frames]
    c = checks_of(frames, env=make_env(ptrace_ok=False))["stacks"]
    assert c.status == FAIL and "ptrace_scope is 1" in c.reason


def test_cpu_only_job_lists_every_gpu_check_as_not_checked_with_why():
    nvml_gone = Unsupported(NO_NVML)
    frames = [make_frame(i, gpus=nvml_gone) for i in range(4)]
    env = make_env(gpus=nvml_gone)
    c = checks_of(frames, env=env)
    for cid in ("pcie_link", "other_gpu_processes", "throttling", "pageable_h2d", "ecc", "numa"):
        assert c[cid].status == NOT_CHECKED, cid
        assert c[cid].reason == NO_NVML, cid
    assert c["workers_vs_cores"].status == PASS and c["swap"].status == PASS


@pytest.mark.parametrize("env", [Unsupported("a recording holds frames only")])
def test_replay_without_environment_still_runs_the_frame_checks(env):
    frames = [make_frame(i, gen=3) for i in range(4)]
    c = {x.id: x for x in run_checks(frames, [verdict(f.t) for f in frames], env)}
    assert c["pcie_link"].status == FAIL
    assert c["numa"].status == NOT_CHECKED and c["numa"].reason == "a recording holds frames only"
    assert c["ecc"].status == NOT_CHECKED


def test_gpus_the_job_does_not_use_are_not_judged():
    """A CPU job on a GPU host: another tenant's process and a slow idle link are not its problem."""
    hog = GpuProcess(999, None, "other_job", 30 << 30, 40.0, False)
    frames = [make_frame(i, gen=3, others=(hog,)) for i in range(3)]
    frames = [replace(f, gpus=(replace(f.gpus[0], used_by_target=False, processes=(hog,)),)) for f in frames]
    env = make_env()
    env = replace(env, gpus=(replace(env.gpus[0], used_by_target=False),))
    c = checks_of(frames, env=env)
    for cid in ("pcie_link", "other_gpu_processes", "throttling", "pageable_h2d", "ecc", "numa"):
        assert c[cid].status == NOT_CHECKED and c[cid].reason.startswith("the job used no GPU while watched"), cid


def test_stacks_turned_off_is_not_checked_and_other_reasons_warn():
    off = [make_frame(i, stacks=False) for i in range(2)]
    assert checks_of(off)["stacks"].status == NOT_CHECKED
    missing = [replace(f, stacks=Unsupported("stacks off: py-spy not found")) for f in off]
    c = checks_of(missing)["stacks"]
    assert c.status == WARN and c.reason == "stacks off: py-spy not found"
    assert checks_of([])["stacks"].status == NOT_CHECKED


def test_pinned_copy_check_does_not_ask_to_pin_what_the_loader_already_pins():
    """The H200 Lightning job pins its batches (pt_data_pin) yet its copies ran at ~1 % of the link:
    the check says the loader pins and points at the copy itself, as the PCIe remedy does, instead of
    asking for pin_memory=True, which is already on."""
    from pathlib import Path

    from gpuwatch.analysis import Analysis
    from gpuwatch.model.values import Unsupported
    from gpuwatch.replay import load_frames
    from gpuwatch.report.checks_gpu import check_pageable_copies

    path = Path(__file__).parent / "data" / "h200" / "field_lightning.jsonl.gz"
    frames = list(load_frames(str(path)))
    analysis = Analysis()
    verdicts = [analysis.update(f) for f in frames]
    result = check_pageable_copies(frames, verdicts, Unsupported("recording"))
    assert "pin-memory thread runs" in result.reason, result
    assert "pin_memory=True" not in (result.fix or ""), result


def test_a_stack_read_that_found_the_job_gone_is_no_gap_and_the_tui_drops_the_fields_name():
    """Review 30: "Not checked: Python stacks (py-spy) (1 tick). Why: stacks: process 559 exited" on the
    H200 recording of a job that exited (the gaps' edge pattern missed the reason with its number read
    as N); and the TUI said "Stacks N/A: stacks: ..."."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gaps import collect_gaps
    from gpuwatch.tui import format as fmt

    frames = load_frames("tests/data/h200/field_imagefolder_epochs.jsonl.gz")
    assert not [g for g in collect_gaps(frames) if "exited" in g.reason]
    assert fmt.reason(Unsupported("stacks: process 559 exited")) == "process 559 exited"
    assert fmt.unprefixed("the job's processes: the job exited (process 1)") == "the job exited (process 1)"


def test_more_training_processes_than_cpus_are_told_that_no_num_workers_fits():
    """Review 31: 8 ranks with 64 workers on 2 CPUs were told "at most 1 in each of the 8 training
    processes ... (the CPUs it may use)", which still leaves 8 workers on 2 CPUs."""
    ranks = tuple(proc(100 + m, "main") for m in range(8))
    workers = tuple(proc(300 + w, "worker", cpu_pct=90.0, main=100 + w % 8) for w in range(16))
    frames = [make_frame(i, workers=0, usable=2) for i in range(3)]
    c = checks_of([replace(f, procs=replace(f.procs, processes=ranks + workers)) for f in frames])["workers_vs_cores"]
    assert c.status == WARN
    assert c.fix == "the 8 training processes alone outnumber the 2 CPUs they may use: give the job more CPUs, or run fewer processes on this host"
