"""Every number the verdict, the report and the TUI compare a signal with: the one home of each cut.

docs/THRESHOLDS.md is the table of all of them with the signal each applies to and what its value
is based on (a test keeps the two in step). The bases, named in words below:
- the TensorFlow profiler's input-pipeline analyzer (xprof ``op_stats_to_input_pipeline_analysis.cc``):
  input >= 20 % of the step is "HIGHLY input-bound", >= 5 % "MODERATELY"; the PyTorch profiler's
  TensorBoard plugin warns about the DataLoader above the same 5 %;
- NVIDIA's DCGM guidance for the profiling fields (SM active >= 0.8 "necessary", < 0.5
  "ineffective"; DRAM active peaks at ~0.8 in practice);
- measurements on an H200 (driver 580, 2026-12-02), quoted where they set a value;
- the Linux kernel's and NVML's own definitions (PSI, cgroup cpu.stat, clock-event reasons).

Fractions are 0..1 (a share of samples or of the tick), CPU is in cores.
"""

from __future__ import annotations

# -- windows ------------------------------------------------------------------------------------
WINDOW_S = 8.0
"""Evidence window. About 10 s is the usual advice because stack shares over a few dozen samples carry
±10-15 % noise; 8 s lets the verdict follow a change within 5-10 s while ageing out an old phase faster."""
SHORT_S = 3.0
"""The switch test looks at the last 3 s only, counted in ticks (window.last_ticks): at a 1 s tick
that is always three frames, whose median ignores one odd tick, and two new frames out of three
flip it, so a real change shows within 2-3 s. Cut at exactly 3.0 s, the window held three or four
frames as the ticks jittered by a millisecond, and a median of four needs three new ticks: the
H200 switch run took 3.3 s where three frames took 2.3 s."""
FAST_S = 2.0
"""The switch test's fast path (diagnosis/__init__.py, _sooner): a challenger shows a tick sooner
when the mean of the last two ticks passes its tightened cut and the median of the last three its
documented one. For a reading whose ticks scatter by one hysteresis band around a cut, the median's
test passes by chance with p = 3q^2 - 2q^3 = 0.07 (q = 0.16, one band above), the mean of two with
0.08 (sqrt 2 bands): as rare. For a step it needs one whole tick of the new state after the tick the
change fell in, where the median needs two."""
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
MIN_EVIDENCE_SAMPLES = 3
"""Main-thread stack samples below which no stage proved by them is named (the verdict says it is
collecting evidence): a share of one or two samples can only read 0, 50 or 100 %, so it tells
nothing yet (a job's first seconds, still importing torch)."""
STACK_STALE_S = 4.0
"""A stack sample older than this at the newest frame no longer describes the job (a stopped
process, a stuck py-spy): the stacks count as missing, never as evidence. The newest sample lags
its frame by at most 1.6 s in every recording in tests/data (1 s ticks, 8 ranks included); 4 s is
twice that plus a tick. Slower ticks widen it to STALE_TICKS ticks."""
STALE_TICKS = 3
"""At ticks slower than 1.3 s the stale cut is this many ticks: a sample may lag its frame by one
tick, so three ticks without a new one mean the sampler has stopped."""
MIN_STACK_SAMPLES = 6
"""Main-thread samples needed before a share is trusted; the stack window widens (up to WINDOW_S)
until it has them. At n = 6 a share's standard error is at most 0.2: coarse, yet it tells a thread
that waits 80 % from one that never waits. The per-fix estimates (fix_gains.py) need as many samples
over the minute: of the main thread for the share it spends starting and stopping workers, of the
workers at work for their decoder share; with fewer the remedy says the gain is not estimated."""

# -- input-bound (TensorFlow profiler's input-pipeline analyzer) -------------------------------
WAIT_MODERATE = 0.05
"""The TensorFlow profiler calls input >= 5 % of the step "moderately input-bound"; the PyTorch
profiler's TensorBoard plugin warns about the DataLoader above 5 % too."""
MODERATE_MIN_SAMPLES = 2
"""Main-thread samples a "moderate" share needs: one sample in the window is a chance catch, not
5 %. Over 2 to 16 samples (the relaxed and full stack pace over the 8 s window) one sample is a 6 to
50 % share, so WAIT_MODERATE alone let a single stray "data wait" sample of a GPU-bound job fail its
"not waiting" check and warn on an input stage (H200 benchmark job, device runs 11-15: GPU-bound
confidence 0.82 -> 0.55 and the full stack pace back for ~18 ticks, each time)."""


def moderate_cut(n: int) -> float:
    """The share of ``n`` main-thread samples at which a moderate share starts: WAIT_MODERATE, or
    MODERATE_MIN_SAMPLES samples' worth where the window holds fewer than 40."""
    return max(WAIT_MODERATE, MODERATE_MIN_SAMPLES / n) if n > 0 else WAIT_MODERATE


