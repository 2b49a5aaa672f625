"""Stage 3: host-to-device transfer over PCIe.

Four ways it shows (measured on an H200; the cuts and their bases are in docs/THRESHOLDS.md):
- "link": RX near the link's capacity while the SMs idle (pinned copies; NVML util reads 100 %
  because it counts copy-engine time, so util alone would call this GPU-bound).
- "pageable": the GPU is busy with copies only (NVML util above GPM's GR engine) at a fraction of
  the link, the signature of unpinned memory (measured at 1/9 of pinned bandwidth).
- "main_copy": the main thread spends its time in ``.to(device)``/``.cuda()``.
- "pin_thread": the pin-memory thread is saturated while the main thread waits for data.
"""

from __future__ import annotations

from gpuwatch.diagnosis.evidence import INFO, REQ, Checks, fmt, yes
from gpuwatch.diagnosis.input_stages import gpu_gate
from gpuwatch.diagnosis.signals import Signals
from gpuwatch.diagnosis.stages import StageResult, result, warned_by
from gpuwatch.diagnosis.thresholds import (
    COPY_SHARE,
    H2D_SHARE,
    PIN_BUSY_SHARE,
    PIN_CPU_SATURATED,
    REPLAYS_PER_S,
    RX_PAGEABLE_MAX,
    RX_SATURATED,
    RX_SIGNIFICANT,
    SM_INEFFECTIVE,
    high_cut,
)
from gpuwatch.model import stacks as lb
from gpuwatch.model.verdict import H2D

GPU_SIDE = ("link", "pageable", "copies")
"""Sub-cases read from the GPU alone; they outrank a busy-looking NVML util."""


