"""The GPU side of a window: which GPUs are the job's, and what NVML, GPM and PCIe say about them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.diagnosis.thresholds import (
    BAD_REASON_BITS,
    BAD_THROTTLE_WORDS,
    BUSY_IDLE,
    HW_SLOWDOWN_BIT,
    LINK_LOAD,
    RX_SIGNIFICANT,
)
from gpuwatch.diagnosis.sample_memo import SampleMemo
from gpuwatch.diagnosis.window import latest_reason, mean, med, num, unique_samples
from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.values import known



@dataclass(frozen=True, slots=True)
class Tenant:
    pid: int
    name: str
    sm_util: float | None


@dataclass(frozen=True, slots=True)
class GpuSignals:
    has_gpus: bool
    """NVML answered at all (False on CPU-only hosts)."""
    present: bool
    """The job runs on at least one of them, so the GPU can be judged."""
    reason: str | None
    """Why there is nothing to judge (no GPU, or the job holds none)."""
    assumed: bool = False
    """The GPU could not be tied to the job's PIDs (PID namespaces) and is assumed to be its own."""
    indexes: tuple[int, ...] = ()
    name: str = ""
    busy: float | None = None
    busy_mean: float | None = None
    util_mem: float | None = None
    gpm_reason: str | None = None
    gr: float | None = None
    sm: float | None = None
    occ: float | None = None
    tensor: float | None = None
    dram: float | None = None
    rx_bps: float | None = None
    rx_frac: float | None = None
    capacity_bps: float | None = None
    link: str | None = None
    """The link as it runs, e.g. "gen4 x8 of gen5 x16", when it runs below its maximum under load."""
    replays_per_s: float | None = None
    bad_throttle: float | None = None
    throttle_reasons: tuple[tuple[str, float], ...] = ()
    tenant_share: float | None = None
    tenants: tuple[Tenant, ...] = ()

    @property
    def gpm(self) -> bool:
        return self.sm is not None

    @property
    def compute_busy(self) -> float | None:
        """Kernel-active time: GPM's GR engine, which (unlike NVML util) leaves copies out."""
        return self.gr if self.gr is not None else self.busy

    @property
    def copy_frac(self) -> float | None:
        """Share of the tick the GPU was busy with copies only (NVML util counts the copy engine)."""
        if self.busy is None or self.gr is None:
            return None
        return max(0.0, self.busy - self.gr)


def gpu_signals(frames: Sequence[Frame], main_pids: frozenset[int], rank: int | None) -> GpuSignals:
    ticks: list[tuple[GpuSample, ...]] = unique_samples(frames, "gpus")  # type: ignore[assignment]
    if not ticks:
        reason = latest_reason(frames, "gpus") or "no GPU sample"
        return GpuSignals(has_gpus=False, present=False, reason=reason)
    indexes, assumed = _job_gpus(ticks, main_pids, rank)
    if not indexes:
        return GpuSignals(has_gpus=True, present=False, reason="the job holds no GPU")
    which = tuple(sorted(indexes))
    every = [_READINGS.get(t, (id(t), which), lambda t=t: _readings(t, indexes)) for t in ticks]
    every = [r for r in every if r[0]]
    chosen = [r[0] for r in every]
    busy = [r[1] for r in every]
    gpm = {k: med(r[2][i] for r in every) for i, k in enumerate(GPM_KEYS)}
    pcie = _pcie(frames, indexes, busy)
    throttles, bad = _throttle([r[4] for r in every])
    share, tenants = _tenants([r[5] for r in every])
    return GpuSignals(
        has_gpus=True, present=True, reason=None, assumed=assumed, indexes=tuple(sorted(indexes)),
        name=chosen[-1][0].name if chosen else "",
        busy=med(busy), busy_mean=mean(busy),
        util_mem=med(r[3] for r in every),
        gpm_reason=_gpm_reason(chosen),
        gr=gpm["gr_engine"], sm=gpm["sm_active"], occ=gpm["sm_occupancy"], tensor=gpm["tensor"],
        dram=gpm["dram_bw"], throttle_reasons=throttles, bad_throttle=bad,
        tenant_share=share, tenants=tenants, **pcie,
    )


GPM_KEYS = ("gr_engine", "sm_active", "sm_occupancy", "tensor", "dram_bw")
_READINGS: SampleMemo[tuple] = SampleMemo(2048)
"""Each GPU sample read once per set of the job's GPUs (sample_memo.py)."""


