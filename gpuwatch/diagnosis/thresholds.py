"""Every number the verdict compares a signal with, and where it comes from.

Sources, cited by short name below:
- "§11": the evidence table in /work/shared/docs/signals.md (section 11), itself built on the
  TensorFlow profiler, DCGM's guidance and the PyTorch tuning guide.
- "TF": the TensorFlow profiler's input-pipeline analyzer (xprof
  ``op_stats_to_input_pipeline_analysis.cc``): input % >= 20 "HIGHLY input-bound", >= 5 "MODERATELY";
  the PyTorch TensorBoard plugin uses the same 5 % for its DataLoader warning.
- "DCGM": NVIDIA's reading guidance for the profiling fields (signals.md section 2).
- "H200": the signature table in /work/shared/docs/h200-signatures.md (real measurements).

Fractions are 0..1 (a share of samples or of the tick), CPU is in cores.
"""

from __future__ import annotations

# -- windows ------------------------------------------------------------------------------------
WINDOW_S = 8.0
"""Evidence window. §11 suggests ~10 s because stack shares over a few dozen samples carry
±10-15 % noise; 8 s keeps the verdict within the brief's 5-10 s while ageing out a change faster."""
SHORT_S = 3.0
"""The switch test looks at the last 3 s only: at a 1 s tick that is three frames, whose median
ignores one odd tick, and two new frames out of three flip it, so a real change shows in ~2-3 s."""
STICKY_STACK_FACTOR = 2
"""The stage in force reads its stack shares over twice as many samples as a challenger: a
steady share then wanders half as far (standard error / sqrt 2), so noise in a dozen samples does
not unseat it, while a challenger still sees a change in the freshest samples."""
MIN_WORKER_SAMPLES = 4
"""Worker samples before worker labels count. The stack collector dumps one worker every 2 s
(collectors/stacks.py), so this widens the worker window to the whole WINDOW_S; worker labels
change slowly (a batch takes tens to hundreds of ms), so their lag matters less than their noise."""
STALL_WINDOW_S = 30.0
"""Periodic stalls need several periods: 30 s of 200 ms driver samples holds 15 of a 2 s period."""
MIN_STACK_SAMPLES = 6
"""Main-thread samples needed before a share is trusted; the stack window widens (up to WINDOW_S)
until it has them. At n = 6 a share's standard error is at most 0.2: coarse, yet it tells a thread
that waits 80 % from one that never waits."""

# -- input-bound (TF / §11) ---------------------------------------------------------------------
WAIT_MODERATE = 0.05
"""TF: input % >= 5 is "moderately input-bound"; the PyTorch TB plugin warns above 5 % too."""
MODERATE_MIN_SAMPLES = 2
"""Main-thread samples a "moderate" share needs: one sample in the window is a chance catch, not
5 %. Over 6 to 16 samples (the relaxed and full stack pace over the 8 s window) one sample is a 6 to
17 % share, so WAIT_MODERATE alone let a single stray "data wait" sample of a GPU-bound job fail its
"not waiting" check and warn on an input stage (H200 benchmark job, device runs 11-15: GPU-bound
confidence 0.82 -> 0.55 and the full stack pace back for ~18 ticks, each time)."""


def moderate_cut(n: int) -> float:
    """The share of ``n`` main-thread samples at which a moderate share starts: WAIT_MODERATE, or
    MODERATE_MIN_SAMPLES samples' worth where the window holds fewer than 40."""
    return max(WAIT_MODERATE, MODERATE_MIN_SAMPLES / n) if n > 0 else WAIT_MODERATE


WAIT_HIGH = 0.20
"""TF: input % >= 20 is "highly input-bound" (§11 uses it for stages 1 and 2)."""