def h2d(s: Signals, relax: float = 0.0) -> StageResult:
    c = Checks(H2D, relax)
    gpu, st, job = s.gpu, s.stacks, s.job
    if not gpu.present:
        # Nothing of the stage can be read: "does not apply", so its level is n/a (compose.py), not ok.
        c.note("gpu", f"no GPU to copy to ({gpu.reason})", False, kind=INFO, applies=False)
        return result(c, False, False, 0.0)
    # The same reading against two cuts, each named for what it tells (review 30: two rows of one
    # reading, one met and one not, read as a contradiction): a full link, and traffic at all
    rx = c.check("rx_link", gpu.rx_frac, RX_SATURATED, ">=", "PCIe link full: host-to-device RX of the link",
                 kind=REQ)
    sm_low = c.check("sm_active", gpu.sm, SM_INEFFECTIVE, "<", "SMs active (GPM)", kind=REQ)
    copy = c.check("copy_only", gpu.copy_frac, COPY_SHARE, ">=", "GPU busy with copies only (NVML utilization above GPM graphics-engine activity)",
                   kind=REQ)
    rx_some = c.check("rx_some", gpu.rx_frac, RX_SIGNIFICANT, ">=", "real host-to-device traffic: PCIe RX of the link",
                      kind=REQ)
    share = c.check("main_h2d", st.share(lb.H2D), H2D_SHARE, ">=", "main thread in host-to-device copies",
                    kind=REQ)
    pin_cpu = c.check("pin_cpu", job.pin_cpu, PIN_CPU_SATURATED, ">=", "pin-memory thread CPU", unit="cores",
                      kind=REQ)
    pin_busy = c.check("pin_busy", st.pshare(lb.PIN_BUSY), PIN_BUSY_SHARE, ">=",
                       "stack samples of the pin-memory thread copying into pinned memory", kind=REQ)
    wait = c.check("data_wait", st.wait, high_cut(st.n_main, s.gpu_starved), ">=", "main thread waiting for a batch", kind=REQ,
                   samples=st.n_main)
    if gpu.link:
        c.note("link", f"the PCIe link runs at {gpu.link} under load", True)
    if gpu.replays_per_s is not None:
        c.check("replays", gpu.replays_per_s, REPLAYS_PER_S, ">=", "PCIe replays (link retries)", unit="/s", kind=INFO)
    # The pin-memory thread (pt_data_pin) runs only beside DataLoader workers: with num_workers=0 the
    # loader pins on the main thread, if at all, and a job without a DataLoader has no such thread
    # either. Its absence says "not pinned" only where workers were seen (review 36: the h2d job, no
    # workers, read "● no pin-memory thread: the DataLoader does not pin memory").
    loader = job.workers > 0
    if job.pin_seen:
        c.note("pin_memory", "pin_memory is on (its pin-memory thread runs)", False, kind=INFO)
    elif loader and job.pin_seen is not None:
        c.note("pin_memory", "no pin-memory thread beside the DataLoader workers: the DataLoader does not pin "
               "memory", True, kind=INFO)
    elif loader:
        c.note("pin_memory", "pin-memory thread: not known (the training process's threads were not read)", False,
               kind=INFO, applies=False)
    else:
        c.note("pin_memory", "pin-memory thread: does not apply (no DataLoader worker seen: without workers there "
               "is no such thread, pinned or not)", False, kind=INFO, applies=False)

    # The link case needs GPM's SM reading when there is one; without GPM, RX at the link's
    # capacity is itself the proof (util cannot tell copies from kernels).
    link = yes(rx) and sm_low is not False
    pageable = yes(copy) and yes(sm_low) and yes(rx_some)
    starved = gpu_gate(c, s)
    main_copy = yes(share) and starved
    pin_thread = yes(wait) and (yes(pin_cpu) or yes(pin_busy)) and starved
    sub = ("link" if link else "pageable" if pageable else "pin_thread" if pin_thread
           else "main_copy" if main_copy else "")
    if sub == "pageable" and (gpu.rx_frac or 0.0) >= RX_PAGEABLE_MAX:
        sub = "copies"  # copy-dominated but too fast for pageable: big pinned copies not overlapped
    # Strength: how many of the signals that go with the sub-case agree.
    # unknown without workers (above), or where the job's threads were not read
    unpinned = False if job.pin_seen else None if job.pin_seen is None or not loader else True
    corroborate = {
        "link": (rx, sm_low, copy, share),
        "pageable": (copy, sm_low, rx_some, share, unpinned),
        "copies": (copy, sm_low, rx_some, share),
        "pin_thread": (pin_cpu, pin_busy, wait),
        "main_copy": (share, rx_some, sm_low),
    }.get(sub, ())
    c.support.extend(x for x in corroborate if x is not None)
    weight = max(st.share(lb.H2D) or 0.0, (st.wait or 0.0) if pin_thread else 0.0,
                 (gpu.copy_frac or 0.0) if sub in GPU_SIDE else 0.0)
    # Warn from a "moderate" share of copies on the main thread (WAIT_MODERATE), a downtrained
    # link, or the link half full (half RX_SATURATED): worth watching before it is the limit.
    warn = (st.share(lb.H2D) or 0.0) >= st.moderate or bool(gpu.link) or (gpu.rx_frac or 0.0) >= RX_SATURATED / 2

    def why() -> str:  # each of the three warning signs that holds
        return "; ".join(x for x in (
            warned_by(st.share(lb.H2D), st.moderate, ">=", "main thread in host-to-device copies", samples=st.n_main)
            if (st.share(lb.H2D) or 0.0) >= st.moderate else "",
            f"the PCIe link runs at {gpu.link} under load" if gpu.link else "",
            warned_by(gpu.rx_frac, RX_SATURATED / 2, ">=", "PCIe RX of the link")
            if (gpu.rx_frac or 0.0) >= RX_SATURATED / 2 else "") if x)
    facts = dict(
        rx_bps=gpu.rx_bps, rx_frac=gpu.rx_frac, capacity_bps=gpu.capacity_bps, copy_frac=gpu.copy_frac,
        busy=gpu.busy, sm=gpu.sm, h2d_share=st.share(lb.H2D), pin_seen=job.pin_seen, pin_cpu=job.pin_cpu,
        wait=st.wait, n_main=st.n_main, link=gpu.link, replays=gpu.replays_per_s, detail=st.top(lb.ROLE_MAIN_THREAD, lb.H2D),
        rx_text=fmt(gpu.rx_bps, "B/s"), loader=loader,
    )
    return result(c, bool(sub), warn, weight, sub, why, **facts)  # its why quotes warning signs, not what fires
