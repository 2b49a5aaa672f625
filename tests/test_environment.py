"""The one-shot environment probe: NVML facts, NUMA fallback, ptrace, cgroup limits, storage.

NVML is a small stub answering with the H200 values measured in /work/shared/docs/h200-signatures.md
(driver 580.159.04, NVML 13.580.159.04, CUDA 13.0, "NVIDIA H200", PCIe Gen5 x16, NUMA node
NotSupported). The PCI bus id, UUID and ECC counts are synthetic. /proc and /sys are fixture trees.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pynvml
import pytest

from gpuwatch.collectors.environment import parse_cpulist, probe_environment, sysfs_bus_id
from gpuwatch.model.values import Unsupported


def _not_supported():
    return pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)


class StubNvml:
    """The pynvml calls the probe makes, with pynvml's own exception classes."""

    NVMLError = pynvml.NVMLError
    NVMLError_GpuIsLost = pynvml.NVMLError_GpuIsLost
    NVMLLibraryMismatchError = pynvml.NVMLLibraryMismatchError

    def __init__(self, init_error: int | None = None, procs=(), numa: int | None = None, ecc=(0, 0)) -> None:
        self.init_error, self.procs, self.numa, self.ecc = init_error, list(procs), numa, ecc
        self.shutdowns = 0

    def nvmlInit(self):
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self): return 1
    def nvmlDeviceGetHandleByIndex(self, i): return ("gpu", i)
    def nvmlSystemGetDriverVersion(self): return "580.159.04"
    def nvmlSystemGetNVMLVersion(self): return b"13.580.159.04"
    def nvmlSystemGetCudaDriverVersion_v2(self): return 13000
    def nvmlDeviceGetName(self, h): return "NVIDIA H200"
    def nvmlDeviceGetUUID(self, h): return "GPU-00000000-0000-0000-0000-000000000000"
    def nvmlDeviceGetPciInfo(self, h): return SimpleNamespace(busId=b"00000000:17:00.0")
    def nvmlDeviceGetMaxPcieLinkGeneration(self, h): return 5
    def nvmlDeviceGetMaxPcieLinkWidth(self, h): return 16
    def nvmlDeviceGetCurrPcieLinkGeneration(self, h): return 1  # idle at probe time: lowered on purpose
    def nvmlDeviceGetCurrPcieLinkWidth(self, h): return 16
    def nvmlDeviceGetPersistenceMode(self, h): return 1
    def nvmlDeviceGetMigMode(self, h): return [0, 0]
    def nvmlDeviceGetEccMode(self, h): return [1, 1]

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        assert kind == 1  # uncorrected
        return self.ecc[counter]

    def nvmlDeviceGetNumaNodeId(self, h):
        if self.numa is None:
            raise _not_supported()  # as measured on the H200
        return self.numa

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in self.procs]


