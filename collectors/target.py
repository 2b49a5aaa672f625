"""The watched job: its process tree, walked recursively, with a role for every process.

Shared by the collectors (one instance per watch). The tree is re-read at most every
``refresh_s`` so that collectors on different threads can ask for it cheaply; DataLoader workers
that come and go at epoch boundaries show up at the next refresh.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import psutil

from gpuwatch.model.procs import ROLE_LAUNCHER, ROLE_MAIN, ROLE_OTHER, ROLE_WORKER
from gpuwatch.redact import redact_cmdline

WORKER_COMM = "pt_data_worker"
"""DataLoader workers name their thread so since PyTorch 2.5 (pytorch/pytorch#128448)."""

LAUNCHER_MARKERS = (
    "torch.distributed.run",
    "torch.distributed.launch",
    "torchrun",
    "accelerate launch",
    "accelerate/commands/launch",
    "deepspeed",
)
RANK_VARS = ("RANK", "LOCAL_RANK")


@dataclass(frozen=True, slots=True)
class Node:
    pid: int
    ppid: int
    role: str
    rank: int | None
    main_pid: int | None
    name: str
    cmdline: str


@dataclass(frozen=True, slots=True)
class Tree:
    root: int
    nodes: tuple[Node, ...]

    def pids(self) -> tuple[int, ...]:
        return tuple(n.pid for n in self.nodes)

    def mains(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.role == ROLE_MAIN)

    def workers(self, main_pid: int | None = None) -> tuple[Node, ...]:
        return tuple(
            n for n in self.nodes if n.role == ROLE_WORKER and (main_pid is None or n.main_pid == main_pid)
        )

    def get(self, pid: int) -> Node | None:
        for n in self.nodes:
            if n.pid == pid:
                return n
        return None


class TargetGone(Exception):
    """The watched process no longer exists."""


class Target:
    """A running process given by PID, and everything below it."""

    def __init__(self, pid: int, refresh_s: float = 0.5) -> None:
        self.pid = pid
        self.refresh_s = refresh_s
        self._proc = psutil.Process(pid)  # raises NoSuchProcess / AccessDenied for the CLI to report
        self._lock = threading.Lock()
        self._tree: Tree | None = None
        self._tree_t = 0.0
        self._rank_cache: dict[tuple[int, float], int | None] = {}
        self.exit_reason: str | None = None

    @property
    def process(self) -> psutil.Process:
        return self._proc

    def cmdline(self) -> str:
        try:
            return redact_cmdline(self._proc.cmdline())
        except (psutil.Error, OSError):
            return ""

    def alive(self) -> bool:
        try:
            ok = self._proc.is_running() and self._proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            ok = False
        except psutil.Error:
            ok = True
        if not ok and self.exit_reason is None:
            self.exit_reason = f"process {self.pid} exited"
        return ok

    def tree(self) -> Tree:
        """The current process tree (cached for ``refresh_s``). Raises TargetGone."""
        with self._lock:
            now = time.monotonic()
            if self._tree is None or now - self._tree_t >= self.refresh_s:
                self._tree = self._walk()
                self._tree_t = now
            return self._tree

    # -- walking ---------------------------------------------------------------------------
    def _walk(self) -> Tree:
        try:
            procs = [self._proc] + self._proc.children(recursive=True)
        except psutil.NoSuchProcess as e:
            raise TargetGone(str(e)) from e
        info: dict[int, tuple[int, str, list[str], float]] = {}
        for p in procs:
            try:
                with p.oneshot():
                    info[p.pid] = (p.ppid(), p.name(), p.cmdline(), p.create_time())
            except (psutil.Error, OSError):
                continue
        if self.pid not in info:
            raise TargetGone(f"process {self.pid} exited")

        root_cmd = " ".join(info[self.pid][2])
        ranks = {pid: self._rank(pid, ct) for pid, (_, _, _, ct) in info.items()}
        is_launcher = any(m in root_cmd for m in LAUNCHER_MARKERS) or (
            ranks[self.pid] is None
            and any(r is not None for pid, r in ranks.items() if pid != self.pid and info[pid][1] != WORKER_COMM)
        )
        roles: dict[int, str] = {}
        for pid, (ppid, name, cmd, _) in info.items():
            if pid == self.pid:
                roles[pid] = ROLE_LAUNCHER if is_launcher else ROLE_MAIN
            elif name == WORKER_COMM:
                roles[pid] = ROLE_WORKER
            elif is_launcher and (ranks[pid] is not None or ppid == self.pid) and _is_python(cmd):
                roles[pid] = ROLE_MAIN
            else:
                roles[pid] = ROLE_OTHER
        # A launcher's direct Python children are ranks only if they are not multiprocessing helpers.
        for pid, (_, _, cmd, _) in info.items():
            if roles[pid] == ROLE_MAIN and pid != self.pid and _is_mp_helper(cmd):
                roles[pid] = ROLE_OTHER

        nodes = []
        for pid, (ppid, name, cmd, _) in info.items():
            main = _nearest_main(pid, info, roles)
            rank = ranks[pid] if roles[pid] == ROLE_MAIN else (ranks.get(main) if main else None)
            nodes.append(Node(pid, ppid, roles[pid], rank, main if roles[pid] != ROLE_MAIN else None,
                              name, redact_cmdline(cmd)))
        nodes.sort(key=lambda n: (n.role != ROLE_LAUNCHER, n.role != ROLE_MAIN, n.pid))
        return Tree(self.pid, tuple(nodes))

    def _rank(self, pid: int, create_time: float) -> int | None:
        key = (pid, create_time)
        if key not in self._rank_cache:
            self._rank_cache[key] = _read_rank(pid)
            if len(self._rank_cache) > 4096:  # pids of dead workers: keep the cache bounded
                self._rank_cache.clear()
        return self._rank_cache[key]


def _read_rank(pid: int) -> int | None:
    """RANK or LOCAL_RANK from the process's environment, where it is readable."""
    try:
        env = psutil.Process(pid).environ()
    except (psutil.Error, OSError):
        return None
    for var in RANK_VARS:
        v = env.get(var)
        if v is not None and v.strip().isdigit():
            return int(v)
    return None


def _is_python(cmd: list[str]) -> bool:
    return bool(cmd) and "python" in os.path.basename(cmd[0])


def _is_mp_helper(cmd: list[str]) -> bool:
    joined = " ".join(cmd)
    return "multiprocessing.resource_tracker" in joined or "multiprocessing.forkserver" in joined


def _nearest_main(pid: int, info: dict, roles: dict[int, str]) -> int | None:
    seen = set()
    cur = info[pid][0]
    while cur in info and cur not in seen:
        if roles.get(cur) == ROLE_MAIN:
            return cur
        seen.add(cur)
        cur = info[cur][0]
    return None
