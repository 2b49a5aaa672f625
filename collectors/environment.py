"""A one-shot probe of what surrounds the watched job: driver, GPUs, NUMA, ptrace, cgroup, storage.

Not a periodic collector: ``gpuwatch diagnose`` calls :func:`probe_environment` once, on a worker
thread (every read here blocks). Each item that cannot be read is an ``Unsupported`` with the
reason and, where there is one, the fix; nothing here raises for a missing capability.

``/proc`` and ``/sys`` are read under ``root`` so tests can point the probe at a fixture tree;
NVML is injectable (``nvml=``) and is opened through the same :class:`NvmlSession` the GPU
collectors use, so init failures carry the same reasons and fixes.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from typing import Any, Callable

import psutil

from gpuwatch.collectors.disk import block_name, is_data_file, is_network_fs, parent_disk
from gpuwatch.collectors.host import read_cgroup
from gpuwatch.collectors.nvml_session import GpuLost, NvmlSession, describe
from gpuwatch.collectors.procfs import Mount, mount_of, parse_mountinfo, parse_proc_cgroup
from gpuwatch.collectors.target import Target, TargetGone, Tree
from gpuwatch.model.procs import ROLE_MAIN, ROLE_WORKER
from gpuwatch.model.values import Maybe, Unsupported
from gpuwatch.untrusted import clean

UNLIMITED_BYTES = 1 << 60
"""cgroup v1 writes "no memory limit" as a huge number (9223372036854771712); above this is none."""
CAP_SYS_PTRACE = 19
"""Bit of CAP_SYS_PTRACE in /proc/*/status CapEff (include/uapi/linux/capability.h)."""
NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1, 1
"""nvml.h's nvmlEccCounterType_t and nvmlMemoryErrorType_t values (also in pynvml)."""


@dataclass(frozen=True, slots=True)
class DriverInfo:
    driver_version: Maybe[str]
    nvml_version: Maybe[str]
    cuda_version: Maybe[str]
    """The newest CUDA the driver supports, e.g. "13.0"."""


@dataclass(frozen=True, slots=True)
class GpuEnv:
    index: int
    name: Maybe[str]
    uuid: Maybe[str]
    pci_bus_id: Maybe[str]
    """As sysfs spells it: lower case, 4-digit domain (``0000:17:00.0``)."""
    pcie_gen_max: Maybe[int]
    pcie_width_max: Maybe[int]
    pcie_gen_now: Maybe[int]
    """At probe time; an idle GPU may lower it legitimately (the report judges it under load)."""
    pcie_width_now: Maybe[int]
    persistence_mode: Maybe[bool]
    mig_enabled: Maybe[bool]
    ecc_enabled: Maybe[bool]
    ecc_uncorrected_volatile: Maybe[int]
    """Uncorrected ECC errors since the driver loaded."""
    ecc_uncorrected_aggregate: Maybe[int]
    """Uncorrected ECC errors over the GPU's life."""
    numa_node: Maybe[int]
    numa_source: str
    """"nvml", "sysfs" or "" (unknown)."""
    local_cpus: Maybe[tuple[int, ...]]
    """CPUs close to the GPU, from sysfs ``local_cpulist``."""
    used_by_target: bool


@dataclass(frozen=True, slots=True)
class TargetEnv:
    pid: int
    cmdline: str
    affinity: Maybe[tuple[int, ...]]
    numa_nodes: tuple[int, ...]
    """The NUMA nodes the job's allowed CPUs belong to."""
    mains: int
    workers: int
    """DataLoader workers (``pt_data_worker``) at probe time."""


@dataclass(frozen=True, slots=True)
class CpuEnv:
    logical_cpus: int
    numa_nodes: Maybe[tuple[tuple[int, tuple[int, ...]], ...]]
    """(node, its CPUs) for every NUMA node of the host."""


@dataclass(frozen=True, slots=True)
class PtraceEnv:
    yama_scope: Maybe[int]
    cap_sys_ptrace: Maybe[bool]
    same_user: Maybe[bool]
    allowed: bool
    reason: str


@dataclass(frozen=True, slots=True)
class CgroupEnv:
    version: int
    path: str
    cpu_limit_cores: Maybe[float] | None
    """None: no CPU quota on the job's cgroup or its ancestors."""
    memory_limit_bytes: Maybe[int] | None
    """None: no memory limit."""


@dataclass(frozen=True, slots=True)
class StorageEnv:
    kind: str
    """"cwd" (the job's working directory) or "data" (folders of its open files)."""
    path: str
    mountpoint: str
    fstype: str
    source: str
    network: bool
    rotational: Maybe[bool]
    open_files: int


@dataclass(frozen=True, slots=True)
class Environment:
    wall: float
    hostname: str
    kernel: str
    driver: Maybe[DriverInfo]
    gpus: Maybe[tuple[GpuEnv, ...]]
    cpus: CpuEnv
    target: Maybe[TargetEnv]
    ptrace: Maybe[PtraceEnv]
    cgroup: Maybe[CgroupEnv]
    storage: Maybe[tuple[StorageEnv, ...]]


def probe_environment(
    pid: int, nvml: Any = None, root: str = "/", pid_map: Callable[[int], int | None] | None = None
) -> Environment:
    """Everything the report needs to know once about the job's surroundings (blocking)."""
    paths = _Paths(root)
    target, tree = _probe_target(pid, paths)
    driver, gpus = _probe_gpus(tree.pids() if tree else (pid,), paths, nvml, pid_map)
    return Environment(
        wall=time.time(), hostname=platform.node(), kernel=platform.release(),
        driver=driver, gpus=gpus, cpus=_probe_cpus(paths), target=target,
        ptrace=_probe_ptrace(pid, paths), cgroup=_probe_cgroup(pid, paths),
        storage=_probe_storage(pid, tree, paths),
    )


def parse_cpulist(text: str) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> (0, 1, 2, 3, 8, 10, 11), the kernel's cpulist format."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(out)


class _Paths:
    def __init__(self, root: str) -> None:
        self.root = root

    def __call__(self, *parts: str) -> str:
        return os.path.join(self.root, *(p.lstrip("/") for p in parts))

    def read(self, *parts: str) -> str | None:
        try:
            with open(self(*parts), encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None


# -- the job ---------------------------------------------------------------------------------
def _probe_target(pid: int, paths: _Paths) -> tuple[Maybe[TargetEnv], Tree | None]:
    try:
        t = Target(pid)
        tree = t.tree()
    except (TargetGone, psutil.Error, OSError) as e:
        return Unsupported(f"process {pid} could not be read: {e}"), None
    try:
        affinity: Maybe[tuple[int, ...]] = tuple(sorted(os.sched_getaffinity(pid)))
    except OSError as e:
        affinity = Unsupported(f"CPU affinity of {pid} unreadable: {e.strerror or e}")
    nodes = _numa_nodes(paths)
    job_nodes: tuple[int, ...] = ()
    if isinstance(affinity, tuple) and isinstance(nodes, tuple):
        job_nodes = tuple(n for n, cpus in nodes if set(cpus) & set(affinity))
    env = TargetEnv(pid=pid, cmdline=t.cmdline(), affinity=affinity, numa_nodes=job_nodes,
                    mains=len(tree.mains()), workers=sum(1 for n in tree.nodes if n.role == ROLE_WORKER))
    return env, tree


def _probe_cpus(paths: _Paths) -> CpuEnv:
    return CpuEnv(logical_cpus=os.cpu_count() or 0, numa_nodes=_numa_nodes(paths))


def _numa_nodes(paths: _Paths) -> Maybe[tuple[tuple[int, tuple[int, ...]], ...]]:
    base = paths("sys/devices/system/node")
    try:
        names = sorted((n for n in os.listdir(base) if n.startswith("node") and n[4:].isdigit()),
                       key=lambda n: int(n[4:]))
    except OSError:
        return Unsupported("no /sys/devices/system/node: kernel built without NUMA support")
    out = []
    for n in names:
        text = paths.read("sys/devices/system/node", n, "cpulist")
        if text is not None:
            out.append((int(n[4:]), parse_cpulist(text)))
    return tuple(out)


# -- NVML ------------------------------------------------------------------------------------
def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _probe_gpus(pids, paths, nvml, pid_map) -> tuple[Maybe[DriverInfo], Maybe[tuple[GpuEnv, ...]]]:
    session = NvmlSession(nvml=nvml, pid_map=pid_map)
    problem = session.open()
    if problem is not None:
        return problem, problem
    try:
        nv = session.nvml

        def ask(what: str, fn: Callable[[], Any]) -> Any:
            try:
                with session.lock:  # a live watch's collectors may be calling NVML meanwhile
                    return fn()
            except GpuLost as e:
                return Unsupported(str(e))
            except nv.NVMLError as e:
                return Unsupported(describe(e, what))
            except Exception as e:  # noqa: BLE001 - an old binding lacking a call, ctypes errors
                return Unsupported(f"{what}: {type(e).__name__}: {e}")

        cuda = ask("CUDA version", lambda: nv.nvmlSystemGetCudaDriverVersion_v2())
        driver = DriverInfo(
            driver_version=_map(ask("driver version", lambda: nv.nvmlSystemGetDriverVersion()), _text),
            nvml_version=_map(ask("NVML version", lambda: nv.nvmlSystemGetNVMLVersion()), _text),
            cuda_version=_map(cuda, lambda v: f"{int(v) // 1000}.{int(v) % 1000 // 10}"),
        )
        procs = session.processes()
        ours = set(pids)
        gpus = []
        for i in range(session.count):
            p = procs.get(i)
            used = isinstance(p, tuple) and any(x.local_pid in ours for x in p)
            gpus.append(_probe_gpu(i, session, ask, paths, used))
        return driver, tuple(gpus)
    finally:
        session.release()


def _map(v: Any, fn: Callable[[Any], Any]) -> Any:
    return v if isinstance(v, Unsupported) else fn(v)


def _probe_gpu(i: int, session: NvmlSession, ask, paths: _Paths, used: bool) -> GpuEnv:
    def call(what: str, fn: str, *args: Any) -> Any:
        return ask(what, lambda: session.call(i, fn, *args))

    pci = call("PCI info", "nvmlDeviceGetPciInfo")
    bus = _map(pci, lambda p: sysfs_bus_id(_text(p.busId)))
    ecc = call("ECC mode", "nvmlDeviceGetEccMode")
    mig = call("MIG mode", "nvmlDeviceGetMigMode")
    numa, source = call("NUMA node", "nvmlDeviceGetNumaNodeId"), "nvml"
    if isinstance(numa, Unsupported) or numa < 0:
        numa, source = _sysfs_numa(bus, paths, numa)
    local = _map(bus, lambda b: _local_cpus(b, paths))
    return GpuEnv(
        index=i, name=_map(call("name", "nvmlDeviceGetName"), _text),
        uuid=_map(call("UUID", "nvmlDeviceGetUUID"), _text), pci_bus_id=bus,
        pcie_gen_max=call("max PCIe generation", "nvmlDeviceGetMaxPcieLinkGeneration"),
        pcie_width_max=call("max PCIe width", "nvmlDeviceGetMaxPcieLinkWidth"),
        pcie_gen_now=call("PCIe generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        pcie_width_now=call("PCIe width", "nvmlDeviceGetCurrPcieLinkWidth"),
        persistence_mode=_map(call("persistence mode", "nvmlDeviceGetPersistenceMode"), lambda v: v == 1),
        mig_enabled=_map(mig, lambda m: m[0] == 1),
        ecc_enabled=_map(ecc, lambda m: m[0] == 1),
        ecc_uncorrected_volatile=call("volatile uncorrected ECC errors", "nvmlDeviceGetTotalEccErrors",
                                      NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC),
        ecc_uncorrected_aggregate=call("aggregate uncorrected ECC errors", "nvmlDeviceGetTotalEccErrors",
                                       NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC),
        numa_node=numa, numa_source=source if not isinstance(numa, Unsupported) else "",
        local_cpus=local, used_by_target=used,
    )


def sysfs_bus_id(nvml_bus_id: str) -> str:
    """NVML's ``00000000:17:00.0`` (8-digit domain, upper case) as sysfs names it: ``0000:17:00.0``."""
    domain, _, rest = nvml_bus_id.strip().partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest}".lower()
    except ValueError:
        return nvml_bus_id.strip().lower()


def _sysfs_numa(bus: Maybe[str], paths: _Paths, nvml_answer: Any) -> tuple[Maybe[int], str]:
    """NVML's NUMA call is NotSupported on some GPUs (the H200 measured): ask sysfs instead."""
    why = nvml_answer.reason if isinstance(nvml_answer, Unsupported) else f"NVML says {nvml_answer}"
    if isinstance(bus, Unsupported):
        return Unsupported(f"{why}; no PCI bus id for the sysfs fallback"), ""
    text = paths.read("sys/bus/pci/devices", bus, "numa_node")
    if text is None:
        return Unsupported(f"{why}; /sys/bus/pci/devices/{bus}/numa_node unreadable"), ""
    node = int(text.strip() or -1)
    if node < 0:
        return Unsupported(f"{why}; sysfs numa_node is -1: the firmware names no node (one-node host?)"), ""
    return node, "sysfs"


def _local_cpus(bus: str, paths: _Paths) -> Maybe[tuple[int, ...]]:
    text = paths.read("sys/bus/pci/devices", bus, "local_cpulist")
    if text is None:
        return Unsupported(f"/sys/bus/pci/devices/{bus}/local_cpulist unreadable")
    return parse_cpulist(text)


# -- ptrace ----------------------------------------------------------------------------------
def _status_field(text: str | None, name: str) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


def _probe_ptrace(pid: int, paths: _Paths) -> Maybe[PtraceEnv]:
    """Whether py-spy (ptrace, process_vm_readv) may read the job: Yama scope, CAP_SYS_PTRACE, uid."""
    raw = paths.read("proc/sys/kernel/yama/ptrace_scope")
    scope: Maybe[int] = int(raw) if raw and raw.strip().isdigit() else Unsupported("no Yama LSM (no ptrace_scope)")
    cap_hex = _status_field(paths.read("proc/self/status"), "CapEff")
    cap: Maybe[bool] = bool(int(cap_hex, 16) >> CAP_SYS_PTRACE & 1) if cap_hex else Unsupported("CapEff unreadable")
    uid = _status_field(paths.read("proc", str(pid), "status"), "Uid")
    same: Maybe[bool] = (int(uid.split()[0]) == os.geteuid()) if uid else Unsupported(f"/proc/{pid}/status unreadable")
    s = scope if isinstance(scope, int) else 0  # without Yama, classic rules: same uid or the capability
    has_cap, mine = cap is True, same is True
    if s >= 3:
        allowed, reason = False, "kernel.yama.ptrace_scope is 3: no process may be attached; it can only be lowered by a reboot"
    elif has_cap:
        allowed, reason = True, "gpuwatch holds CAP_SYS_PTRACE"
    elif s >= 1:
        allowed, reason = False, (f"kernel.yama.ptrace_scope is {s} and gpuwatch lacks CAP_SYS_PTRACE: run as root, "
                                  "or `sysctl kernel.yama.ptrace_scope=0`; in Docker add --cap-add SYS_PTRACE")
    elif mine:
        allowed, reason = True, "same user, and ptrace_scope allows it"
    else:
        allowed, reason = False, "the job belongs to another user: run gpuwatch as that user or as root"
    return PtraceEnv(yama_scope=scope, cap_sys_ptrace=cap, same_user=same, allowed=allowed, reason=reason)


# -- cgroup ----------------------------------------------------------------------------------
def _probe_cgroup(pid: int, paths: _Paths) -> Maybe[CgroupEnv]:
    """CPU quota as the host collector reads it (the tightest of the job's cgroup and its
    ancestors); the memory limit found the same way from the memory controller."""
    fs_root = "" if paths.root in ("", "/") else paths.root.rstrip("/")
    cpu = read_cgroup(pid, paths("proc"), fs_root)
    mem = _memory_limit(pid, paths, fs_root)
    if isinstance(cpu, Unsupported) and isinstance(mem, Unsupported):
        return Unsupported(f"{cpu.reason}; {mem.reason}")
    entries = parse_proc_cgroup(paths.read("proc", str(pid), "cgroup") or "")
    job = next((e.path for e in entries if "memory" in e.controllers or "cpu" in e.controllers),
               next((e.path for e in entries if e.hierarchy == 0), "?"))
    return CgroupEnv(
        version=cpu.version if not isinstance(cpu, Unsupported) else mem[0],  # type: ignore[index]
        path=job,
        cpu_limit_cores=cpu if isinstance(cpu, Unsupported) else cpu.quota_cores,
        memory_limit_bytes=mem if isinstance(mem, Unsupported) else mem[1],
    )


def _memory_limit(pid: int, paths: _Paths, fs_root: str) -> tuple[int, int | None] | Unsupported:
    """(cgroup version, the tightest memory limit in bytes or None) of the job."""
    cg, mi = paths.read("proc", str(pid), "cgroup"), paths.read("proc/self/mountinfo")
    if cg is None or mi is None:
        return Unsupported(f"/proc/{pid}/cgroup or our mountinfo unreadable")
    entries = [(1, e) for e in parse_proc_cgroup(cg) if e.hierarchy != 0 and "memory" in e.controllers]
    entries += [(2, e) for e in parse_proc_cgroup(cg) if e.hierarchy == 0]
    mounts = parse_mountinfo(mi)
    for version, e in entries:
        for m in mounts:
            ok = ("memory" in m.super_options and m.fstype == "cgroup") if version == 1 else m.fstype == "cgroup2"
            if not ok or not (e.path == m.root or e.path.startswith(m.root.rstrip("/") + "/")):
                continue
            top = fs_root + m.mountpoint
            folder = os.path.join(top, e.path[len(m.root.rstrip("/")):].lstrip("/"))
            name = "memory.limit_in_bytes" if version == 1 else "memory.max"
            if not os.path.exists(os.path.join(folder, name)):
                continue
            best = None
            while True:  # ancestors' limits apply too: keep the tightest
                v = _first_line(os.path.join(folder, name))
                n = int(v) if v and v.isdigit() and int(v) < UNLIMITED_BYTES else None
                if n is not None and (best is None or n < best):
                    best = n
                if len(folder.rstrip("/")) <= len(top.rstrip("/")):
                    return version, best
                folder = os.path.dirname(folder.rstrip("/"))
    return Unsupported("the job's cgroup has no memory controller files (not mounted, or another cgroup namespace)")


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.readline().strip()
    except OSError:
        return None


# -- storage ---------------------------------------------------------------------------------
def _probe_storage(pid: int, tree: Tree | None, paths: _Paths) -> Maybe[tuple[StorageEnv, ...]]:
    """The job's working directory and the folders of its open data files, grouped by mount
    (the same file filter as the disk collector), in the job's own mount namespace."""
    text = paths.read("proc", str(pid), "mountinfo")
    if text is None:
        return Unsupported(f"/proc/{pid}/mountinfo unreadable: run gpuwatch as the job's user or as root")
    mounts = parse_mountinfo(text)
    out: list[StorageEnv] = []
    try:
        out.append(_locate("cwd", psutil.Process(pid).cwd(), 0, mounts, paths))
    except psutil.Error:
        pass
    by_mount: dict[str, tuple[str, int]] = {}
    pids = [n.pid for n in tree.nodes if n.role in (ROLE_MAIN, ROLE_WORKER)] if tree else [pid]
    for p in pids:
        try:
            files = psutil.Process(p).open_files()
        except psutil.Error:
            continue
        for f in files:
            if is_data_file(f.path, getattr(f, "mode", "r")):
                path = clean(f.path)  # named by the job: cleaned, as the mount points it is matched to are
                m = mount_of(path, mounts)
                key = m.mountpoint if m else "?"
                folder, n = by_mount.get(key, (os.path.dirname(path), 0))
                by_mount[key] = (os.path.commonpath([folder, os.path.dirname(path)]), n + 1)
    for folder, n in sorted(by_mount.values(), key=lambda v: -v[1]):
        out.append(_locate("data", folder, n, mounts, paths))
    if not out:
        return Unsupported(f"neither the working directory nor the open files of {pid} are readable: run as root")
    return tuple(out)


def _locate(kind: str, path: str, n: int, mounts: list, paths: _Paths) -> StorageEnv:
    # The job's working directory and data folders are names it chose: cleaned at the boundary
    # (gpuwatch/untrusted.py), before the match against the mount points, which parse_mountinfo cleaned.
    path = clean(path)
    m = mount_of(path, mounts)
    if m is None:
        return StorageEnv(kind, path, "?", "?", "?", False, Unsupported("no mount holds this path"), n)
    return StorageEnv(kind=kind, path=path, mountpoint=m.mountpoint, fstype=m.fstype, source=m.source,
                      network=is_network_fs(m.fstype, m.source), rotational=_rotational(m, paths), open_files=n)


def _rotational(m: Mount, paths: _Paths) -> Maybe[bool]:
    name = block_name(m.major, m.minor, paths("sys"))
    if name is None:
        return Unsupported(f"{m.fstype} at {m.mountpoint} is not backed by one block device")
    text = paths.read("sys/class/block", parent_disk(name, paths("sys")), "queue/rotational")
    if text is None:
        return Unsupported(f"/sys/class/block/{name}/queue/rotational unreadable")
    return text.strip() == "1"
