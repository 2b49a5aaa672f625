"""Builds the collector set for a live watch. A collector that cannot even be imported (a
missing optional library) becomes one that reports why, so one panel goes dark, never the app."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.target import Target
from gpuwatch.model.values import Unsupported


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


def build_collectors(target: Target, opts: WatchOptions) -> list[Collector]:
    out: list[Collector] = []
    session_cls = _load("nvml_session", "NvmlSession", "gpus")
    session = session_cls()
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
