"""What the disk collector reads: block devices, where the job's data lives, and its read rates."""

from __future__ import annotations

from dataclasses import dataclass

from gpuwatch.model.values import Maybe, Unsupported

NO_IO = Unsupported("no I/O completed this tick")
"""``await_ms`` of a device that finished no request in the tick: a normal state, nothing was
missed (the report does not list it under "Not checked")."""


@dataclass(frozen=True, slots=True)
class BlockDevice:
    name: str
    busy_pct: float
    read_bps: float
    write_bps: float
    read_iops: float
    write_iops: float
    await_ms: Maybe[float]


@dataclass(frozen=True, slots=True)
class DataLocation:
    """A place the job reads from: its working directory or the folders of its open data files."""

    kind: str
    """"cwd" or "data"."""
    path: str
    mountpoint: str
    device: str
    fstype: str
    network: bool
    """True for network file systems (nfs, cifs, lustre, fuse.*, ...)."""
    open_files: int


@dataclass(frozen=True, slots=True)
class DiskSample:
    t: float
    devices: tuple[BlockDevice, ...]
    locations: tuple[DataLocation, ...]
    target_read_bps: Maybe[float]
    """Storage-layer read bytes per second of the whole job (main, workers, other children)."""