def _readings(tick: tuple[GpuSample, ...], indexes: set[int]) -> tuple:
    """The job's GPUs of one sample, their mean busy share, GPM readings, memory busy share, and
    their throttle and tenant readings (_throttle_parts, _tenant_parts)."""
    c = tuple(g for g in tick if g.index in indexes)
    return (c, _avg(c, lambda g: num(g.util_gpu, 0.01)),
            tuple(_avg(c, lambda g, k=k: _gpm(g, k)) for k in GPM_KEYS),
            _avg(c, lambda g: num(g.util_mem, 0.01)), _throttle_parts(c), _tenant_parts(c))


def _job_gpus(ticks: list[tuple[GpuSample, ...]], main_pids: frozenset[int], rank: int | None) -> tuple[set[int], bool]:
    """The GPUs the job (or the rank) runs on, and whether that had to be assumed."""
    used = {g.index for tick in ticks for g in tick if g.used_by_target}
    if rank is not None and main_pids:
        mine = {g.index for tick in ticks for g in tick for p in g.processes
                if p.pid in main_pids or p.local_pid in main_pids}
        if mine:
            return mine, False
        # LOCAL_RANK usually selects cuda:LOCAL_RANK; CUDA_VISIBLE_DEVICES can renumber, so this
        # is a guess, marked as assumed.
        if rank in used:
            return {rank}, True
    if used:
        return used, False
    last = ticks[-1]
    # NVML reports host PIDs; inside a container the job's may not map (NVML's per-process utilization is keyed by host PID). A lone
    # GPU that is busy while NVML names no process on it is taken as the job's, marked assumed.
    if len(last) == 1 and not last[0].processes and (num(last[0].util_gpu, 0.01) or 0.0) > BUSY_IDLE:
        return {last[0].index}, True
    return set(), False


def _avg(gpus: tuple[GpuSample, ...], read) -> float | None:
    return mean(read(g) for g in gpus)


def _gpm(g: GpuSample, key: str) -> float | None:
    return num(getattr(g.gpm, key), 0.01) if known(g.gpm) else None


def _gpm_reason(chosen: list[tuple[GpuSample, ...]]) -> str | None:
    for tick in reversed(chosen):
        for g in tick:
            if not known(g.gpm):
                return getattr(g.gpm, "reason", "GPM not available")
            if not known(g.gpm.sm_active):
                return getattr(g.gpm.sm_active, "reason", "GPM SM activity not available")
    return None


def _pcie(frames: Sequence[Frame], indexes: set[int], busy: list[float | None]) -> dict[str, object]:
    ticks: list[tuple[PcieSample, ...]] = unique_samples(frames, "pcie")  # type: ignore[assignment]
    which = tuple(sorted(indexes))
    rows = [_PCIE_ROWS.get(t, (id(t), which), lambda t=t: _pcie_row(t, indexes)) for t in ticks]
    rows = [r for r in rows if r is not None]
    if not rows:
        return {}
    rx = [r.rx for r in rows]
    frac = [r.frac for r in rows]
    cap = med(r.capacity for r in rows)
    # The rate over the rows that read the replay counter: each read counts the replays since the
    # previous read, which may be ticks back (read every second tick while relaxed, collectors/pcie.py).
    counted = [r for r in rows if r.replays is not None]
    replays = [r.replays for r in counted]
    span = counted[-1].t - counted[0].t if len(counted) > 1 else 0.0
    # The current link is read "under load" only: idle GPUs lower their link legitimately (LINK_LOAD).
    # Under load = the GPU busy half the time (P-state up) or real traffic on the link.
    loaded = (med(busy) or 0.0) >= LINK_LOAD or (med(frac) or 0.0) >= RX_SIGNIFICANT
    link = _degraded(rows[-1].links) if loaded else None
    return {
        "rx_bps": med(rx), "rx_frac": med(frac), "capacity_bps": cap, "link": link,
        "replays_per_s": (sum(replays[1:]) / span) if len(replays) > 1 and span > 0 else None,
    }


@dataclass(frozen=True, slots=True)
class _PcieRow:
    """One PCIe sample's readings of the job's GPUs' links (means over them; replays summed)."""

    links: list[PcieSample]
    t: float
    rx: float | None
    frac: float | None
    capacity: float | None
    replays: int | None
    """None where no link read its replay count."""


def _pcie_row(tick: tuple[PcieSample, ...], indexes: set[int]) -> _PcieRow | None:
    r = [p for p in tick if p.index in indexes]
    if not r:
        return None
    rx = sum(num(p.rx_bps) or 0.0 for p in r) / len(r) if any(known(p.rx_bps) for p in r) else None
    replays = sum(p.replay_delta for p in r if known(p.replay_delta)) if any(known(p.replay_delta) for p in r) \
        else None
    return _PcieRow(r, r[0].t, rx, mean(_rx_frac(p) for p in r), mean(num(p.capacity_bps) for p in r), replays)


