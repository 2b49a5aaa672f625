"""The host strip: CPU, memory, pressure and disk busy, on one line (two below 120 columns).

Each part keeps one width whatever its figures (``CPU  7 %`` and ``CPU 85 %`` are as wide), and
the parts are packed into lines here, at ``·``, not wrapped by the terminal width: the line
breaks stay where they are from tick to tick instead of moving with every figure.
"""

from __future__ import annotations

from gpuwatch.model.disk import DiskSample
from gpuwatch.model.host import CgroupCpu, HostSample, Psi
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.view import View


SEP = " · "


def host_parts(host: object) -> list[str]:
    if isinstance(host, Unsupported):
        return [f"Host: unavailable — {host.reason}"]
    assert isinstance(host, HostSample)
    used = host.mem_total - host.mem_available
    parts = [
        f"CPU {host.cpu_pct:3.0f} % of {host.cpu_count}",
        f"load {host.load1:4.1f}",
        f"mem {fmt.size(used):>9}/{fmt.size(host.mem_total)}",
    ]
    if known(host.steal_pct) and host.steal_pct >= 0.5:  # hide a steady 0: it is the usual case
        parts.append(f"steal {host.steal_pct:3.0f} %")
    psi = host.psi
    if isinstance(psi, Psi):
        parts.append(f"PSI cpu {psi.cpu_some:3.0f} io {psi.io_some:3.0f} mem {psi.mem_some:3.0f}")
    else:
        parts.append("PSI N/A")
    cg = host.cgroup
    if isinstance(cg, CgroupCpu) and cg.throttled_frac > 0:
        parts.append(f"cgroup throttled {cg.throttled_frac * 100:3.0f} %")
    return parts


def host_text(host: object) -> str:
    return SEP.join(host_parts(host))


def disk_text(disk: object) -> str:
    return SEP.join(disk_parts(disk))


def disk_parts(disk: object) -> list[str]:
    if isinstance(disk, Unsupported):
        return [f"disk N/A ({disk.reason})"]
    assert isinstance(disk, DiskSample)
    data_devs = [loc.device for loc in disk.locations if loc.kind == "data"] or [
        loc.device for loc in disk.locations
    ]
    devs = [d for d in disk.devices if d.name in data_devs] or sorted(
        disk.devices, key=lambda d: d.busy_pct, reverse=True
    )[:1]
    out = [f"disk {d.name} {d.busy_pct:3.0f} % busy" for d in devs[:2]]
    if known(disk.target_read_bps):
        out.append(f"job reads {fmt.rate(disk.target_read_bps):>10}")
    if any(loc.network for loc in disk.locations):
        out.append("network FS")
    return out if out else ["disk: no device"]


def pack(parts: list[str], width: int, lines: int) -> str:
    """``parts`` joined by · into at most ``lines`` lines of ``width``, breaking between parts
    only; what does not fit ends in "…"."""
    if width <= 0:
        return SEP.join(parts)
    out: list[str] = []
    for part in parts:
        if out and len(out[-1]) + len(SEP) + len(part) <= width:
            out[-1] += SEP + part
        else:
            out.append(part)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1] + "…"
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in out)


class HostStrip(Plain):
    """The machine the job runs on, in as many lines as the layout gives it (CSS height)."""

    def show(self, view: View) -> None:
        parts = host_parts(view.frame.host) + disk_parts(view.frame.disk)
        size = self.content_size
        self.update(pack(parts, size.width, max(1, size.height)))

    def on_resize(self) -> None:
        view = getattr(self.app, "view", None)
        if view is not None:
            self.show(view)
