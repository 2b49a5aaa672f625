"""Host PID <-> our PID namespace, for NVML's process lists.

The NVIDIA driver is not PID-namespace aware: NVML always reports *host* PIDs ("anytime you query
it for the set of processes that are using GPUs, you will always get the host pids",
NVIDIA/nvidia-docker#1483). The watched job's PIDs come from our own namespace. So:

- We run in the initial PID namespace (on the host, or a container started with ``--pid=host``):
  NVML's PIDs are ours; the mapping is the identity.
- We run inside a container with its own PID namespace: our ``/proc`` shows only the container's
  PIDs, and a host PID cannot be looked up there. The mapping needs a view of the host's procfs
  (Kubernetes monitoring pods mount it at ``/host/proc``): there, ``/host/proc/<host pid>/status``
  has ``NSpid: <host pid> ... <pid in the innermost namespace>`` and ``ns/pid`` names the process's
  namespace. A process whose namespace is ours maps to the last NSpid entry.
- Neither: the PID cannot be mapped (``None``); the caller says so instead of guessing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

INIT_PIDNS_INODE = 0xEFFFFFFC
"""Inode of the initial PID namespace: PROC_PID_INIT_INO in the kernel's include/linux/proc_ns.h."""

HOST_PROC_CANDIDATES = ("/host/proc",)
"""Where container setups mount the host's procfs (the Kubernetes convention for monitoring pods)."""


def read_nspid(pid: int | str, proc_root: str = "/proc") -> tuple[int, ...] | None:
    """The ``NSpid`` line of ``<proc_root>/<pid>/status``: the PID in each namespace, outermost first."""
    try:
        with open(os.path.join(proc_root, str(pid), "status"), encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return tuple(int(x) for x in line.split()[1:])
    except (OSError, ValueError):
        return None
    return None


def pidns_inode(pid: int | str = "self", proc_root: str = "/proc") -> int | None:
    """The inode of the PID namespace of ``pid`` (from the ``ns/pid`` link: ``pid:[4026531836]``)."""
    try:
        link = os.readlink(os.path.join(proc_root, str(pid), "ns", "pid"))
    except OSError:
        return None
    if link.startswith("pid:[") and link.endswith("]"):
        try:
            return int(link[5:-1])
        except ValueError:
            return None
    return None


class PidMap:
    """Maps NVML's host PIDs to PIDs in our namespace. Callable: ``pid_map(host_pid) -> int | None``.

    The outcome of the one-time namespace check is cached; lookups read one or two small /proc
    files (a few microseconds each), done per GPU process per tick.
    """

    def __init__(self, proc_root: str = "/proc", host_proc_roots: Sequence[str] = HOST_PROC_CANDIDATES) -> None:
        self.proc_root = proc_root
        self.host_proc_roots = tuple(host_proc_roots)
        self._lock = threading.Lock()
        self._checked = False
        self._identity = False
        self._host_root: str | None = None
        self._our_ns: int | None = None

    def _check(self) -> None:
        with self._lock:
            if self._checked:
                return
            self._our_ns = pidns_inode("self", self.proc_root)
            self._identity = self._our_ns == INIT_PIDNS_INODE
            if not self._identity:
                for root in self.host_proc_roots:
                    if pidns_inode(1, root) == INIT_PIDNS_INODE:
                        self._host_root = root
                        break
            self._checked = True

    @property
    def explanation(self) -> str | None:
        """Why host PIDs cannot be mapped here, with the fix; None when they can."""
        self._check()
        if self._identity or self._host_root is not None:
            return None
        return (
            "gpuwatch runs in its own PID namespace (a container) and NVML reports host PIDs: "
            "run it on the host, start the container with --pid=host, or mount the host's /proc "
            f"at {self.host_proc_roots[0] if self.host_proc_roots else '/host/proc'}"
        )

    def __call__(self, host_pid: int) -> int | None:
        self._check()
        if self._identity:
            return host_pid
        if self._host_root is None or self._our_ns is None:
            return None
        if pidns_inode(host_pid, self._host_root) != self._our_ns:
            return None  # a process of the host or of another container
        chain = read_nspid(host_pid, self._host_root)
        return chain[-1] if chain else None