_PCIE_ROWS: SampleMemo[_PcieRow | None] = SampleMemo(512)
"""Each PCIe sample read once per set of the job's GPUs (sample_memo.py), as the GPU samples are.
Only windows of up to WINDOW_S read them: 512 entries are minutes of ticks, and no sample is held
long after the history lets its frame go."""


def _rx_frac(p: PcieSample) -> float | None:
    """RX over what the link *as it runs now* carries (a downtrained link fills sooner)."""
    rx, cap = num(p.rx_bps), num(p.capacity_bps)
    if rx is None or not cap:
        return None
    return rx / (cap * _link_factor(p))


def _link_factor(p: PcieSample) -> float:
    """Current over maximum link bandwidth: each PCIe generation doubles a lane's rate (gen3 8,
    gen4 16, gen5 32 GT/s; gen1 to gen2 doubled too, with 8b/10b coding)."""
    factor = 1.0
    if known(p.gen_current) and known(p.gen_max) and p.gen_max and p.gen_current:
        factor *= 2.0 ** (min(p.gen_current, p.gen_max) - p.gen_max)
    if known(p.width_current) and known(p.width_max) and p.width_max and p.width_current:
        factor *= min(p.width_current, p.width_max) / p.width_max
    return factor


def _degraded(row: list[PcieSample]) -> str | None:
    for p in row:
        if _link_factor(p) < 1.0:
            return f"gen{p.gen_current} x{p.width_current} of gen{p.gen_max} x{p.width_max}"
    return None


def _throttle(parts: list[tuple]) -> tuple[tuple[tuple[str, float], ...], float | None]:
    """(reason, mean share of the tick) for every reason seen, and the share of the bad ones, from
    each sample's _throttle_parts."""
    per_reason: dict[str, list[float]] = {}
    bad_ticks: list[float] = []
    bits: list[float] = []
    for fracs, bad_here, bits_here in parts:
        for name, frac in fracs:
            per_reason.setdefault(name, []).append(frac)
        bits.extend(bits_here)
        if bad_here is not None:
            bad_ticks.append(bad_here)
    reasons = tuple(sorted(((k, sum(v) / len(v)) for k, v in per_reason.items() if any(v)), key=lambda kv: -kv[1]))
    # The ns counters beat the instantaneous bitmask (a share of the tick, not one instant); the bitmask is the fallback.
    bad_frac = mean(bad_ticks) if bad_ticks else mean(bits)
    return reasons, bad_frac


def _throttle_parts(tick: tuple[GpuSample, ...]) -> tuple:
    """One sample's throttle readings of the job's GPUs, in order: each (reason, share of the
    tick), the tick's worst bad share (None without throttle counters), and the bitmask's readings
    of GPUs without counters (1.0 where a bad reason bit is set)."""
    fracs: list[tuple[str, float]] = []
    bad_here: list[float] = []
    bits: list[float] = []
    for g in tick:
        if known(g.throttle):
            bad = 0.0
            for name, frac in g.throttle:
                fracs.append((name, frac))
                if any(w in name.lower() for w in BAD_THROTTLE_WORDS):
                    bad = max(bad, frac)
            if known(g.clock_reasons):
                hw = 1.0 if g.clock_reasons & HW_SLOWDOWN_BIT else 0.0
                fracs.append(("hw_slowdown", hw))
                bad = max(bad, hw)
            bad_here.append(bad)
        elif known(g.clock_reasons):
            bits.append(1.0 if g.clock_reasons & BAD_REASON_BITS else 0.0)
    return tuple(fracs), (max(bad_here) if bad_here else None), tuple(bits)


def _tenants(parts: list[tuple]) -> tuple[float | None, tuple[Tenant, ...]]:
    """The other processes' share of the SMs (mean over the samples) and the processes, busiest
    first, from each sample's _tenant_parts."""
    shares: list[float] = []
    seen: dict[int, Tenant] = {}
    for share, others in parts:
        if share is not None:
            shares.append(share)
        for t in others:
            seen[t.pid] = t
    return mean(shares), tuple(sorted(seen.values(), key=lambda t: -(t.sm_util or 0.0)))


def _tenant_parts(tick: tuple[GpuSample, ...]) -> tuple[float | None, tuple[Tenant, ...]]:
    """One sample's share of the job's GPUs' SMs used by other processes (None where no process's
    use was measured) and those processes, in order."""
    ours = others = 0.0
    measured = False
    seen: list[Tenant] = []
    for g in tick:
        for p in g.processes:
            util = num(p.sm_util)
            if util is not None:
                measured = True
                if p.is_target:
                    ours += util
                else:
                    others += util
            if not p.is_target:
                seen.append(Tenant(p.pid, p.name, util))
    if measured and ours + others > 0:
        return others / (ours + others), tuple(seen)
    return (0.0 if measured else None), tuple(seen)
