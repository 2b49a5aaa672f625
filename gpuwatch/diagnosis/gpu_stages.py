"""Stages read mostly off the GPU: memory/layout-bound (4), launch-bound (5) and healthy.

Signatures measured on an H200 (docs/THRESHOLDS.md): healthy bf16 = GR 100, SM 96.6, tensor 93.8, occupancy 14.3;
layout copy = GR 100, SM 99.9, tensor 0.9, occupancy 87.7, DRAM 24; launch- and sync-bound =
GR 18-26, SM ~0.03 (the host cannot issue kernels fast enough, and each is tiny).
"""

from __future__ import annotations

from gpuwatch.diagnosis.evidence import INFO, REQ, SUP, Checks, fmt, yes
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.stages import StageResult, result, warned_by
from gpuwatch.diagnosis.thresholds import (
    BUSY_IDLE,
    BUSY_SATURATED,
    BUSY_STARVED,
    DRAM_BOUND,
    LAYOUT_SHARE,
    MAIN_ACTIVE_SHARE,
    MAIN_CPU_BUSY,
    OCC_MEMORY,
    SM_HEALTHY,
    SM_INEFFECTIVE,
    TENSOR_LOW,
    TINY_KERNEL_RATIO,
    WORKER_CPU_BUSY,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import GPU_BOUND, GPU_MEMORY, LAUNCH


def _no_gpu(c: Checks, s: Signals) -> StageResult:
    # Nothing of the stage can be read: "does not apply", so its level is n/a (compose.py), not ok.
    c.note("gpu", f"no GPU to judge ({s.gpu.reason})", False, kind=INFO, applies=False)
    return result(c, False, False, 0.0)


def _busy_gates(c: Checks, s: Signals) -> tuple[bool, bool]:
    """(busy enough to be GPU-side at all, saturated). Between BUSY_STARVED's 70 % (starved below) and 90 %
    (saturated above) a GPU-side stage is named only when no host-side stage explains the gaps."""
    busy = s.gpu.compute_busy
    floor = c.check("gpu_active", busy, BUSY_STARVED, ">=", "GPU kernel-active time", kind=REQ)
    sat = c.check("gpu_saturated", busy, BUSY_SATURATED, ">=", "GPU kernel-active time, saturated", kind=REQ)
    if sat is not None:
        c.support.append(sat)
    return floor is True, sat is True


def while_active(s: Signals, value: float | None) -> float | None:
    """A GPM ratio over the time the GPU had work: GPM averages over the whole tick, so a GPU busy
    85 % of the time with every SM working reads SM 85 %; divided by GR it reads 100 %."""
    gr = s.gpu.gr
    if value is None or gr is None or gr <= 0:
        return value
    return min(1.0, value / gr)


def sm_per_gr(s: Signals) -> float | None:
    """SM active over GR engine active: the shape of the kernels that ran (tiny kernels keep the
    engine busy with few SMs). None where no kernels ran to have a shape: with the engine active
    under BUSY_IDLE (an idle H200 reads ~0.006 %, SM 0) the ratio is 0 over nothing, and would call
    an idle GPU "tiny kernels" (run 25's persistent-workers job, starved by its loader)."""
    g = s.gpu
    if g.sm is None or g.gr is None or g.gr < BUSY_IDLE:
        return None
    return g.sm / g.gr


NO_KERNELS = f"no kernels ran: the GR engine was active under {BUSY_IDLE * 100:.0f} % of the time"
"""Why the kernel shape does not apply to a tick (the cut is BUSY_IDLE)."""


def gpu_memory(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(GPU_MEMORY, relax)
    g, st = s.gpu, s.stacks
    if not g.present:
        return _no_gpu(c, s)
    busy, saturated = _busy_gates(c, s)
    layout_share = st.layout / st.n_main if st.available and st.n_main else None
    if g.gpm:
        sm = c.check("sm_active", while_active(s, g.sm), SM_HEALTHY, ">=", "SMs active while the GPU works (GPM)",
                     kind=REQ)
        tensor = c.check("tensor", while_active(s, g.tensor), TENSOR_LOW, "<=", "tensor pipes active", kind=REQ)
        # Two signs of memory-bound kernels, either of which will do (both are gates, so both take the
        # stability rule's hysteresis: kind=REQ; neither is needed alone). Their texts say so, so that a
        # "○" on one beside the stage named is not read as a cut the verdict ignored (review 36).
        dram = c.check("dram", while_active(s, g.dram), DRAM_BOUND, ">=",
                       "DRAM bandwidth used (a sign of memory-bound kernels; this or SM occupancy)", kind=REQ)
        occ = c.check("occupancy", while_active(s, g.occ), OCC_MEMORY, ">=",
                      "SM occupancy, warps resident (a sign of memory-bound kernels; this or DRAM bandwidth)",
                      kind=REQ)
        # Kernels run asynchronously, so the main thread rarely sits in the layout op itself: shown only.
        layout = c.check("layout_ops", layout_share, LAYOUT_SHARE, ">=", "stack samples of the main thread in layout ops (permute, contiguous, cat)", kind=INFO)
        c.support.extend(x for x in (dram, occ) if x is not None)  # both signs of memory-bound kernels
        # Occupancy alone (DRAM under its cut) is positive evidence, and names the stage: on an H200 the
        # layout copy (t().contiguous()) read occupancy 87.7 %, tensor 0.9 %, SMs 99.9 % but DRAM only
        # 24 %, and the real layout/elementwise job (bench/results/2026-12-02-h200/acc/gpu_memory.jsonl)
        # 86 % and 44 %; strided copies and short elementwise kernels wait on memory access without
        # filling the bus. Matrix work reads low occupancy (the bf16 GEMM 14.3 %) and high tensor
        # activity, so the two readings together (SMs full of warps, no tensor work, a saturated GPU)
        # were seen only for memory-access-bound kernels. What it does not show is a full memory bus:
        # the sentence and the remedies say which sign held (``by``), never "memory traffic" on
        # occupancy alone, and the layout fixes only where layout ops were seen on the main thread.
        fires = busy and yes(sm) and yes(tensor) and (yes(dram) or yes(occ))
        warn = fires or ((g.dram or 0.0) >= DRAM_BOUND and busy)
        by = "dram" if yes(dram) else "occupancy" if yes(occ) else ""
    else:
        c.note("gpm", f"no GPM ({g.gpm_reason}): DRAM and tensor activity unknown", False, kind=INFO)
        layout = c.check("layout_ops", layout_share, LAYOUT_SHARE, ">=", "stack samples of the main thread in layout ops (permute, contiguous, cat)", kind=REQ)
        c.check("util_mem", g.util_mem, DRAM_BOUND, ">=", "NVML memory util (time-active, weak)")
        fires = busy and yes(layout)
        warn = fires  # without GPM only the verdict's own cuts: no warning of its own to word
        by = "layout" if yes(layout) else ""
    return result(c, fires, warn, layout_share, "gpm" if g.gpm else "stacks",
                  lambda: warned_by(g.dram, DRAM_BOUND, ">=", "DRAM bandwidth used") + ", while the GPU is busy",
                  sm=g.sm, tensor=g.tensor, dram=g.dram, occ=g.occ, busy=g.compute_busy, saturated=saturated,
                  layout_detail=_layout_detail(s), layout_share=layout_share,
                  # The readings as the checks read them (over the GPU's active time), and which sign
                  # held: the sentence quotes the figures the evidence rows show, and says what fired.
                  sm_work=while_active(s, g.sm), tensor_work=while_active(s, g.tensor), dram_work=while_active(s, g.dram),
                  occ_work=while_active(s, g.occ), by=by, layout_seen=yes(layout))


def _layout_detail(s: Signals) -> str | None:
    return s.stacks.top(lb.ROLE_MAIN_THREAD, lb.DISPATCH, lb.SYNC) if s.stacks.layout else None


def launch(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(LAUNCH, relax)
    g, st, job = s.gpu, s.stacks, s.job
    if not g.present:
        return _no_gpu(c, s)
    busy = c.check("gpu_active", g.compute_busy, BUSY_STARVED, "<=", "GPU kernel-active time", kind=REQ)
    # NVML util counts copies: a GPU busy copying (pinned H2D reads 100 %) is not waiting for launches.
    util = c.check("gpu_util", g.busy, BUSY_STARVED, "<=", "GPU utilization (NVML, copies included)", kind=REQ)
    busy = yes(busy) and util is not False
    ratio = sm_per_gr(s)
    # With stacks the kernel shape corroborates; without, it is the only GPU-side proof: a gate.
    idle = g.gr is not None and g.gr < BUSY_IDLE
    # Said as a share, as the GPU-bound sentence says "SMs 88 % active": a bare ratio "0.88" beside
    # it read as another signal (review 46).
    tiny = c.check("sm_per_gr", ratio, TINY_KERNEL_RATIO, "<=", "SMs active while the graphics engine works (GPM; tiny kernels keep it low)",
                   kind=SUP if st.available else REQ, na=NO_KERNELS if idle else "")
    # The launching threads run flat out, dispatching or spin-waiting in a sync (a spin-waiting CUDA sync burns a core). An unknown
    # CPU (no process sample) does not block.
    cpu = c.check("main_cpu", job.main_thread_cpu, MAIN_CPU_BUSY, ">=", "main + autograd thread CPU",
                  unit="cores", kind=REQ)
    sync, disp = st.share(lb.SYNC) or 0.0, st.share(lb.DISPATCH, lb.BACKWARD, lb.OPTIMIZER) or 0.0
    if st.available:
        active = c.check("main_active", st.active, MAIN_ACTIVE_SHARE, ">=",
                         "main thread in the step (dispatch, sync, backward, optimizer)", kind=REQ)
        # "Not input-bound" is a wait under WAIT_MODERATE (5 %); over a dozen samples that is noise-bound, so the gate is "works more
        # than it waits" and io/decode, which need wait >= 20 % and busy workers, win by share.
        wait = (st.wait or 0.0) < (st.active or 0.0)
        c.check("no_wait", st.wait, st.moderate, "<", "main thread waiting for a batch", samples=st.n_main)
        # Launch-bound is a GPU idle *while the step runs*: the host cannot issue its kernels fast
        # enough. Of the GPU's idle time, at most the main thread's time outside the step (1 - active)
        # can fall outside it, so step share less kernel-active time is idle time inside the step, at
        # least; read as a share of the step's time. A GPU busy whenever the main thread is in the
        # step and idle only while it is elsewhere (saving a checkpoint, evaluating on the host)
        # idles for that other work (the H200 checkpoint job: step in 50-67 % of samples, GPU
        # kernel-active 40-62 %, SMs 86 % active while it works, read "Launch" at warning level 39 %
        # of the time). The cut is BUSY_STARVED's: the GPU idle 30 % of the step's time, as 30 % of
        # all time is starved. The H200 and H100 launch scenarios read 79-99 %; the checkpoint jobs'
        # ticks at most 25 %. A step 60 % of the samples beside a GPU 35 % busy reads 42 %.
        gap = (None if st.active is None or g.compute_busy is None
               else 1.0 - g.compute_busy / st.active if st.active else 0.0)
        in_step = c.check("idle_in_step", gap, 1.0 - BUSY_STARVED, ">=",
                          "GPU idle while the main thread is in the step (share of the step's time, at least)",
                          kind=REQ)
        fires = yes(busy) and yes(active) and wait and cpu is not False and in_step is not False
        # A spin-wait in .item() reads as "dispatch" at the user's line (collectors/stack_labels.py):
        # "sync" is named only when sync frames are seen.
        sub = "sync" if sync >= disp else "dispatch"
        weight = st.active
    else:
        c.note("stacks", f"no stacks ({st.reason}): dispatch and sync are not told apart", False, kind=INFO)
        idle_workers = c.check("worker_cpu", job.worker_cpu, WORKER_CPU_BUSY, "<", s.worker_cpu_what,
                               unit="cores", kind=REQ)
        # Without stacks, a busy main thread could also be loading data inline: only the GPU-side
        # tiny-kernel signature tells launch-bound work apart, so it is required here.
        fires = yes(busy) and yes(cpu) and yes(tiny) and idle_workers is not False and not s.cpu_short
        sub = ""
        weight = 1.0 - (g.compute_busy or 0.0)
    warn = fires or (yes(busy) and yes(tiny))
    def why() -> str:
        if fires and not yes(tiny):  # fired by the main thread's step (stacks), not by the kernels' shape
            return (f"the GPU idles while the main thread is in the step: the step holds {fmt(st.active)} of its "
                    f"samples, the GPU is kernel-active {fmt(g.compute_busy)} of the time")
        return (warned_by(ratio, TINY_KERNEL_RATIO, "<=", "tiny kernels: SMs active while the graphics engine works")
                + f", while the GPU is kernel-active {fmt(g.compute_busy)}")
    return result(c, fires, warn, weight, sub, why, True, busy=g.compute_busy, sm=g.sm, gr=g.gr, ratio=ratio,
                  # The step's ops as the sub-stage reads them (forward dispatch, backward, optimizer):
                  # run 25's switch job read "0 % of samples in ops" with every sample in backward/optimizer.
                  sync=st.share(lb.SYNC), dispatch=st.share(lb.DISPATCH, lb.BACKWARD, lb.OPTIMIZER),
                  main_cpu=job.main_thread_cpu, sync_detail=st.top(lb.ROLE_MAIN_THREAD, lb.SYNC),
                  dispatch_detail=st.top(lb.ROLE_MAIN_THREAD, lb.DISPATCH, lb.BACKWARD, lb.OPTIMIZER))


def gpu_bound(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(GPU_BOUND, relax)
    g, st = s.gpu, s.stacks
    if not g.present:
        return _no_gpu(c, s)
    busy, saturated = _busy_gates(c, s)
    sm = while_active(s, g.sm)
    useful = c.check("sm_useful", sm, SM_INEFFECTIVE, ">=", "SMs active while the GPU works (GPM)", kind=REQ)
    c.check("sm_active", g.sm, SM_HEALTHY, ">=", "SMs active (GPM)")
    c.check("no_wait", st.wait, st.moderate, "<", "main thread waiting for a batch", samples=st.n_main)
    if not g.gpm:
        # "never starved" only of a saturated GPU, as the sentence says it (review of session 22)
        said = "'busy' only means never starved, not efficient" if saturated else "how efficient the kernels are is not known"
        c.note("gpm", f"no GPM ({g.gpm_reason}): {said}", False)
    c.check("tensor", g.tensor, TENSOR_LOW, ">", "tensor pipes active", kind=INFO)
    fires = busy and useful is not False
    return result(c, fires, False, g.compute_busy, "" if saturated else "mostly", busy=g.compute_busy, sm=g.sm,
                  tensor=g.tensor, wait=st.wait, gpm=g.gpm, saturated=saturated, sm_work=sm,
                  # the window the wait was read over (the held one while GPU-bound is in force), for the sentence
                  n_main=st.n_main, moderate=st.moderate)