# -- the GPU's state (§11, DCGM, H200) ----------------------------------------------------------
BUSY_SATURATED = 0.90
"""§11 healthy: busy >= 0.9 (ideally 0.95); stage 4 also starts at busy >= 0.9."""
BUSY_STARVED = 0.70
"""§11 stages 1 and 5: busy < 0.7 means the GPU waits a large part of the time. Used where no
stack says *why*, so that only a clearly starved GPU is blamed on the host."""
BUSY_IDLE = 0.02
"""H200: an idle GPU reads 0.0 %, a loader-starved job still reads ~9 %: under 2 % nothing runs."""
SM_HEALTHY = 0.80
"""DCGM: SM_ACTIVE >= 0.8 is "necessary, but not sufficient"; H200 healthy bf16 reads 96.6 %."""
SM_INEFFECTIVE = 0.50
"""DCGM: SM_ACTIVE < 0.5 "likely indicates ineffective GPU usage"."""
TINY_KERNEL_RATIO = 0.25
"""SM active / GR engine active. H200: launch-bound 0.03/25.8 and sync-bound 0.04/18.4 (~0.002),
loader-starved real work 7.2/9.1 (0.79), healthy 96.6/100. 0.25 is far from both groups."""
TENSOR_LOW = 0.20
"""§11 stage 4: tensor <= 0.2 (H200: layout copy 0.9 %, healthy bf16 93.8 %)."""
DRAM_BOUND = 0.60
"""§11 stage 4: DRAM >= 0.6 (DCGM: ~0.8 is the practical peak)."""
OCC_MEMORY = 0.50
"""H200: the layout copy (t().contiguous()) ran at 87.7 % occupancy but only 24 % DRAM, the bf16
GEMM at 14.3 %; DCGM: occupancy matters for memory-bound kernels. A copy/elementwise kernel fills
the SMs with warps waiting on memory, so >= 50 % occupancy with idle tensor cores marks it even
where its access pattern keeps DRAM below 60 %."""
LAYOUT_SHARE = 0.20
"""Main-thread samples in layout ops (permute/contiguous/cat...) that count as a stage-4 hint;
the same 20 % cut as a "high" share elsewhere (TF)."""

# -- host to device (§11, H200) -----------------------------------------------------------------
COPY_SHARE = 0.06
"""NVML util minus GPM GR engine = copy-engine time, the share of the tick in copies that no kernel
runs beside. H200: pinned H2D reads util 100 / GR 0; pageable copies read 14-17 % (runs of
2026-12-02) and 10-12 % on another host where they ran at 8-10 % of the link (device run 11);
every other scenario 0 % (4 % at most, on the tick a phase switched). 6 % is about the geometric
middle of 4 and 10. It was 10 %: device run 11's pageable phase sat on that line and was called
launch-bound (its busy main thread is the CPU staging the copies)."""
RX_SATURATED = 0.70
"""§11: RX >= 0.7 x link capacity. H200: pinned copies reached 56.5 GiB/s = 0.94 of gen5 x16."""
RX_PAGEABLE_MAX = 0.30
"""H200: pageable copies ran at 6.6 GiB/s, 1/9 of pinned (0.11 of the link). Copy-dominated
traffic below 0.3 of the link (the geometric middle of 0.11 and 0.94) is the pageable signature."""
RX_SIGNIFICANT = 0.05
"""RX above 5 % of the link is real data traffic: H200 launch loops read 0.2 GiB/s (< 0.4 %)
and healthy bf16 13 MiB/s."""
PAGEABLE_GAIN = 8.6
"""H200: pinned over pageable H2D bandwidth, 56.5 / 6.6 GiB/s."""
H2D_SHARE = 0.20
"""§11 stage 3: main thread in copies >= 0.2."""
PIN_CPU_SATURATED = 0.90
"""§11 stage 3: pt_data_pin >= 0.9 core while the main thread waits for data."""
PIN_BUSY_SHARE = 0.70
"""Pin-thread samples in pin_memory; the same 0.7 as §11's worker "busy" share."""

# -- launch (§11) -------------------------------------------------------------------------------
MAIN_CPU_BUSY = 0.90
"""§11 stage 5: the launching threads (main + pt_autograd_*) use >= 0.9 core."""
MAIN_ACTIVE_SHARE = 0.50
"""§11 stage 5: main thread in dispatch work >= 0.5 of samples (here: dispatch, sync, backward,
optimizer, i.e. the step itself)."""
MAIN_CPU_IDLE = 0.10
"""A main thread under 0.1 core is not computing (a sleeping or waiting thread reads ~0)."""

