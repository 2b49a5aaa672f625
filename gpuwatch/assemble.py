"""Builds the collector set for a live watch. A collector that cannot even be imported (a
missing optional library) becomes one that reports why, so one panel goes dark, never the app."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.target import Target
from gpuwatch.errors import UsageError
from gpuwatch.model.values import Unsupported
from gpuwatch.untrusted import clean


@dataclass
class WatchOptions:
    interval: float = 1.0
    gpus: Sequence[int] | None = None
    stack_rate: float | None = None
    """py-spy dumps per second of each main process; None: the collector's default; 0: off."""

    @classmethod
    def from_args(cls, ns: object) -> WatchOptions:
        """From the command line's options (``--interval``, ``--gpu``, ``--stack-rate``, ``--no-stacks``)."""
        rate = 0.0 if getattr(ns, "no_stacks", False) else getattr(ns, "stack_rate", None)
        return cls(interval=getattr(ns, "interval", 1.0), gpus=getattr(ns, "gpu", None), stack_rate=rate)


class _Missing(Collector):
    def __init__(self, field: str, reason: str) -> None:
        self.field = field  # type: ignore[misc]
        self.reason = reason

    def probe(self) -> Unsupported:
        return Unsupported(self.reason)

    def sample(self) -> object:
        return Unsupported(self.reason)


def _load(module: str, cls: str, field: str):
    try:
        return getattr(importlib.import_module(f"gpuwatch.collectors.{module}"), cls)
    except (ImportError, AttributeError) as e:
        reason = f"{field} collector unavailable: {e}"
        return lambda *a, **k: _Missing(field, reason)


def check_gpu_indexes(session: object, gpus: Sequence[int] | None) -> None:
    """Refuse ``--gpu`` indexes this host does not have, naming the GPUs it has (UsageError).
    Without NVML nothing can be checked: the GPU panel says why it is empty."""
    if not gpus or not hasattr(session, "probe") or session.probe() is not None:
        return
    n = session.count
    bad = [g for g in gpus if not 0 <= g < n]
    if not bad:
        return
    if n == 0:
        raise UsageError(f"--gpu {bad[0]}: this host has no GPU that NVML sees (check nvidia-smi -L)")
    names = []
    for i in range(n):
        try:
            name = session.call(i, "nvmlDeviceGetName")
            name = name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001 - a name that cannot be read only leaves the index
            name = ""
        names.append(f"{i} {clean(name, 64)}".strip())
    raise UsageError(f"--gpu {bad[0]}: no such GPU; this host has {n} GPU(s) (nvidia-smi order): {', '.join(names)}")


def build_collectors(target: Target, opts: WatchOptions) -> list[Collector]:
    out: list[Collector] = []
    session_cls = _load("nvml_session", "NvmlSession", "gpus")
    session = session_cls()
    check_gpu_indexes(session, opts.gpus)
    out.append(_load("gpu", "GpuCollector", "gpus")(target, session, gpus=opts.gpus, interval=opts.interval))
    out.append(_load("pcie", "PcieCollector", "pcie")(target, session, gpus=opts.gpus, interval=opts.interval))
    out.append(_load("disk", "DiskCollector", "disk")(target, interval=opts.interval))
    out.append(_load("procs", "ProcsCollector", "procs")(target, interval=opts.interval))
    out.append(_load("host", "HostCollector", "host")(target, interval=opts.interval))
    if opts.stack_rate == 0:
        out.append(_Missing("stacks", "stack sampling is off (--no-stacks)"))
    else:
        kw = {} if opts.stack_rate is None else {"rate_hz": opts.stack_rate}
        out.append(_load("stacks", "StackCollector", "stacks")(target, interval=opts.interval, **kw))
    return out