WAIT_HIGH = 0.20
"""The TensorFlow profiler calls input >= 20 % of the step "HIGHLY input-bound" (the data wait of
the disk and decode stages)."""


def high_cut(n: int, gpu_starved: bool) -> float:
    """The share of ``n`` main-thread samples at which a high share starts: WAIT_HIGH, or
    MODERATE_MIN_SAMPLES samples' worth where one sample alone would reach WAIT_HIGH (five samples or
    fewer: the relaxed stack pace, or the first seconds of a watch) and the GPU is not starved. One
    stray "data wait" sample among the three of a relaxed window read 33 %: on the H200 benchmark job
    (GPU 80-88 % busy) it made the verdict "unknown" for 3 ticks, and at the start of the tokenising
    and Lightning jobs (GPU 93-99 % busy) it named PCIe or "unknown" for a tick or two. Beside a
    starved GPU (under BUSY_STARVED) the idle GPU is itself the evidence of a wait, and one sample says
    which: the H200 switch runs name decode on the first tick after the GPU fell to 0.6 %, as they do
    with one sample. A host with no GPU has no such evidence, so it needs the two samples (trial 34:
    one of three named a stage on a CPU job waiting 2-7 % by its own clock)."""
    if gpu_starved or n <= 0 or 1 / n < WAIT_HIGH:
        return WAIT_HIGH
    return max(WAIT_HIGH, MODERATE_MIN_SAMPLES / n)

# -- the GPU's state (DCGM guidance, H200 measurements) ----------------------------------------
BUSY_SATURATED = 0.90
"""A GPU with work 90 % of the time or more is saturated: the input keeps up (a healthy job reads
95-100 %, H200 bf16 100 %); the memory-bound stage also needs a saturated GPU."""
BUSY_STARVED = 0.70
"""A GPU with work under 70 % of the time waits a large part of it (H200: loader-starved 9 %,
launch-bound 26 %). Used where no
stack says *why*, so that only a clearly starved GPU is blamed on the host. Launch-bound also needs the
GPU idle for 30 % of the time the main thread is in the step (at least: the step's share of the main
thread's samples less the kernel-active time, over the step's share), so a GPU idle only while the
host saves a checkpoint is not blamed on launches (H200 and H100 launch scenarios: 79-99 %;
checkpoint jobs' ticks: at most 25 %)."""
BUSY_IDLE = 0.02
"""H200: an idle GPU reads 0.0 %, a loader-starved job still reads ~9 %: under 2 % nothing runs."""
SM_HEALTHY = 0.80
"""DCGM: SM_ACTIVE >= 0.8 is "necessary, but not sufficient"; H200 healthy bf16 reads 96.6 %."""
SM_INEFFECTIVE = 0.50
"""DCGM: SM_ACTIVE < 0.5 "likely indicates ineffective GPU usage"."""
TINY_KERNEL_RATIO = 0.25
"""SM active / GR engine active. H200: launch-bound 0.03/25.8 and sync-bound 0.04/18.4 (~0.002),
loader-starved real work 7.2/9.1 (0.79), healthy 96.6/100. 0.25 is far from both groups.
Read only while the GR engine is active at least BUSY_IDLE: with no kernels there is no shape."""
TENSOR_LOW = 0.20
"""Tensor cores active <= 20 % while the SMs are busy: not matrix math (H200: layout copy 0.9 %,
healthy bf16 93.8 %)."""
DRAM_BOUND = 0.60
"""DRAM active >= 60 %: memory traffic near its limit (DCGM: ~80 % is the practical peak)."""
OCC_MEMORY = 0.50
"""H200: the layout copy (t().contiguous()) ran at 87.7 % occupancy but only 24 % DRAM, the bf16
GEMM at 14.3 %; DCGM: occupancy matters for memory-bound kernels. A copy/elementwise kernel fills
the SMs with warps waiting on memory, so >= 50 % occupancy with idle tensor cores marks it even
where its access pattern keeps DRAM below 60 %."""
LAYOUT_SHARE = 0.20
"""Main-thread samples in layout ops (permute/contiguous/cat...) that count as a stage-4 hint;
the same 20 % cut as a "high" share elsewhere (TensorFlow profiler)."""

