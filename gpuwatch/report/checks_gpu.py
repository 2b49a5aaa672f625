"""Checks on the GPU side: the PCIe link under load, other tenants, throttling, pageable copies, ECC.

Pure functions over frames, verdicts and the environment probe; each returns a CheckResult.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import median

from gpuwatch.collectors.environment import Environment
from gpuwatch.diagnosis.host_signals import job_signals
from gpuwatch.diagnosis.thresholds import (
    BAD_REASON_BITS,
    BAD_THROTTLE_WORDS,
    HW_SLOWDOWN_BIT,
    LINK_DOWN_SHARE,
    LINK_LOAD,
    MIN_COPY_TICKS,
    PAGEABLE_GAIN,
    PAGEABLE_RX_MIBS,
    PINNED_RX_MIBS,
    RX_PAGEABLE_MAX,
    SW_POWER_CAP_BIT,
    TENANT_SHARE,
    THROTTLE_FRAC,
)
from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.stacks import H2D as LABEL_H2D
from gpuwatch.model.stacks import ROLE_MAIN_THREAD, StackSample
from gpuwatch.model.values import Maybe, Unsupported, known
from gpuwatch.model.verdict import H2D, Verdict
from gpuwatch.report.model import FAIL, NOT_CHECKED, PASS, WARN, CheckResult, LinkSeen
from gpuwatch.report.units import rate

LOADED_UTIL = LINK_LOAD * 100
"""GPU utilization (%) above which the link must run at full speed (thresholds.LINK_LOAD)."""


NO_JOB_GPU = ("the job used no GPU while watched: NVML listed none of its processes (a CPU-only job, or "
              "gpuwatch runs in another PID namespace than the job: see the GPU panel's note)")


def target_gpus(frames: Sequence[Frame]) -> set[int]:
    """Indexes of the GPUs the job used at some tick (other GPUs of the host are not its business)."""
    return {g.index for f in frames if isinstance(f.gpus, tuple) for g in f.gpus if g.used_by_target}


def _no_gpu_reason(frames: Sequence[Frame], field: str) -> str:
    if any(isinstance(f.gpus, tuple) and f.gpus for f in frames):
        return NO_JOB_GPU
    for f in reversed(frames):
        v = getattr(f, field)
        if isinstance(v, Unsupported):
            return v.reason
    return "no frame held GPU data" if frames else "no frames were collected"


def _gpu_samples(frames: Sequence[Frame]) -> list[tuple[Frame, GpuSample]]:
    idx = target_gpus(frames)
    return [(f, g) for f in frames if isinstance(f.gpus, tuple) for g in f.gpus if g.index in idx and not g.lost]


def _util(frame: Frame, index: int) -> float | None:
    if isinstance(frame.gpus, tuple):
        for g in frame.gpus:
            if g.index == index and known(g.util_gpu):
                return float(g.util_gpu)  # type: ignore[arg-type]
    return None


def _loaded_links(frames: Sequence[Frame]) -> list[tuple[Frame, PcieSample]]:
    idx = target_gpus(frames)
    return [(f, p) for f in frames if isinstance(f.pcie, tuple) for p in f.pcie if p.index in idx
            and (_util(f, p.index) or 0.0) >= LOADED_UTIL
            and all(known(x) for x in (p.gen_current, p.gen_max, p.width_current, p.width_max))]


def links_under_load(frames: Sequence[Frame]) -> tuple[LinkSeen, ...]:
    """The most frequent link state of each GPU while it was busy."""
    seen: Counter = Counter()
    for _, p in _loaded_links(frames):
        seen[(p.index, p.gen_current, p.width_current, p.gen_max, p.width_max)] += 1
    best: dict[int, tuple] = {}
    for key, n in seen.most_common():
        best.setdefault(key[0], (*key, n))
    return tuple(LinkSeen(*best[i]) for i in sorted(best))


def check_pcie_link(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "PCIe link at full speed under load"
    idx = target_gpus(frames)
    pairs = [(f, p) for f in frames if isinstance(f.pcie, tuple) for p in f.pcie if p.index in idx]
    if not idx or not pairs:
        return CheckResult("pcie_link", title, NOT_CHECKED, _no_gpu_reason(frames, "pcie"))
    loaded = _loaded_links(frames)
    replays = sum(p.replay_delta for _, p in pairs if isinstance(p.replay_delta, int))
    if not loaded:
        return CheckResult("pcie_link", title, NOT_CHECKED,
                           f"the GPU was never >= {LOADED_UTIL:.0f} % busy with the link readable; an idle "
                           "GPU lowers its link on purpose, so the idle link says nothing")
    down = [p for _, p in loaded if p.gen_current < p.gen_max or p.width_current < p.width_max]  # type: ignore[operator]
    share = len(down) / len(loaded)
    if down:
        p = down[-1]
        what = (f"Gen{p.gen_current} x{p.width_current} instead of Gen{p.gen_max} x{p.width_max} "
                f"in {share:.0%} of {len(loaded)} loaded ticks (GPU {p.index})")
        fix = ("reseat the card or its riser, check the slot's BIOS link setting and `lspci -vv` "
               "(LnkSta vs LnkCap); a link that trains down under load is a hardware fault")
        return CheckResult("pcie_link", title, FAIL if share >= LINK_DOWN_SHARE else WARN, what, fix)
    if replays:
        return CheckResult("pcie_link", title, WARN,
                           f"full speed under load, but {replays} PCIe replays (link retries) during the run",
                           "rising replays point to a marginal link: check `dmesg` for AER errors and reseat the card")
    p = loaded[-1][1]
    return CheckResult("pcie_link", title, PASS,
                       f"Gen{p.gen_current} x{p.width_current} = maximum in all {len(loaded)} loaded ticks")


def check_other_processes(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "No other processes on the job's GPUs"
    samples = _gpu_samples(frames)
    if not samples:
        return CheckResult("other_gpu_processes", title, NOT_CHECKED, _no_gpu_reason(frames, "gpus"))
    # A PID that was the job's on some tick is the job's on all: the driver still lists a process
    # a moment after it exited, when the job's process tree no longer holds it (recordings made
    # before collectors/gpu.py kept such a PID the job's showed the job's own exited main process).
    job = {p.pid for _, g in samples for p in g.processes if p.is_target}
    others: dict[tuple[int, int], tuple[str, list[float], int]] = {}
    for _, g in samples:
        for p in g.processes:
            if p.is_target or p.pid in job:
                continue
            name, sm, mem = others.get((g.index, p.pid), (p.name, [], 0))
            if known(p.sm_util):
                sm.append(float(p.sm_util))  # type: ignore[arg-type]
            if isinstance(p.used_memory, int):
                mem = max(mem, p.used_memory)
            others[(g.index, p.pid)] = (name, sm, mem)
    if not others:
        return CheckResult("other_gpu_processes", title, PASS, f"only the job's processes over {len(frames)} ticks")
    parts, worst = [], 0.0
    for (gi, pid), (name, sm, mem) in sorted(others.items()):
        mean_sm = sum(sm) / len(sm) if sm else None
        worst = max(worst, mean_sm or 0.0)
        sm_txt = f"{mean_sm:.0f} % SM" if mean_sm is not None else "SM use unknown"
        parts.append(f"PID {pid} ({name}) on GPU {gi}: {sm_txt}, {mem / 2**30:.1f} GiB")
    status = FAIL if worst >= TENANT_SHARE * 100 else WARN
    return CheckResult("other_gpu_processes", title, status, "; ".join(parts[:5]),
                       "move the other jobs to another GPU or set CUDA_VISIBLE_DEVICES; "
                       "`nvidia-smi` lists them")


def _bad_throttle(g: GpuSample) -> tuple[float, float] | None:
    """(bad share, SW power-cap share) of one tick, or None when neither source is readable."""
    if isinstance(g.throttle, tuple):
        bad = cap = 0.0
        for name, frac in g.throttle:
            n = name.lower()
            if "power_cap" in n:
                cap = max(cap, frac)
            elif any(k in n for k in BAD_THROTTLE_WORDS):
                bad = max(bad, frac)
        if isinstance(g.clock_reasons, int) and g.clock_reasons & HW_SLOWDOWN_BIT:
            bad = 1.0  # no ns counter for HW slowdown: its bit counts the tick, as in the verdict
        return bad, cap
    if isinstance(g.clock_reasons, int):
        return (1.0 if g.clock_reasons & BAD_REASON_BITS else 0.0,
                1.0 if g.clock_reasons & SW_POWER_CAP_BIT else 0.0)
    return None


def check_throttling(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "No thermal, power-brake or HW slowdown"
    samples = _gpu_samples(frames)
    shares = [s for _, g in samples if (s := _bad_throttle(g)) is not None]
    if not shares:
        why = _no_gpu_reason(frames, "gpus") if not samples else "clock-event reasons unreadable on this GPU"
        return CheckResult("throttling", title, NOT_CHECKED, why)
    bad = [b for b, _ in shares]
    mean_bad, mean_cap = sum(bad) / len(bad), sum(c for _, c in shares) / len(shares)
    cap_txt = f"; SW power cap {mean_cap:.0%} of the time (normal for a saturated GPU)" if mean_cap > 0 else ""
    fix = ("check cooling and airflow (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`), and the power "
           "supply or chassis power-brake signal")
    if mean_bad >= THROTTLE_FRAC:
        return CheckResult("throttling", title, FAIL, f"slowed down {mean_bad:.0%} of the time{cap_txt}", fix)
    if max(bad) >= THROTTLE_FRAC:
        n = sum(1 for b in bad if b >= THROTTLE_FRAC)
        return CheckResult("throttling", title, WARN, f"slowed down in {n} of {len(bad)} GPU ticks{cap_txt}", fix)
    return CheckResult("throttling", title, PASS, f"no slowdown beyond the SW power cap{cap_txt}")


def _copy_ticks(frames: Sequence[Frame], verdicts: Sequence[Verdict]) -> list[Frame]:
    """Ticks dominated by host-to-device copies: the verdict says h2d, or the main thread copies."""
    out = []
    for f, v in zip(frames, verdicts):
        main_copy = isinstance(f.stacks, StackSample) and any(
            t.role == ROLE_MAIN_THREAD and t.label == LABEL_H2D for t in f.stacks.threads)
        if v.stage == H2D or main_copy:
            out.append(f)
    return out


def _rx_fraction(p: PcieSample) -> float | None:
    if known(p.rx_bps) and known(p.capacity_bps) and p.capacity_bps:
        return float(p.rx_bps) / float(p.capacity_bps)  # type: ignore[arg-type]
    return None


def check_pageable_copies(frames: Sequence[Frame], verdicts: Sequence[Verdict], env: Maybe[Environment]) -> CheckResult:
    title = "Host-to-device copies from pinned memory"
    idx = target_gpus(frames)
    if not idx or not any(isinstance(f.pcie, tuple) for f in frames):
        return CheckResult("pageable_h2d", title, NOT_CHECKED, _no_gpu_reason(frames, "pcie"))
    copies = _copy_ticks(frames, verdicts)
    if len(copies) < MIN_COPY_TICKS:
        if not any(isinstance(f.stacks, StackSample) for f in frames) and not any(v.stage == H2D for v in verdicts):
            return CheckResult("pageable_h2d", title, NOT_CHECKED,
                               "no stack samples and no h2d verdict: nothing tells when copies dominate")
        return CheckResult("pageable_h2d", title, PASS,
                           f"copies dominated no tick of {len(frames)}" if not copies else
                           f"copies dominated only {len(copies)} of {len(frames)} ticks: not a pattern")
    fr = [x for f in copies if isinstance(f.pcie, tuple) for p in f.pcie if p.index in idx
          if (x := _rx_fraction(p)) is not None]
    if not fr:
        return CheckResult("pageable_h2d", title, NOT_CHECKED, "PCIe RX rate or link capacity unreadable")
    m = median(fr)
    cap = next(float(p.capacity_bps) for f in copies if isinstance(f.pcie, tuple) for p in f.pcie  # type: ignore[arg-type]
               if known(p.capacity_bps))
    # rates in decimal units, as the TUI, the verdict's evidence and the remedies say them
    said = (f"while copies dominated ({len(copies)} ticks), RX ran at {rate(m * cap, 1)} = {m:.0%} of the "
            f"link's {cap / 1e9:.0f} GB/s; copies below {RX_PAGEABLE_MAX:.0%} of the link look pageable "
            f"(measured on an H200 Gen5 x16: pinned {rate(PINNED_RX_MIBS * 2**20, 1)} = 94 %, pageable "
            f"{rate(PINNED_RX_MIBS * 2**20 / PAGEABLE_GAIN, 1)} = 11 % from a host tensor the job wrote, the "
            f"remedy's figure, and at most {rate(PAGEABLE_RX_MIBS * 2**20, 1)} = 35 % from one never written)")
    if m < RX_PAGEABLE_MAX:
        if job_signals(copies, None).pin_seen:
            # The DataLoader pins its batches (its pt_data_pin thread was seen while the copies
            # dominated, not in another phase of the run: run 25's switch job pinned in its decode
            # phase, and copied pageable tensors in its h2d phase): a slow copy is then
            # a tensor made after the loader (pageable again) or small copies, not pin_memory off;
            # the PCIe remedy says the same, so the check does not ask for what is already on.
            return CheckResult("pageable_h2d", title, WARN,
                               said + "; the DataLoader pins its batches (its pin-memory thread runs)",
                               "copy the pinned batch itself with .to(device, non_blocking=True), not a new CPU "
                               "tensor made after the loader (e.g. by .float())")
        return CheckResult("pageable_h2d", title, WARN, said,
                           "pin the host memory: DataLoader(pin_memory=True) and .to(device, non_blocking=True)")
    return CheckResult("pageable_h2d", title, PASS, said + ": the copies run near link speed")


def check_ecc(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "No uncorrected ECC errors"
    if isinstance(env, Unsupported):
        return CheckResult("ecc", title, NOT_CHECKED, env.reason)
    if isinstance(env.gpus, Unsupported):
        return CheckResult("ecc", title, NOT_CHECKED, env.gpus.reason)
    idx = target_gpus(frames) or {g.index for g in env.gpus if g.used_by_target}
    gpus = [g for g in env.gpus if g.index in idx]
    if not gpus:
        return CheckResult("ecc", title, NOT_CHECKED, NO_JOB_GPU)
    vol = [(g.index, g.ecc_uncorrected_volatile) for g in gpus if isinstance(g.ecc_uncorrected_volatile, int)]
    agg = [(g.index, g.ecc_uncorrected_aggregate) for g in gpus if isinstance(g.ecc_uncorrected_aggregate, int)]
    if not vol and not agg:
        reasons = {g.ecc_uncorrected_volatile.reason for g in gpus if isinstance(g.ecc_uncorrected_volatile, Unsupported)}
        return CheckResult("ecc", title, NOT_CHECKED, "; ".join(sorted(reasons)) or "no GPU")
    if any(n for _, n in vol):
        return CheckResult("ecc", title, FAIL, ", ".join(f"GPU {i}: {n} since boot" for i, n in vol if n),
                           "uncorrected ECC errors corrupt results: drain the GPU and have it checked (`nvidia-smi -q -d ECC`)")
    if any(n for _, n in agg):
        return CheckResult("ecc", title, WARN, ", ".join(f"GPU {i}: {n} over its life" for i, n in agg if n),
                           "none since boot, but the GPU has a history: watch `nvidia-smi -q -d ECC`")
    return CheckResult("ecc", title, PASS, "0 uncorrected errors (volatile and aggregate)")
