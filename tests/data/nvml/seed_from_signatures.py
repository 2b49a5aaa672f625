"""Writes h200_seed_2026-12-02.json: a capture-format seed built ONLY from the measured table in
/work/shared/docs/h200-signatures.md (one NVIDIA H200, driver 580.159.04, 2026-12-02).

Until bench/capture_nvml.py has run on the H200, the fake NVML replays this seed. What it holds:
- measured (per-workload means of the table): NVML util.gpu / util.mem, GPM GR engine, SM active,
  SM occupancy, tensor, DRAM BW and PCIe RX MiB/s, SM clock; clock-event reasons 1 (idle) and 4
  (bf16 matmul); PCIe Gen5 x16 current = max; GPM supported; driver and NVML versions.
- shaped, not measured: the per-sample series are the table's mean repeated every 200 ms (the
  H200's measured sample cadence); the idle GPU answers NotFound (buffer dry when idle, as
  signals.md §1.2 reports from the field); the RX byte counter (field 198) is the measured GPM RX
  rate integrated over each 0.5 s tick; timestamps start at 2026-12-02T12:00:00Z; PIDs and the
  UUID are placeholders.
- absent (NVMLError_NoData in the fake): everything the table did not measure: memory,
  temperature, power, memory clock, max clocks, throttle counters, TX bytes, GPM PCIe TX,
  per-process utilization, replay counter, other workloads' clock-event reasons.

Run: python tests/data/nvml/seed_from_signatures.py
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

# h200-signatures.md, first table: util.gpu, util.mem, GR, SM active, SM occ, tensor, DRAM BW,
# PCIe RX MiB/s, SM clock MHz. Names match bench/capture_nvml.py's workloads.
TABLE = {
    "idle": (0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.7, 1980),
    "matmul_bf16": (100, 24, 100.0, 96.6, 14.3, 93.8, 17.2, 13.0, 1448),
    "h2d_pinned": (100, 2, 0.0, 0.0, 0.0, 0.0, 1.2, 56509.0, 1980),
    "h2d_pageable": (14, 0, 0.0, 0.0, 0.0, 0.0, 0.1, 6608.0, 1980),
    "launch_bound": (26, 0, 25.8, 0.03, 0.0, 0.0, 0.0, 215.0, 1980),
    "transpose_copy": (100, 31, 100.0, 99.9, 87.7, 0.9, 24.0, 15.0, 1980),
    "starved": (9, 3, 9.1, 7.2, 1.1, 6.9, 1.9, 2.0, 1980),
}
REASONS = {"idle": 1, "matmul_bf16": 4}  # "read 1 (GPU idle) when idle and 4 (SW power cap) under the bf16 matmul"
TICK_S = 0.5
TICKS_PER_WORKLOAD = 8
SAMPLE_US = 200_000  # "one sample every 200 ms"
NO_DATA = 21  # NVML_ERROR_NO_DATA
T0_US = int(datetime(2026, 12, 2, 12, 0, tzinfo=timezone.utc).timestamp() * 1e6)
WORKLOAD_PID = 4242


def build() -> dict:
    ticks = []
    rx_bytes = 0
    k = 0
    for name, (ug, um, gr, sm, occ, tensor, dram, rx_mibs, clock) in TABLE.items():
        for _ in range(TICKS_PER_WORKLOAD):
            t_us = T0_US + int(k * TICK_S * 1e6)
            prev_us = t_us - int(TICK_S * 1e6)
            stamps = [s for s in range(prev_us - prev_us % SAMPLE_US + SAMPLE_US, t_us + 1, SAMPLE_US)]
            rx_bytes += int(rx_mibs * 2**20 * TICK_S)
            calls: dict = {}
            if name == "idle":
                calls["samples_gpu"] = calls["samples_mem"] = {"err": "NVMLError_NotFound"}
            else:
                calls["samples_gpu"] = {"v": {"type": 1, "s": [[s, ug] for s in stamps]}}
                calls["samples_mem"] = {"v": {"type": 1, "s": [[s, um] for s in stamps]}}
            calls["clock_sm"] = {"v": clock}
            if name in REASONS:
                calls["clock_reasons"] = {"v": REASONS[name]}
            calls["link_gen"] = {"v": 5}
            calls["link_width"] = {"v": 16}
            calls["compute_procs"] = {"v": [[WORKLOAD_PID, None]]}
            calls["fields_pcie"] = {"v": [[198, 0, t_us, 3, rx_bytes, 0], [197, NO_DATA, 0, 3, 0, 0]]}
            if k > 0:
                calls["gpm"] = {"v": {"window_s": TICK_S, "m": [
                    [1, 0, gr], [2, 0, sm], [3, 0, occ], [5, 0, tensor], [10, 0, dram],
                    [20, NO_DATA, None], [21, 0, rx_mibs]]}}
            ticks.append({"workload": name, "t_unix": t_us / 1e6, "t_mono": 1000.0 + k * TICK_S, "calls": calls})
            k += 1
    return {
        "schema": "gpuwatch-nvml-capture/1",
        "source": {
            "kind": "seed",
            "hardware": "NVIDIA H200 (one GPU, Firecracker VM)",
            "date": "2026-12-02",
            "from": "/work/shared/docs/h200-signatures.md, measured table (means over 6 s per workload)",
            "workloads": "idle (sleep); bf16 8192^2 matmuls; 256 MiB pinned H2D non_blocking; 256 MiB pageable H2D; "
                         "200 tiny kernels per step (launch-bound); big.t().contiguous() 16384^2 fp32; "
                         "45 ms sleep then 3 matmuls (starved)",
            "note": "not a raw capture: series are the measured means repeated; see tests/data/nvml/seed_from_signatures.py "
                    "for what is measured, shaped and absent. Replace with bench/capture_nvml.py output.",
        },
        "versions": {"driver": "580.159.04", "nvml": "13.580.159.04", "cuda_driver": "13.0", "child": "torch=2.11"},
        "gpu": 0,
        "pids": {"capture": 4241, "workload": WORKLOAD_PID},
        "static": {
            "name": {"v": "NVIDIA H200"},
            "uuid": {"v": "GPU-5eed0000-0000-0000-0000-000000000000"},
            "max_link_gen": {"v": 5},
            "max_link_width": {"v": 16},
            "gpm_support": {"v": 1},
        },
        "workloads": [{"name": n, "nvidia_smi": {"note": "not in the seed"}} for n in TABLE],
        "ticks": ticks,
    }


def main() -> None:
    doc = build()
    ticks = doc.pop("ticks")
    out = Path(__file__).with_name("h200_seed_2026-12-02.json")
    head = json.dumps(doc, indent=1)
    body = ",\n".join(json.dumps(t, separators=(",", ":")) for t in ticks)
    out.write_text(head[:-2] + ',\n "ticks": [\n' + body + "\n ]\n}\n", encoding="utf-8")
    print(f"wrote {out} ({len(ticks)} ticks)")


if __name__ == "__main__":
    main()