# -- host to device (H200 measurements) ---------------------------------------------------------
COPY_SHARE = 0.06
"""NVML util minus GPM GR engine = copy-engine time, the share of the tick in copies that no kernel
runs beside. H200: pinned H2D reads util 100 / GR 0; pageable copies read 14-17 % (runs of
2026-12-02) and 10-12 % on another host where they ran at 8-10 % of the link (device run 11);
every other scenario 0 % (4 % at most, on the tick a phase switched). 6 % is about the geometric
middle of 4 and 10. Not 10 %: pageable copies at 10-12 % sit on that line, and a tick under it is
read as launch-bound (the busy main thread is the CPU staging the copies)."""
RX_SATURATED = 0.70
"""RX >= 70 % of the link's capacity fills the link. H200: pinned copies reached 56.5 GiB/s = 0.94
of gen5 x16."""
RX_PAGEABLE_MAX = 0.60
"""Copy-dominated traffic below 60 % of the link is the pageable (unpinned) signature. H200 gen5
x16: pinned copies ran at 0.94 of the link (56,509 MiB/s); pageable ones at 0.11 (6,608 MiB/s),
0.08-0.14 (device runs 9 and 11) and 0.31-0.35 (19,581 MiB/s, a never-written host tensor, cheaper
to stage). 0.60 is about the geometric middle of the fastest pageable (0.35) and pinned (0.94)
readings. The verdict's "pageable" reading and the report's pinned-memory check both use it."""
PINNED_RX_MIBS = 56509
"""H200 gen5 x16: pinned host-to-device copies, GPM PCIe RX in MiB/s (quoted in the report)."""
PAGEABLE_RX_MIBS = 19581
"""H200 gen5 x16: the fastest pageable host-to-device copies measured, MiB/s (quoted in the report)."""
MIN_COPY_TICKS = 3
"""Ticks dominated by copies before the report judges them: fewer is a blip, not a pattern."""
RX_SIGNIFICANT = 0.05
"""RX above 5 % of the link is real data traffic: H200 launch loops read 0.2 GiB/s (< 0.4 %)
and healthy bf16 13 MiB/s."""
PAGEABLE_GAIN = 8.6
"""H200: pinned over pageable H2D bandwidth, 56.5 / 6.6 GiB/s. It also turns the copy engine's busy
share (the DMA of each staged chunk, at pinned speed) into the pageable copy's share of the job's
time for the speed-up estimate: the H200 pageable job read 12-15 % copy-engine time, x 8.6 = all of
its step, and measured 7.82x with pinned memory."""
H2D_SHARE = 0.20
"""Main thread in host-to-device copies >= 20 % of samples: the TensorFlow profiler's "high" input
share, which counts host-to-device time as input."""
PIN_CPU_SATURATED = 0.90
"""The pin-memory thread (pt_data_pin) at >= 0.9 core: one thread, so near a full core is its limit."""
PIN_BUSY_SHARE = 0.70
"""Pin-thread samples in pin_memory; the same 70 % as the workers' "busy" share."""

# -- launch -------------------------------------------------------------------------------------
MAIN_CPU_BUSY = 0.90
"""The launching threads (main + pt_autograd_*) use >= 0.9 core: flat out, since Python dispatch
runs on one core under the GIL."""
MAIN_ACTIVE_SHARE = 0.50
"""Main thread in the step's own work >= 50 % of samples (here: dispatch, sync, backward,
optimizer, i.e. the step itself)."""
WAIT_BOUND_CPU = 0.50
"""CPU-bound says the input is not what holds the job: the main thread's samples must bound its data
wait (the 95 % Wilson upper end) under half the time, so the wait cannot be most of it. 0 waits in 6
samples bound it at 39 %, 1 in 6 only at 56 % (more samples are then needed: 2 in 12 bound it at 45 %)."""
MAIN_CPU_IDLE = 0.10
"""A main thread under 0.1 core is not computing (a sleeping or waiting thread reads ~0)."""

