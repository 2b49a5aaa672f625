"""The host strip: CPU, memory, pressure and disk busy, on one line."""

from __future__ import annotations

from gpuwatch.model.disk import DiskSample
from gpuwatch.model.host import CgroupCpu, HostSample, Psi
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.view import View


def host_text(host: object) -> str:
    if isinstance(host, Unsupported):
        return f"Host: unavailable — {host.reason}"
    assert isinstance(host, HostSample)
    used = host.mem_total - host.mem_available
    parts = [
        f"CPU {host.cpu_pct:.0f} % of {host.cpu_count}",
        f"load {host.load1:.1f}",
        f"mem {fmt.size(used)}/{fmt.size(host.mem_total)}",
    ]
    if known(host.steal_pct) and host.steal_pct >= 0.5:  # hide a steady 0: it is the usual case
        parts.append(f"steal {host.steal_pct:.0f} %")
    psi = host.psi
    if isinstance(psi, Psi):
        parts.append(f"PSI cpu {psi.cpu_some:.0f} io {psi.io_some:.0f} mem {psi.mem_some:.0f}")
    else:
        parts.append("PSI N/A")
    cg = host.cgroup
    if isinstance(cg, CgroupCpu) and cg.throttled_frac > 0:
        parts.append(f"cgroup throttled {cg.throttled_frac * 100:.0f} %")
    return " · ".join(parts)


def disk_text(disk: object) -> str:
    if isinstance(disk, Unsupported):
        return f"disk N/A ({disk.reason})"
    assert isinstance(disk, DiskSample)
    data_devs = [loc.device for loc in disk.locations if loc.kind == "data"] or [
        loc.device for loc in disk.locations
    ]
    devs = [d for d in disk.devices if d.name in data_devs] or sorted(
        disk.devices, key=lambda d: d.busy_pct, reverse=True
    )[:1]
    out = [f"disk {d.name} {d.busy_pct:.0f} % busy" for d in devs[:2]]
    if known(disk.target_read_bps):
        out.append(f"job reads {fmt.rate(disk.target_read_bps)}")
    if any(loc.network for loc in disk.locations):
        out.append("network FS")
    return " · ".join(out) if out else "disk: no device"


class HostStrip(Plain):
    """One line about the machine the job runs on."""

    def show(self, view: View) -> None:
        self.update(f"{host_text(view.frame.host)} · {disk_text(view.frame.disk)}")