# -- workers (§11 stages 1 and 2) ---------------------------------------------------------------
WORKER_BUSY_SHARE = 0.70
"""§11 stage 2: wbusy >= 0.7."""
WORKER_CPU_BUSY = 0.80
"""§11 stage 2: wcpu >= 0.8 core per worker."""
WORKER_IO_SHARE = 0.40
"""§11 stage 1: wio >= 0.4."""
WORKER_D_SHARE = 0.30
"""§11 stage 1: worker threads in D state >= 30 % of samples."""
WORKER_CPU_IO = 0.50
"""§11 stage 1: wcpu < 0.5 (workers not computing)."""
JOB_CPU_SATURATED = 0.80
"""Workers together use >= 80 % of the usable CPUs: the CPU is the limit even when each of many
workers gets only a slice of a core (more workers than cores)."""
READS_BPS = 1e6
"""Workers reading at least 1 MB/s from storage are reading at all (shown, not scored)."""
IOWAIT = 0.05
"""Host iowait >= 5 %, the same cut §11 uses for steal (shown, not scored)."""
PSI_IO = 0.10
"""§11 stage 1: PSI io some avg10 >= 10 %."""
DISK_BUSY = 0.80
"""§11 stage 1: the device behind the data >= 80 % busy."""

# -- contention (§11 stage 6) -------------------------------------------------------------------
TENANT_SHARE = 0.10
"""§11: another PID with >= 10 % of the GPU's busy time."""
THROTTLE_FRAC = 0.05
"""§11: HW slowdown / thermal / power brake >= 5 % of the tick (SW power cap is normal at load)."""
CG_THROTTLED = 0.05
"""§11: cgroup throttled_usec >= 5 % of wall."""
RUN_DELAY = 0.10
"""§11: Δrun_delay >= 10 % of wall for the trainer or its workers."""
STEAL = 0.05
"""§11: steal >= 5 %."""
PSI_CPU = 0.20
"""§11: PSI cpu some avg10 >= 20 %."""
CPU_SATURATED = 0.90
"""§11 stage 2: system CPU >= 90 % is "CPU-saturated"."""
OTHERS_CPU_SHARE = 0.25
"""Processes outside the job using a quarter of the usable CPUs. §11 separates an outside tenant
from self-contention (too many workers) but gives no number; a quarter of the machine is well
above background daemons and is enough to starve a job that needs every core."""
PSI_MEM = 0.10
"""Memory pressure: PSI memory some avg10 >= 10 %, the same cut §11 uses for io."""
SWAP_IN_BPS = 1e6
"""Swap-in above 1 MB/s sustained means pages of the job are being read back from swap."""
REPLAYS_PER_S = 1.0
"""PCIe replays: any sustained rate is a bad link (§11 "rising replay counter"); 1/s is sustained."""

# -- checkpoints and idle ----------------------------------------------------------------------
CHECKPOINT_SHARE = 0.20
"""Main thread saving checkpoints >= 20 % of samples (TF's "high" cut)."""
IDLE_OTHER_SHARE = 0.80
"""Main thread outside every training frame >= 80 % of samples: not in a training loop."""

# -- stability and confidence -------------------------------------------------------------------
RELAX = 1.0
"""Hysteresis (a Schmitt trigger): the stage in force has its gate thresholds eased by one band,
challengers have theirs tightened by one band, so a signal hovering at a threshold cannot flap
the verdict. The band is HYSTERESIS_ABS or HYSTERESIS_REL of the threshold, whichever is less."""
HYSTERESIS_ABS = 0.05
"""Five points of a share or a utilization (busy >= 0.90 holds down to 0.85, a challenger needs 0.95):
about the tick-to-tick spread of NVML's utilization on a steady job."""
HYSTERESIS_REL = 0.25
"""A quarter of a small threshold (2 % idle, 5 % of the link) or of a rate (replays/s, B/s)."""
MAX_SPEEDUP = 20.0
"""Speed-ups are capped: a share near 100 % would promise infinity from a noisy estimate."""