# -- workers (DataLoader internals) ------------------------------------------------------------
WORKER_BUSY_SHARE = 0.70
"""Worker samples inside __getitem__/transforms >= 70 %: the workers compute most of the time."""
WORKER_CPU_BUSY = 0.80
"""A worker process at >= 0.8 core computes flat out (it is single-threaded Python)."""
IDLE_FOR_WORKER = 0.5
"""Idle usable CPU (cores, neither the job's nor the host's other processes') that makes one more
DataLoader worker worth proposing where the workers decode: a new worker then builds at least half
a busy worker's batches. worker_target keeps a core for the training process, which a trainer
waiting on its workers mostly leaves idle (trial 23: one worker at 1.0 core, the trainer at 0.15,
told the 2 CPUs were full; a second worker ran the job 1.5x faster)."""
THREADED_WORKER_CPU = 1.2
"""A worker process above 1.2 cores runs several threads at once (OpenMP, BLAS, OpenCV pools): the
positive evidence for the thread-oversubscription remedy. DataLoader workers compute in Python on
one thread (PyTorch sets torch.set_num_threads(1) in each), so a worker reads at most ~1.0 core
unless a library spawns its own pool; 1.2 leaves room for a tick's CPU reading to run ~10 % long."""
THREADED_WORKER_QUEUE = 0.5
"""The run delay (threads ready to run with no CPU, per tick) a worker must show for its CPU plus that
delay to count as wanting several threads at once (THREADED_WORKER_CPU): a single-threaded worker's
own figure reads up to ~1.1-1.25 cores on a busy host from a tick's jitter and its queue-feeder
thread (the recordings of single-threaded workers: per-tick maxima 1.12-1.25, window medians under
1.02), with a queue of a few tenths; a pool's threads queue half a thread or more (3 BLAS workers on
2 CPUs: 1.2 threads queued each)."""
WORKER_IO_SHARE = 0.40
"""Worker samples in reads (or D state) >= 40 %: the workers wait on storage."""
WORKER_D_SHARE = 0.30
"""Worker threads in uninterruptible sleep (D, a blocking disk read) in >= 30 % of samples."""
WORKER_CPU_IO = 0.50
"""A worker under 0.5 core is mostly not computing (waiting on reads or on the queue)."""
JOB_CPU_SATURATED = 0.80
"""Workers together use >= 80 % of the usable CPUs: the CPU is the limit even when each of many
workers gets only a slice of a core (more workers than cores)."""
READS_BPS = 1e6
"""Workers reading at least 1 MB/s from storage are reading at all (shown, not scored)."""
IOWAIT = 0.05
"""Host iowait >= 5 %, the same cut as CPU steal (shown, not scored)."""
PSI_IO = 0.10
"""PSI io "some" avg10 >= 10 %: some task stalled on I/O a tenth of the time (kernel PSI)."""
DISK_BUSY = 0.80
"""The block device behind the data busy >= 80 % of the time (iostat %util): near saturation."""

# -- contention ---------------------------------------------------------------------------------
TENANT_SHARE = 0.10
"""Another process with >= 10 % of the GPU's SM time takes a real share of it."""
THROTTLE_FRAC = 0.05
"""HW slowdown / thermal / power brake >= 5 % of the tick (the SW power cap is normal at load:
the H200 running bf16 matmuls sat at it)."""
CG_THROTTLED = 0.05
"""The cgroup's CPU quota throttled the job >= 5 % of wall time (cpu.stat throttled_usec)."""
RUN_DELAY = 0.10
"""The job's threads wait for a CPU: the schedstat run delay summed over a process's threads, over
wall time, i.e. the mean number of its threads that were ready to run but had no CPU. 0.1 is one
thread queued 10 % of the time, a delay a single-threaded step loop feels directly. For the
DataLoader workers it is the most-queued worker's: each is one process whose batch the main
thread may be waiting on."""
OWN_THREADS_OVER = 1.0
"""The training process keeps more threads ready to run than the usable CPUs by a whole thread: its
CPU (cores it ran on) plus its run delay (threads queued for a CPU) over the usable CPUs. Its own
thread pool (torch.set_num_threads, OMP_NUM_THREADS, a BLAS pool) then oversubscribes the CPUs
whatever the neighbours do: the positive evidence for the remedy that shrinks it. A whole thread,
as a reading of 0.2-0.3 above the count comes with a tick's jitter (trial 32: 6 intra-op threads on
2 CPUs read 0.65 core and 3.0 threads queued, 1.65 over)."""
STEAL = 0.05
"""The hypervisor steals >= 5 % of the CPU (/proc/stat steal)."""
PSI_CPU = 0.20
"""PSI cpu "some" avg10 >= 20 %: runnable tasks waited for a CPU a fifth of the time."""
CPU_SATURATED = 0.90
"""Host CPU busy >= 90 %: the machine has no spare CPU."""
OTHERS_CPU_SHARE = 0.25
"""Processes outside the job using a quarter of the usable CPUs. An outside tenant is told apart
from self-contention (too many workers), but no source gives a number; a quarter of the machine is well
above background daemons and is enough to starve a job that needs every core."""
GIL_ELSEWHERE = 0.25
"""Another thread of the training process (one the job started: a logger, a dashboard, a metrics
thread) held the GIL in a quarter of the main thread's stack samples or more: the training loop's
Python waits for it then, as it waits for a CPU a neighbour holds, and a quarter is
OTHERS_CPU_SHARE's cut for that. Threads parked in the standard library's waits (queue feeders,
pollers) are not counted: py-spy reads them as holders as they wake, 12-33 % of the samples of jobs
with no thread of their own at work. Trial 40: a pure-Python dashboard thread held it in 58-70 % of
the samples; without it the job ran 10x faster on a quieter host (2.10 to 22.9 steps/s) and 1.4x
faster under the outside load it was watched in (2.6 to 3.6)."""
OUTSIDER_SHARE = 0.1
"""An outside process is named as one that crowds the job where it holds at least a tenth of the
CPU used outside the job: a daemon at 0.01 core beside 1.00 core of outside use is no lead. Up to
three are named, so the named ones may fall short of the whole; the rest is then said to be
processes too short-lived or small to list."""
PSI_MEM = 0.10
"""Memory pressure: PSI memory "some" avg10 >= 10 %, the same cut as for I/O."""
SWAP_IN_BPS = 1e6
"""Swap traffic above 1 MB/s means pages are being read back from swap: the verdict counts swap-in,
the report's check swap in and out (below that is background daemons paging)."""
BAD_THROTTLE_WORDS = ("thermal", "slowdown", "brake")
"""Clock-event reasons that cost speed for a reason outside the job (NVML: SW/HW thermal slowdown,
HW slowdown, HW power brake). The SW power cap is the normal state of a saturated GPU (the H200
running bf16 matmuls sat at it) and sync boost follows the slowest GPU of a group: neither counts."""
BAD_REASON_BITS = 0x8 | 0x20 | 0x40 | 0x80
"""nvmlClocksEventReason HwSlowdown, SwThermalSlowdown, HwThermalSlowdown, HwPowerBrakeSlowdown
(nvml.h): the same reasons as BAD_THROTTLE_WORDS, for GPUs whose ns counters cannot be read."""
HW_SLOWDOWN_BIT = 0x8
"""HW slowdown has no ns counter among NVML's field values: its bit, seen at a tick, counts that
tick as throttled."""
SW_POWER_CAP_BIT = 0x4
"""nvmlClocksEventReasonSwPowerCap: shown as normal, never blamed."""
LINK_LOAD = 0.5
"""The PCIe link is judged only while the GPU is busy at least half the time: NVIDIA lowers the
link generation with the P-state when the GPU idles (P8 -> Gen1), and half busy is the working P0."""
LINK_DOWN_SHARE = 0.5
"""A link below its maximum in at least half of the loaded ticks is trained down, not in transit."""
REPLAYS_PER_S = 1.0
"""PCIe replays: any sustained rate is a bad link (a rising replay counter); 1/s is sustained."""

