"""Put this process (and the DataLoader workers it forks later) under a CPU quota, when allowed.

cgroup v2: a child group next to ours with ``cpu.max``; cgroup v1: a child of our ``cpu`` group with
``cpu.cfs_quota_us``. Both need write access to the cgroup file system (root, or a delegated
subtree); without it the caller gets the reason and the fix, never an exception. ``leave()`` moves
the process back and removes the group.
"""

from __future__ import annotations

import os

PERIOD_US = 100_000
"""The kernel's default CFS period (100 ms); the quota is a share of it."""


def _mounts() -> list[tuple[str, str, str]]:
    out = []
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                out.append((parts[1], parts[2], parts[3]))
    return out


def _own_groups() -> dict[str, str]:
    """controller list ('' for v2) -> our cgroup path, from /proc/self/cgroup."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            out[controllers] = path
    return out


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class CpuQuota:
    """A cgroup holding this process with ``cores`` CPUs of quota."""

    def __init__(self, group: str, home: str, version: int, cores: float) -> None:
        self.group, self.home, self.version, self.cores = group, home, version, cores

    def leave(self) -> None:
        try:
            _write(os.path.join(self.home, "cgroup.procs"), str(os.getpid()))
        except OSError:
            pass
        try:
            os.rmdir(self.group)
        except OSError:
            pass  # a worker still inside: the kernel frees the group once it is empty and removed


def enter_cpu_quota(cores: float) -> CpuQuota | str:
    """Limit this process to ``cores`` CPUs. Returns the quota, or why it cannot (with the fix)."""
    quota = str(max(1000, int(cores * PERIOD_US)))
    name = f"gpuwatch-bench-{os.getpid()}"
    try:
        groups = _own_groups()
        mounts = _mounts()
    except OSError as e:
        return f"cannot read cgroups ({e}); run on Linux with /proc mounted"
    v1 = next((m for m in mounts if m[1] == "cgroup" and "cpu" in m[2].split(",")), None)
    v2 = next((m for m in mounts if m[1] == "cgroup2"), None)
    group = None
    try:
        if v1 is not None:
            own = next((p for c, p in groups.items() if "cpu" in c.split(",")), "/")
            home = os.path.join(v1[0], own.lstrip("/"))
            group = os.path.join(home, name)
            os.mkdir(group)
            _write(os.path.join(group, "cpu.cfs_period_us"), str(PERIOD_US))
            _write(os.path.join(group, "cpu.cfs_quota_us"), quota)
            version = 1
        elif v2 is not None and "" in groups:
            home = os.path.join(v2[0], groups[""].lstrip("/"))
            with open(os.path.join(home, "cgroup.subtree_control")) as f:
                if "cpu" not in f.read().split():
                    return (f"the cpu controller is not enabled below {home}; enable it "
                            f"(echo +cpu > {home}/cgroup.subtree_control) or use --hog cpu")
            group = os.path.join(home, name)
            os.mkdir(group)
            _write(os.path.join(group, "cpu.max"), f"{quota} {PERIOD_US}")
            version = 2
        else:
            return "no cgroup cpu controller is mounted; use --hog cpu"
        _write(os.path.join(group, "cgroup.procs"), str(os.getpid()))
    except OSError as e:
        if group is not None:
            try:
                os.rmdir(group)
            except OSError:
                pass
        return f"cannot create a cpu cgroup ({e.strerror or e}); run as root or use --hog cpu"
    return CpuQuota(group, home, version, cores)