def write(root, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def sysroot(tmp_path):
    """Two NUMA nodes of 8 CPUs; the GPU's PCI function says node 1."""
    root = tmp_path / "root"
    write(root, "sys/devices/system/node/node0/cpulist", "0-7\n")
    write(root, "sys/devices/system/node/node1/cpulist", "8-15\n")
    write(root, "sys/bus/pci/devices/0000:17:00.0/numa_node", "1\n")
    write(root, "sys/bus/pci/devices/0000:17:00.0/local_cpulist", "8-15\n")
    write(root, "proc/self/status", "Name:\tpython\nCapEff:\t000001ffffffffff\n")
    return root


def probe(root, nvml, pid=None):
    return probe_environment(pid or os.getpid(), nvml=nvml, root=str(root), pid_map=lambda p: p)


def test_nvml_facts_and_the_sysfs_numa_fallback(sysroot):
    nv = StubNvml(procs=[os.getpid()], ecc=(0, 3))
    env = probe(sysroot, nv)
    assert (env.driver.driver_version, env.driver.nvml_version, env.driver.cuda_version) == (
        "580.159.04", "13.580.159.04", "13.0")
    (g,) = env.gpus
    assert (g.name, g.pci_bus_id, g.pcie_gen_max, g.pcie_width_max, g.pcie_gen_now) == (
        "NVIDIA H200", "0000:17:00.0", 5, 16, 1)
    assert (g.persistence_mode, g.mig_enabled, g.ecc_enabled) == (True, False, True)
    assert (g.ecc_uncorrected_volatile, g.ecc_uncorrected_aggregate) == (0, 3)
    assert (g.numa_node, g.numa_source, g.local_cpus) == (1, "sysfs", tuple(range(8, 16)))
    assert g.used_by_target is True
    assert env.cpus.numa_nodes == ((0, tuple(range(8))), (1, tuple(range(8, 16))))
    assert nv.shutdowns == 1  # NVML released after the one-shot probe


def test_numa_from_nvml_when_it_answers(sysroot):
    (g,) = probe(sysroot, StubNvml(numa=0)).gpus
    assert (g.numa_node, g.numa_source, g.used_by_target) == (0, "nvml", False)


def test_numa_unknown_everywhere_says_both_reasons(sysroot):
    write(sysroot, "sys/bus/pci/devices/0000:17:00.0/numa_node", "-1\n")
    (g,) = probe(sysroot, StubNvml()).gpus
    assert isinstance(g.numa_node, Unsupported) and g.numa_source == ""
    assert g.numa_node.reason.startswith("NUMA node: not supported on this GPU or driver (NVML: Not Supported)")
    assert "sysfs numa_node is -1" in g.numa_node.reason


def test_no_nvml_library_gives_the_reason_and_the_fix(sysroot):
    env = probe(sysroot, StubNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    assert isinstance(env.driver, Unsupported) and env.driver == env.gpus
    assert "libnvidia-ml.so.1" in env.gpus.reason and "install the NVIDIA driver" in env.gpus.reason
    assert env.target.pid == os.getpid()  # the host side is still probed


@pytest.mark.parametrize("scope, cap, allowed, words", [
    ("1", "0000000000000000", False, "ptrace_scope is 1 and gpuwatch lacks CAP_SYS_PTRACE"),
    ("0", "0000000000000000", True, "same user"),
    ("2", "0000000000080000", True, "holds CAP_SYS_PTRACE"),
    ("3", "000001ffffffffff", False, "ptrace_scope is 3"),
])
def test_ptrace_permission(sysroot, scope, cap, allowed, words):
    pid = os.getpid()
    write(sysroot, "proc/sys/kernel/yama/ptrace_scope", scope + "\n")
    write(sysroot, "proc/self/status", f"CapEff:\t{cap}\n")
    write(sysroot, f"proc/{pid}/status", f"Uid:\t{os.geteuid()}\t{os.geteuid()}\t0\t0\n")
    p = probe(sysroot, StubNvml()).ptrace
    assert p.allowed is allowed and words in p.reason and p.yama_scope == int(scope)


def test_cgroup_v2_limits_take_the_tightest_ancestor(sysroot):
    pid = os.getpid()
    write(sysroot, "proc/self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n")
    write(sysroot, f"proc/{pid}/cgroup", "0::/job.slice/train.scope\n")
    write(sysroot, "sys/fs/cgroup/job.slice/train.scope/cpu.max", "max 100000\n")
    write(sysroot, "sys/fs/cgroup/job.slice/train.scope/cpu.stat", "usage_usec 1\n")
    write(sysroot, "sys/fs/cgroup/job.slice/train.scope/memory.max", "max\n")
    write(sysroot, "sys/fs/cgroup/job.slice/cpu.max", "200000 100000\n")
    write(sysroot, "sys/fs/cgroup/job.slice/memory.max", "4294967296\n")
    cg = probe(sysroot, StubNvml()).cgroup
    assert (cg.version, cg.path, cg.cpu_limit_cores, cg.memory_limit_bytes) == (2, "/job.slice/train.scope", 2.0, 4 << 30)


def test_cgroup_v1_limits_and_the_unlimited_sentinel(sysroot):
    pid = os.getpid()
    write(sysroot, "proc/self/mountinfo",
          "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw shared:5 - cgroup cgroup rw,cpu,cpuacct\n"
          "32 25 0:28 / /sys/fs/cgroup/memory rw shared:6 - cgroup cgroup rw,memory\n")
    write(sysroot, f"proc/{pid}/cgroup", "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n")
    write(sysroot, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n")
    write(sysroot, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    write(sysroot, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "8589934592\n")
    write(sysroot, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
    cg = probe(sysroot, StubNvml()).cgroup
    assert (cg.version, cg.path, cg.cpu_limit_cores, cg.memory_limit_bytes) == (1, "/docker/abc", 1.5, 8 << 30)
    write(sysroot, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n")
    assert probe(sysroot, StubNvml()).cgroup.memory_limit_bytes is None  # v1's "no limit"


def _storage_of_a_reader(sysroot, work):
    """The storage probed for a job working in ``work`` with ``work``/data/shard-000.bin open, its
    data folder an NFS mount: {kind: StorageEnv}."""
    data = work / "data"
    data.mkdir(parents=True)
    (data / "shard-000.bin").write_bytes(b"x" * 4096)
    reader = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'rb'); print('ok', flush=True); time.sleep(60)",
         str(data / "shard-000.bin")], stdout=subprocess.PIPE, cwd=str(work))
    try:
        assert reader.stdout.readline().strip() == b"ok"
        write(sysroot, f"proc/{reader.pid}/mountinfo",
              "25 1 252:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
              f"40 25 0:45 / {data} rw,relatime shared:9 - nfs4 fileserver:/export rw,vers=4.2\n")
        storage = probe(sysroot, StubNvml(), pid=reader.pid).storage
    finally:
        reader.kill()
        reader.wait()
    return {s.kind: s for s in storage}


def test_storage_finds_the_open_data_file_on_a_network_mount(sysroot, tmp_path):
    data = tmp_path / "data"
    by_kind = _storage_of_a_reader(sysroot, tmp_path)
    assert (by_kind["cwd"].path, by_kind["cwd"].fstype, by_kind["cwd"].network) == (str(tmp_path), "ext4", False)
    d = by_kind["data"]
    assert (d.path, d.fstype, d.source, d.network, d.open_files) == (str(data), "nfs4", "fileserver:/export", True, 1)
    assert isinstance(d.rotational, Unsupported) and "not backed by one block device" in d.rotational.reason


def test_probing_this_host_for_real():
    env = probe_environment(os.getpid(), nvml=StubNvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED))
    assert env.target.pid == os.getpid() and env.target.affinity == tuple(sorted(os.sched_getaffinity(0)))
    assert env.cpus.logical_cpus == os.cpu_count()
    assert "kernel driver is not loaded" in env.gpus.reason
    assert env.storage[0].kind == "cwd" and env.storage[0].path == os.getcwd()
    assert isinstance(env.ptrace.allowed, bool) and env.ptrace.reason


def test_a_vanished_process_is_a_reason_not_an_exception():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    env = probe_environment(p.pid, nvml=StubNvml())
    assert isinstance(env.target, Unsupported) and str(p.pid) in env.target.reason


def test_helpers():
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert sysfs_bus_id("00000000:17:00.0") == "0000:17:00.0"
    assert sysfs_bus_id("00000001:AB:00.0") == "0001:ab:00.0"


def test_a_binding_without_a_call_and_a_refusing_gpu_become_reasons(sysroot):
    class OldBinding(StubNvml):
        nvmlSystemGetCudaDriverVersion_v2 = property(lambda self: (_ for _ in ()).throw(AttributeError("no such call")))

        def nvmlDeviceGetPersistenceMode(self, h):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)

    env = probe(sysroot, OldBinding())
    assert env.driver.cuda_version == Unsupported("CUDA version: AttributeError: no such call")
    assert env.driver.driver_version == "580.159.04"
    assert env.gpus[0].persistence_mode == Unsupported("persistence mode: NVML denied permission: run gpuwatch as root")


HOSTILE_DIR = "dir_\x1b]0;TITLE\x07_\u202e_x"
"""A folder name a job can choose: an OSC sequence that sets the terminal's title, and a bidi override."""


def test_storage_paths_the_job_named_are_cleaned(sysroot, tmp_path):
    """The job's working directory and its data folder, both named with escapes, come back written
    out (review 32, item 4: storage[].path reached the JSON report raw), and the data folder still
    matches the mount it lies on (mount points are cleaned the same way)."""
    by_kind = _storage_of_a_reader(sysroot, tmp_path / HOSTILE_DIR)
    shown = str(tmp_path / "dir_\\x1b]0;TITLE\\x07_\\u202e_x")
    assert by_kind["cwd"].path == shown
    assert (by_kind["data"].path, by_kind["data"].mountpoint) == (shown + "/data", shown + "/data")
    assert by_kind["data"].network is True  # matched to the NFS mount despite the escapes
    for s in by_kind.values():
        assert "\x1b" not in s.path and "\x07" not in s.path and "\u202e" not in s.path