# -- checkpoints and idle ----------------------------------------------------------------------
CHECKPOINT_SHARE = 0.20
"""Main thread saving checkpoints >= 20 % of samples (the TensorFlow profiler's "high" cut)."""
CHECKPOINT_MIN_SAMPLES = 2
"""Main-thread samples in a save needed before a save seen in the latest samples alone (not yet
recurring over the minute) can name Disk: one sample is 20 % of five, yet a save of a fraction of a
second falls under a ~1 Hz sampler once by chance. Lightning's checkpoint path handling, 0.2 % of the
job's time by its own clock, read "Checkpoint saving holds training: 1 of its last 5 stack samples"
for five ticks (trial 33)."""
IDLE_OTHER_SHARE = 0.80
"""Main thread outside every training frame >= 80 % of samples: not in a training loop."""
COMPILE_SHARE = 0.50
"""Main thread inside torch.compile's compiler for at least half its samples: the compiler, not a
pipeline stage, is what the GPU waits on for most of the window (the first steps of a compiled
model, or recompiles). Below it the compile samples count for no stage, so they make none fire."""

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
"""Speed-ups are capped: a share near 100 % would promise infinity from a noisy estimate. The per-fix
estimates (fix_gains.py) are capped the same way."""
MIN_GAIN = 1.05
"""A speed-up under 5 % is within the noise of the shares: reported as no gain. A fix's own estimate
under it reads "little or no gain"."""
MAX_CONFIDENCE = 0.95
"""Never "certain": the signals are samples, and a window can fall between phases."""
TAKEOVER = 0.15
"""A host-side challenger displaces the stage in force only with a time share 15 points above
it: about one standard error of a share over a window of a dozen stack samples. Both shares are
read over the challenger's samples (the stage in force counts the larger of that and its own
longer window's): over different windows a fresher share of the same data wait took over."""
OUTSIDE_SHARE = 0.50
"""Main thread outside every training frame for half the samples: the job's own code, which no
pipeline stage names, sets its pace (the GPU starves for it; a job without a GPU is paced by it
when it is not computing the step)."""
WORKERS_IN_INIT = 0.25
"""Worker samples of the last minute in their worker_init_fn >= 25 % (and at least
MIN_INIT_SAMPLES of them, of at least MIN_WORKER_SAMPLES): the workers spend a good part of their
lives starting up, so a main thread waiting for data waits on their start-up. The stack collector
reaches a new worker late (after the process tree's next walk, then its turn in the round-robin),
so start-up is under-sampled: a worker that spent two thirds of its life building a table in its
worker_init_fn had 2 of its 6 samples there (trial 42; kept workers ran that job 3.3x faster), and
one that slept 1.5 s there, 5 of 5 (trial 41, 39x)."""
MIN_INIT_SAMPLES = 2
"""Worker samples in a worker_init_fn before its share counts: one is a worker caught at its start."""
IDLE_WORKERS = 0.70
"""Worker samples waiting for an index >= 70 %: the workers are ahead, not reading (the same 70 %
as their "busy" share)."""
VALIDATION_WAITS = 0.50
"""More than half of the main thread's waits for a batch sampled inside an evaluation pass (and at
least MIN_EVIDENCE_SAMPLES of them): the wait is mostly the validation loader's, so the input
remedies are said for that loader. Below half, the training loader's waits are the larger part
and its own fixes come first (trial 29: a Lightning job's 25 % wait was 23 points validation's,
while its training loader waited 1.9 % of the time)."""
WEAK_TICKS = 3
"""Ticks in a row that a weak candidate ("no stage proved") needs to replace a named stage. A dozen
stack samples carry 15-20 points of noise, so one tick where no gate quite holds is expected now
and then in a steady run; a stage whose evidence is really gone fails three ticks in a row."""

