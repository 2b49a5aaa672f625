"""The GPU panel's rows, declared as data: what each reads, its full scale, and how it prints.

One generic row widget draws every entry (bar, value, history plot), so a new metric is one entry
here. Panels only display: judging a value is the diagnosis's job, so there are no thresholds here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuSample
from gpuwatch.model.pcie import PcieSample
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt

Read = Callable[[GpuSample, "PcieSample | None"], object]
"""Returns a number or an Unsupported with its reason."""


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    read: Read
    scale: Callable[[GpuSample, "PcieSample | None"], "float | None"]
    """The value that fills the bar; None when unknown (the bar and plot then scale to the history)."""
    text: Callable[[object, GpuSample, "PcieSample | None"], str]
    about: str
    """What the number means, for the tooltip."""


def _gpm(name: str) -> Read:
    def read(g: GpuSample, _p: PcieSample | None) -> object:
        if isinstance(g.gpm, Unsupported):
            return g.gpm
        return getattr(g.gpm, name)

    return read


def _pcie(direction: str) -> Read:
    """Bytes/s from the PCIe collector's counters, else GPM's PCIe metric (MiB/s)."""

    def read(g: GpuSample, p: PcieSample | None) -> object:
        value = getattr(p, f"{direction}_bps") if p is not None else Unsupported("no PCIe sample for this GPU")
        if known(value):
            return value
        if known(g.gpm) and known(getattr(g.gpm, f"pcie_{direction}_mibs")):
            return getattr(g.gpm, f"pcie_{direction}_mibs") * 1024 * 1024
        return value

    return read


def _pcie_capacity(_g: GpuSample, p: PcieSample | None) -> float | None:
    return p.capacity_bps if p is not None and known(p.capacity_bps) else None  # type: ignore[return-value]


def _of(limit: str) -> Callable[[GpuSample, PcieSample | None], float | None]:
    def scale(g: GpuSample, _p: PcieSample | None) -> float | None:
        v = getattr(g, limit)
        return float(v) if known(v) and v else None

    return scale


def _fixed(top: float) -> Callable[[GpuSample, PcieSample | None], float]:
    return lambda _g, _p: top


def _pct(v: object, _g: GpuSample, _p: PcieSample | None) -> str:
    return fmt.pct(v)


def _mem_text(v: object, g: GpuSample, _p: PcieSample | None) -> str:
    if not known(v):
        return fmt.NA
    if not known(g.mem_total):
        return fmt.size(v)
    return f"{v / 1024**3:.1f}/{g.mem_total / 1024**3:.0f} GiB"  # type: ignore[operator]


def _pcie_text(v: object, _g: GpuSample, p: PcieSample | None) -> str:
    return fmt.rate(v)


def _power_text(v: object, g: GpuSample, _p: PcieSample | None) -> str:
    if not known(v):
        return fmt.NA
    limit = f"/{g.power_limit_w:.0f}" if known(g.power_limit_w) else ""
    return f"{v:.0f}{limit} W"


def _clock_text(v: object, _g: GpuSample, _p: PcieSample | None) -> str:
    return fmt.NA if not known(v) else f"{v:.0f} MHz"


def _temp_text(v: object, _g: GpuSample, _p: PcieSample | None) -> str:
    return fmt.NA if not known(v) else f"{v:.0f} °C"


TEMP_SCALE_C = 100.0
"""Display scale of the temperature bar only (no judgement is made from it)."""

METRICS: tuple[Metric, ...] = (
    Metric("util", "util", lambda g, _p: g.util_gpu, _fixed(100), _pct,
           "NVML utilization.gpu: share of time any kernel or copy ran (copies count too)."),
    Metric("sm", "SM", _gpm("sm_active"), _fixed(100), _pct,
           "GPM SM activity: share of SMs busy. Low SM with high util means copies or tiny kernels."),
    Metric("tensor", "tensor", _gpm("tensor"), _fixed(100), _pct, "GPM tensor-core activity."),
    Metric("dram", "DRAM", _gpm("dram_bw"), _fixed(100), _pct, "GPM DRAM bandwidth, % of peak."),
    Metric("mem", "memory", lambda g, _p: g.mem_used, _of("mem_total"), _mem_text, "GPU memory used / total."),
    Metric("rx", "PCIe RX", _pcie("rx"), _pcie_capacity, _pcie_text,
           "Host-to-device bytes/s; the bar is the fraction of one direction of the link."),
    Metric("tx", "PCIe TX", _pcie("tx"), _pcie_capacity, _pcie_text, "Device-to-host bytes/s."),
    Metric("power", "power", lambda g, _p: g.power_w, _of("power_limit_w"), _power_text,
           "Board power draw / power limit."),
    Metric("clock", "SM clock", lambda g, _p: g.sm_clock_mhz, _of("sm_clock_max_mhz"), _clock_text,
           "SM clock / its maximum. Held down by the power cap under full load (normal)."),
    Metric("temp", "temp", lambda g, _p: g.temp_c, _fixed(TEMP_SCALE_C), _temp_text, "GPU temperature."),
)


def gpu_of(frame: Frame, index: int) -> tuple[GpuSample | None, PcieSample | None]:
    """The GPU and PCIe samples of GPU ``index`` in ``frame`` (None where absent)."""
    gpu = next((g for g in frame.gpus if g.index == index), None) if known(frame.gpus) else None
    pcie = next((p for p in frame.pcie if p.index == index), None) if known(frame.pcie) else None
    return gpu, pcie  # type: ignore[union-attr]


def reading(metric: Metric, gpu: GpuSample | None, pcie: PcieSample | None) -> float | None:
    """The metric's value in one frame's samples (None where it was not readable)."""
    v = metric.read(gpu, pcie) if gpu is not None else None
    return float(v) if known(v) else None  # type: ignore[arg-type]
