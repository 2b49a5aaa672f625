"""The Prometheus metric families gpuwatch serves: name, type, help and labels (docs/PROMETHEUS.md).

Named by the Prometheus conventions (prometheus.io/docs/practices/naming): base units (seconds,
bytes, hertz, watts, celsius), shares as ``_ratio`` from 0 to 1, never percent; amounts that
accumulate (CPU and wait time, bytes read or moved) as counters ending in ``_total`` so that
``rate()`` gives the per-second figure over any window; a state as a label on a gauge that is 1
for the current state and 0 for the others; ``_info`` gauges always 1. tests/test_prom_lint.py
checks a real scrape against these rules.
"""

from __future__ import annotations

# The verdict's own levels (ok, warning, bottleneck, n/a), one gpuwatch_stage_level series each: a
# stage nothing was measured for is 1 at level="n/a", so level="ok" never claims it was checked.
from gpuwatch.model.verdict import LEVELS as LEVELS

GAUGE, COUNTER = "gauge", "counter"

CLOCK_EVENT_REASONS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting"),
)
"""NVML's clock-event reason bits (nvml.h ``nvmlClocksEventReason*``), one series per reason."""

_G = GAUGE
_C = COUNTER

# name: (type, help, label names)
FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gpuwatch_frames_total": (_C, "Frames gpuwatch has produced since it started", ()),
    "gpuwatch_target_up": (_G, "1 while the watched process runs, 0 once it has exited", ()),
    "gpuwatch_frame_timestamp_seconds": (_G, "Unix time of the latest frame", ()),
    "gpuwatch_collector_up": (_G, "1 when the collector's latest sample is readable, else 0", ("collector",)),
    # GPUs (NVML)
    "gpuwatch_gpu_info": (_G, "Always 1; names the GPU", ("gpu", "uuid", "name")),
    "gpuwatch_gpu_used_by_target": (_G, "1 when the job has a process on this GPU (0 once it has exited)", ("gpu",)),
    "gpuwatch_gpu_lost": (_G, "1 when the GPU fell off the bus or stopped answering", ("gpu",)),
    "gpuwatch_gpu_utilization_ratio": (_G, "NVML utilization.gpu over the tick, 0-1 (counts copy-engine time)",
                                       ("gpu",)),
    "gpuwatch_gpu_memory_utilization_ratio": (_G, "NVML utilization.memory over the tick, 0-1", ("gpu",)),
    "gpuwatch_gpu_memory_used_bytes": (_G, "GPU memory in use", ("gpu",)),
    "gpuwatch_gpu_memory_total_bytes": (_G, "GPU memory size", ("gpu",)),
    "gpuwatch_gpu_temperature_celsius": (_G, "GPU temperature", ("gpu",)),
    "gpuwatch_gpu_power_watts": (_G, "GPU power draw", ("gpu",)),
    "gpuwatch_gpu_power_limit_watts": (_G, "GPU power limit", ("gpu",)),
    "gpuwatch_gpu_sm_clock_hertz": (_G, "SM clock", ("gpu",)),
    "gpuwatch_gpu_sm_clock_max_hertz": (_G, "Maximum SM clock", ("gpu",)),
    "gpuwatch_gpu_memory_clock_hertz": (_G, "Memory clock", ("gpu",)),
    "gpuwatch_gpu_memory_clock_max_hertz": (_G, "Maximum memory clock", ("gpu",)),
    "gpuwatch_gpu_clock_event_reason": (_G, "1 for each NVML clock-event (throttle) reason active now, 0 for the others",
                                        ("gpu", "reason")),
    "gpuwatch_gpu_throttled_seconds_total": (_C, "Time the clocks were held down, per reason (read every 5-10 s "
                                             "by NVIDIA: one reading behind, off by a few seconds where that "
                                             "interval changes)", ("gpu", "reason")),
    "gpuwatch_gpu_process_memory_used_bytes": (_G, "GPU memory of a process on this GPU",
                                               ("gpu", "pid", "rank", "target")),
    "gpuwatch_gpu_process_sm_utilization_ratio": (_G, "SM utilization of a process on this GPU, 0-1",
                                                  ("gpu", "pid", "rank", "target")),
    # GPM (Hopper and newer)
    "gpuwatch_gpm_graphics_engine_active_ratio": (_G, "GPM graphics engine activity, 0-1", ("gpu",)),
    "gpuwatch_gpm_sm_active_ratio": (_G, "GPM SM activity, 0-1", ("gpu",)),
    "gpuwatch_gpm_sm_occupancy_ratio": (_G, "GPM SM occupancy, 0-1", ("gpu",)),
    "gpuwatch_gpm_tensor_active_ratio": (_G, "GPM tensor-core activity, 0-1", ("gpu",)),
    "gpuwatch_gpm_dram_bandwidth_utilization_ratio": (_G, "GPM DRAM bandwidth utilization, 0-1", ("gpu",)),
    # PCIe
    "gpuwatch_pcie_rx_bytes_total": (_C, "PCIe bytes host to device (headers included; GPM on Hopper)", ("gpu",)),
    "gpuwatch_pcie_tx_bytes_total": (_C, "PCIe bytes device to host (headers included; GPM on Hopper)", ("gpu",)),
    "gpuwatch_pcie_link_capacity_bytes_per_second": (_G, "One direction's capacity of the maximum link", ("gpu",)),
    "gpuwatch_pcie_link_generation": (_G, "PCIe link generation now", ("gpu",)),
    "gpuwatch_pcie_link_generation_max": (_G, "Maximum PCIe link generation", ("gpu",)),
    "gpuwatch_pcie_link_width": (_G, "PCIe link width (lanes) now", ("gpu",)),
    "gpuwatch_pcie_link_width_max": (_G, "Maximum PCIe link width (lanes)", ("gpu",)),
    "gpuwatch_pcie_replays_total": (_C, "PCIe replays (link retries) seen since gpuwatch started", ("gpu",)),
    # the job's processes, summed per role and rank (worker PIDs change every epoch: no pid label)
    "gpuwatch_processes": (_G, "Processes of the job", ("role", "rank")),
    "gpuwatch_cpu_seconds_total": (_C, "CPU time of the job's processes, summed", ("role", "rank")),
    "gpuwatch_resident_memory_bytes": (_G, "Resident memory of the job's processes, summed", ("role", "rank")),
    "gpuwatch_read_bytes_total": (_C, "Storage reads of the job's processes, summed", ("role", "rank")),
    "gpuwatch_written_bytes_total": (_C, "Storage writes of the job's processes, summed", ("role", "rank")),
    "gpuwatch_run_delay_seconds_total": (_C, "Time the job's threads were runnable but waited for a CPU, summed",
                                         ("role", "rank")),
    "gpuwatch_thread_cpu_seconds_total": (_C, "CPU time of a training process's key threads (main, pin, autograd)",
                                          ("rank", "thread")),
    "gpuwatch_rank_gpu": (_G, "Always 1; the GPUs NVML lists each rank's processes on", ("rank", "gpu")),
    # per rank, from the stacks (last 10 s)
    "gpuwatch_rank_input_wait_ratio": (_G, "Share of main-thread samples waiting for input (10 s), 0-1", ("rank",)),
    "gpuwatch_rank_collective_wait_ratio": (_G, "Share of main-thread samples waiting in collectives (10 s), 0-1",
                                            ("rank",)),
    "gpuwatch_rank_stack_samples": (_G, "Main-thread stack samples behind the shares (10 s)", ("rank",)),
    "gpuwatch_straggler": (_G, "1 for the rank that holds the others back, with the cause", ("rank", "cause")),
    "gpuwatch_straggler_rank": (_G, "The rank that holds the others back (absent when none is named)", ()),
    "gpuwatch_rank_verdict": (_G, "Per rank: 1 for the stage that rank's verdict names, 0 for the others",
                              ("rank", "stage")),
    # host and disks
    "gpuwatch_host_cpu_utilization_ratio": (_G, "Host CPU busy, 0-1 of all CPUs", ()),
    "gpuwatch_host_iowait_ratio": (_G, "Host CPU time waiting for I/O, 0-1 of all CPUs", ()),
    "gpuwatch_host_steal_ratio": (_G, "Host CPU time stolen by the hypervisor, 0-1 of all CPUs", ()),
    "gpuwatch_host_load1": (_G, "One-minute load average", ()),
    "gpuwatch_host_memory_total_bytes": (_G, "Host memory", ()),
    "gpuwatch_host_memory_available_bytes": (_G, "Host memory available", ()),
    "gpuwatch_host_swap_used_bytes": (_G, "Swap in use", ()),
    "gpuwatch_host_pressure_ratio": (_G, "Pressure stall information avg10, 0-1", ("resource", "kind")),
    "gpuwatch_cgroup_cpu_quota_cores": (_G, "CPU quota of the job's cgroup", ()),
    "gpuwatch_cgroup_cpu_throttled_seconds_total": (_C, "Time the job's cgroup was CPU-throttled", ()),
    "gpuwatch_disk_busy_seconds_total": (_C, "Time the block device was busy", ("device",)),
    "gpuwatch_disk_read_bytes_total": (_C, "Block device reads", ("device",)),
    "gpuwatch_disk_written_bytes_total": (_C, "Block device writes", ("device",)),
    "gpuwatch_target_read_bytes_total": (_C, "Storage-layer reads of the whole job", ()),
    # the verdict
    "gpuwatch_verdict": (_G, "1 for the stage the verdict names, 0 for the others", ("stage",)),
    "gpuwatch_verdict_confidence_ratio": (_G, "Confidence of the verdict, 0-1", ()),
    "gpuwatch_verdict_speedup_factor": (_G, "What fixing the stage could speed the job up by (x times): the most, or the "
                                        "least where gpuwatch_verdict_speedup_floor is 1", ()),
    "gpuwatch_verdict_speedup_floor": (_G, "1 where gpuwatch_verdict_speedup_factor is a floor ('or more': the stage "
                                       "took nearly all the time, its samples bound it only from below, or its DataLoader "
                                       "workers fill the CPUs its step runs on), 0 where it is a ceiling", ()),
    "gpuwatch_verdict_fix_speedup_factor": (_G, "What each proposed fix is expected to speed the job up by (x times; for "
                                            "persistent workers while the job waits for data, the measured part: "
                                            "a new worker's warm-up shows in no signal; for a cheaper decode where the "
                                            "workers fill the step's CPUs, the measured part: the CPU it frees for the "
                                            "step is not counted)",
                                            ("fix",)),
    "gpuwatch_stage_level": (_G, "Per pipeline stage: 1 for its level now (ok, warning, bottleneck, n/a), 0 for the others",
                             ("stage", "level")),
}