# -- multi-rank jobs: the straggler ------------------------------------------------------------
RANK_WINDOW_S = 10.0
"""Seconds of frames behind one rank's signals: about 10 s, because py-spy shares over a few dozen
samples carry 10-15 points of noise."""
STRAGGLER_MIN_SAMPLES = 10
"""Main-thread stack samples a rank needs before its shares count (5 s at the stack collector's
default 2 dumps/s); the gap test asks for more samples when the shares are close."""
STRAGGLER_COLLECTIVE_WAIT = 0.20
"""The other ranks lose at least this share of their time waiting for the straggler in a collective;
the same fifth of the time as WAIT_HIGH, so a straggler is named when it costs the others as much as
input starvation would cost a single process."""
STRAGGLER_GAP = 0.25
"""How far the straggler's share must stand from the others': shares over a few dozen samples carry
10-15 points of noise, so a gap of 0.25 is beyond the noise of both sides."""
UNEVEN_WORKERS = 0.5
"""The busiest worker uses half a core more than the least busy one while the main thread waits
(medians over those ticks): workers of one loader given work of equal cost use about the same CPU
(within the ~0.1-0.2 core of a tick's reading), so a gap of half a core is work split unevenly."""
STRAGGLER_CPU_SHARE = 0.8
"""On a CPU-only job a rank named as busy while the others wait for it in collectives must use at
least 0.8 of their CPU (median): its step's compute is its CPU, so a "busy" rank at clearly less CPU
than the waiting ones is itself waiting where no Python frame shows it (DDP's all-reduce inside
backward). 0.8 leaves room for the CPU readings' tick-to-tick noise (~10 %) and for a collective's
spin-wait adding CPU to the waiters."""
STRAGGLER_Z = 2.0
"""The gap must also be this many standard errors of a difference of two sampled shares (a two-
proportion z-test at about 95 %): with few samples a 0.25 gap alone could be chance."""
STRAGGLER_SLOW_STEPS = 0.8
"""A rank is slow by steps when it completes less than this fraction of the others' median step rate
(a 20 % lag is well beyond the one-step jitter of per-second rates at a few steps per second)."""

# -- periodic stalls (the driver's 200 ms utilization samples) --------------------------------
STALL_MIN_POINTS = 20
"""Four seconds of 200 ms samples before a period is looked for."""
STALL_BUSY_LEVEL = 50.0
"""The GPU must be busy between stalls (80th percentile of util >= 50 %), else it is starved,
not stalling."""
STALL_IDLE_RATIO = 0.5
"""A sample below half the busy level is (mostly) idle: a 200 ms window idle for over half its time."""
STALL_MIN_RUNS = 3
"""Three idle runs give two intervals: the least that shows a period."""
STALL_JITTER = 0.25
"""Intervals within 25 % of their median (median absolute deviation) count as periodic."""
STALL_MAX_IDLE_SHARE = 0.6
"""Idle more than 60 % of the time is starvation, which the stages describe, not a stall."""

# -- the report's run-wide checks --------------------------------------------------------------
FEW_WORKERS_RATIO = 4
"""Fewer DataLoader workers than a quarter of the usable cores is "far fewer", worth raising only
when loading data held the GPU back (RUN_INPUT_SHARE)."""
RUN_INPUT_SHARE = 0.20
"""Share of the run with a disk or decode verdict above which spare cores matter: the same 20 %
as a "high" input share."""
HEADLINE_MIN_COST = 0.05
"""A bottleneck stage is the report's headline only when it cost the run at least 5 % of its time
(share held x loss while it held): the TensorFlow profiler's "moderately input-bound" cut, applied
to the whole run. Below it the run was mostly what it held most (GPU-bound: healthy)."""
HEADLINE_MIN_TICKS = 3
"""...and held the verdict at least 3 ticks: one or two ticks at the start (warm-up) or at a phase
change are not what the run was (the same count a weak reading needs to replace a stage)."""
RUN_WARNING_SHARE = 0.20
"""A stage shown at warning level (close to its cuts) in a fifth of the run or more is named in the
report's verdict, so a stage the TUI showed in yellow throughout is not left unsaid."""
SWAP_FAIL_SHARE = 0.10
"""Swapping (SWAP_IN_BPS or more) in a tenth of the ticks or more is a memory shortage, not a one-off."""

# -- gpuwatch compare ---------------------------------------------------------------------------
COMPARE_SAME_POINTS = 1.0
"""Two runs' percentages within 1 point read "same": stack shares over a few hundred samples carry
about that much noise, and NVML's utilization is reported in whole percent."""
COMPARE_SAME_SHARE = 0.05
"""Other measures (bytes per second, CPU, counts, speed-up) within 5 % of the larger value read
"same": run-to-run spread of an unchanged job watched twice is of that order."""


# -- time-aligned evidence and epoch structure (aligned.py, phases.py) --------------------------
ALIGNED_WAIT = 0.50
"""A tick counts as "the main thread waits for data" when most of its main-thread samples (two of
two at the default 2 dumps/s) are in the data wait: then the tick's worker readings describe the
workers during the wait, not a mix of waiting and training."""
ALIGNED_MIN_TICKS = 2
"""Waiting ticks needed before the readings taken during the wait replace the window's means: one
tick is a single procs sample (one second of CPU), two agree or not."""
PHASE_WINDOW_S = 60.0
"""The epoch structure is read over the last minute: a short epoch (the field's ImageNet script ran
~15 batches, a few seconds) repeats several times in it, so its period and share are measured,
while a job that changed its behaviour a minute ago is no longer described by its old phases."""
PHASE_MIN_SHARE = 0.02
"""A phase taking under 2 % of the minute (about one tick) is not worth a sentence; re-created
workers are named whatever their share (the fact itself carries the remedy)."""
PERIOD_SPREAD = 0.5
"""A phase's starts are periodic when every interval between two lies within 50 % of their median and a
tick (a start is seen in the tick it fell in, so a gap reads up to a tick off): the H200 ImageFolder
job's re-creations 1-3 s apart read "every ~2.5 s", and a gap of about two or three periods is a
start no sample caught (checkpoint saves every 3 s, one of them missed); while intervals of 0.4 and
25 s (two loaders' sets, one after the other, each epoch) have a median, ~13 s, that no interval is
near, and a count and period that cannot both hold in the span ("every ~9.0 s (6 times in 39 s)").
Wider than STALL_JITTER: a phase's period is said as "~", a stall's is a finding of its own."""
PERIOD_COVER = 0.5
"""A phase's period is said only where its starts cover the span the sentence says it over: the
first in the span's first half, and at least half of span / period of them (a gap of two or three
periods is a start no sample caught, which PERIOD_SPREAD lets stand, so the count may fall short of
span / period, but not by half). Starts bunched late in the span read as a pace over all of it: a
Lightning job whose re-creations were caught twice, 5 s apart, 33 s into a 44 s span read "every
~5.0 s (2 times in 44 s)". Otherwise only the count is said (phases._covers). Not "the first within
a period of the beginning": a job watched from its start runs a longer first epoch (run 21's
ImageFolder job, first re-creation at 5 s, then every ~2.5 s: 11 in 31 s)."""
EVERY_TICK = 1.5
"""Workers re-created with a median period under 1.5 ticks come back at about every tick: ticks one
apart give a period of 1, and one tick in two missing (a set that lived across a tick's sample, or a
procs sample late) gives 1.5 at most; no slower pace gives a median that low. At that pace the
ticks cannot tell how often it really is (at most one re-creation a tick is seen), so no period is
stated and the count is said as a lower bound (phases.py)."""
PHASE_MIN_TICKS = 1.5
"""A validation pass or first-batch wait gets a duration (and a period) from 1.5 ticks each on, or
where it fills whole ticks: a shorter one, in ticks it only partly fills, fits in one or two ticks,
where the samples that landed in it say little of its length
(Lightning's 28 ms validation passes, both samples of one tick or one sample of each of two in a
pass, read "~1.0 s"; run 25's ImageFolder passes of 2-4 s read 1.9-4.0 s)."""
CHECKPOINT_WRITE_BPS = 1e7
"""A main process writing >= 10 MB/s in a tick with no stack sample counts as saving: a training
loop's own writes (logs, metrics) mostly run at kB/s, and the smallest model checkpoints are MBs.
Where no stage is conclusive and no save was found, a middle rate over the last minute at or above
it is said as file writes no stage judges (sentence._writes; trial 41: ~500 MB/s of fsynced logs)."""

NETWORK_SHARE = 0.5
"""Half or more of the samples reading data read over a socket (socket, ssl, http.client, urllib3,
botocore, httpcore frames), with no storage sign of the job's own: the data comes from a server or an
object store, and the input stage says so, with its remedies, rather than the local disk's (trial 36: workers fetching over HTTP,
32 of 34 read samples in SocketIO.readinto, were told "disk vda 0 % busy. Data: /tmp on ext4" and
to copy a shard to /dev/shm)."""
SET_IDLE_CPU = 0.10
"""A set of workers whose mean is under 0.1 core idles (MAIN_CPU_IDLE's reasoning: a waiting process
reads ~0; in the recordings with several sets alive, tests/data/cpu_field/lightning_val_ckpt,
retry_loader and h100/run53_imagefolder_loop, the least busy set's mean is 0.00 in the median
sample). Beside a set at work it is left out of the per-worker CPU (worker_sets.py), or it would
halve that set's mean; the figure is then said "of the sets at work"."""
SET_GAP_S = 0.15
"""Workers forked straight from the training process whose start times lie more than 0.15 s apart
belong to different sets. A DataLoader iterator forks its workers in a loop, each fork copying the
page tables (about 0.5 ms a GB resident, measured on the CPU VM: 1-3 ms for 0.2-3 GB), and a set's
workers started 10-40 ms apart on the loaded 2-core VM; a 100 GB process would fork in tens of ms.
A later set starts after the earlier one's workers ran and a batch or an error came back: 0.45-9 s
apart where kept exceptions held old iterators (tests/data/cpu_field/retry_loader.jsonl.gz), from
0.24 s where workers crashed about every second (trial 26). Spawned or forkserver workers start
as slowly as their dataset pickles, so they are told by the ticks they were first seen in instead.
Sets started less than 0.15 s apart read as one."""

PILED_SETS = 4
"""New sets of workers, started during the watch and alive at its end, that make a pile-up beside
sets that were replaced. A job's own loaders (training, validation, test), each with
persistent_workers=True, add up to three sets, once each, and a watch begun beside the first may
see the other two start; where a set was replaced, the replacement is a new set too. So four or
more new sets alive beside re-created ones, or three where none was replaced, are iterators the job
made anew and still holds (trial 26: a job that kept every iterator while some crashed had 98
workers alive after 35 s, its sentence saying only "re-created every ~2.0 s")."""

# -- ranking by cost (decide.py) ----------------------------------------------------------------
COST_MARGIN = 1.5
"""A challenger displaces the stage in force only with an estimated gain 1.5x as large. Gains come
from shares: at a share of 0.5 one standard error of a dozen stack samples (+-0.15) moves
1 / (1 - share) from 1.5x to 2.9x, about a factor of 1.4 either way."""
CONTENTION_CAUSE = 0.20
"""An outside cause taking >= 20 % (TF's "high" share: of CPU time for steal, quota throttling or
run-queue waits; of the GPU's time for a tenant or throttling) slows every stage that needs that
resource, so it outranks a stage bound by the same resource whatever that stage's own estimate;
under it, contention wins only where its estimated loss is the larger."""
SHARE_SE_BANDS = 2.0
"""How far a recurring phase's share (checkpoint saves over the last minute) may fall below its cut
before the stage in force lets go: two standard errors of a share at the cut, sqrt(p(1-p)/n) over
the n main-thread samples it is read from (0.07 over 120, a minute at 2 Hz; 0.20 over 16 samples,
held to half the 0.20 cut: input_stages.share_band, or no reading could end the hold); a challenger
still needs the cut plus the usual band. A steady share then stays on one side: a
save every 3 s taking about 20 % flipped the verdict on 8 of 26 frames with the fixed 0.05 band."""

# -- the report's straggler ---------------------------------------------------------------------
STRAGGLER_HEADLINE_SHARE = 0.5
"""A rank named as the straggler on at least half of the ticks that showed two or more ranks leads
the report: in lock-step training the others then wait for it most of the run, so it is what holds
the job, whatever each process's own verdict says. Named less often, the report still names it."""
