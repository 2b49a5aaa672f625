"""The watched job: its process tree, walked recursively, with a role for every process.

Shared by the collectors (one instance per watch). The tree is re-read at most every
``refresh_s`` so that collectors on different threads can ask for it cheaply; DataLoader workers
that come and go at epoch boundaries show up at the next refresh.

Roles, decided top-down from the watched process:

- ``worker``: a DataLoader worker (its comm is ``pt_data_worker``).
- ``main``: a training process. The process that owns DataLoader workers (their nearest ancestor
  that is not a multiprocessing helper) always is one. Otherwise the watched process itself, or,
  below a launcher, the first Python process of each branch (a rank).
- ``launcher``: torchrun, ``deepspeed``, ``accelerate launch``, the per-node daemons of Slurm and
  MPI and the like, recognised by their command line (argv elements, not substrings); a rank-less
  process with ranks or worker owners below it (``mp.spawn``'s parent); a non-Python watched process with Python children (a shell
  script, ``uv run``, ``srun``).
- ``other``: everything else (forkserver, resource tracker, compile workers, ``nvidia-smi`` ...).
  Mains are never nested: a Python child of a main is ``other`` unless it owns workers.

Known gap: a forkserver or spawn worker keeps the comm ``python`` (role ``other``) until it has
unpickled its arguments and named itself, which took up to 3 s on a loaded 2-core box.
"""

from __future__ import annotations

import functools
import os
import re
import threading
import time
from dataclasses import dataclass

import psutil

from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import TaskStat, parse_stat, read_stat
from gpuwatch.collectors.sibling_ranks import distributed, mp_child
from gpuwatch.collectors.tid_lists import TidLists
from gpuwatch.model.procs import ROLE_LAUNCHER, ROLE_MAIN, ROLE_OTHER, ROLE_WORKER
from gpuwatch.redact import redact_cmdline
from gpuwatch.untrusted import clean, small_int

UNPARSEABLE = (ValueError, IndexError, KeyError, TypeError)
"""What psutil's /proc parsers raise on a stat or status file they cannot parse (a kernel with other
fields, a file bind-mounted over by someone): caught like psutil's own errors, never a traceback."""

WORKER_COMM = "pt_data_worker"
"""DataLoader workers name their thread so since PyTorch 2.5 (pytorch/pytorch#128448)."""

OLD_MAIN_COMM = "pt_main_thread"
"""torch 2.3/2.4 named the main thread so (PR #121170, reverted by #134066); forked DataLoader
workers inherited the name, so on those versions a ``pt_main_thread`` child with its parent's
command line is a worker."""

CLUSTER_DAEMONS = ("slurmstepd", "orted", "prted", "prterun", "hydra_pmi_proxy")
"""The per-node daemons of cluster launchers, the parent of every task on a node: Slurm's step
daemon (``srun python train.py``; it retitles itself ``slurmstepd: [job.step]``), Open MPI 4's and
5's (``prterun`` where mpirun runs on one node) and MPICH/Intel MPI's Hydra proxy. Their tasks may
be ranks of one job or independent runs (``srun -n 4`` of four seeds), so a task's siblings are
taken in only with sibling_ranks.distributed's evidence, as for a Python parent."""
LAUNCHER_PROGRAMS = ("torchrun", "deepspeed", "mpirun", "mpiexec", "horovodrun", "srun", *CLUSTER_DAEMONS)
"""Programs (argv[0], or the script a Python interpreter runs) that start ranks."""
LAUNCHER_MODULES = (
    "torch.distributed.run",
    "torch.distributed.launch",
    "torch.distributed.elastic.multiprocessing",
    "deepspeed.launcher.runner",
    "deepspeed.launcher.launch",
    "accelerate.commands.launch",
    "accelerate.commands.accelerate_cli",
)
"""Modules run with ``python -m`` that start ranks."""
RANK_VARS = ("RANK", "LOCAL_RANK")
TASK_RANK_VARS = ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
"""A cluster daemon's task's rank, set by the launcher itself (Target._task_ranks)."""
COMM_LEN = 15
"""The kernel keeps 15 characters of a process name; psutil completes a name that long from the
command line, so such a name is always read through psutil."""
CMDLINE_TTL_S = 10.0
"""The job's command line is read again at most this often: it only changes when the job retitles
itself (setproctitle), and reading and redacting it at every frame cost ~0.1 ms each time."""
FAMILY_RECHECK_S = 10.0
"""How often a parent not yet shown to start the target's sibling ranks is looked at again
(sibling_ranks.distributed reads environments and TCP connections)."""
REFRESH_S = 0.9
"""The tree is re-walked at most this often: about once per tick at the default 1 s refresh, however
many collectors ask for it (a new DataLoader worker shows within a tick)."""


@dataclass(frozen=True, slots=True)
class Node:
    pid: int
    ppid: int
    role: str
    rank: int | None
    main_pid: int | None
    name: str
    cmdline: str
    create_time: float = 0.0
    """psutil's create time (Unix seconds): with ``pid`` it names a process even if the PID is reused."""


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


class UnreadableProc(Exception):
    """The job's /proc files exist but cannot be parsed (a collector reports it; nothing crashes)."""


@dataclass(frozen=True, slots=True)
class _Raw:
    ppid: int
    name: str
    argv: tuple[str, ...]
    create_time: float
    interp: bool = False
    """Its executable (or, where that is unreadable, its comm) is a Python interpreter: a Python
    process whose argv[0] was changed (``exec -a``, setproctitle) is still one (_is_python)."""


class Target:
    """A running process given by PID, and everything below it."""

    def __init__(self, pid: int, refresh_s: float = REFRESH_S) -> None:
        self.pid = pid
        self.refresh_s = refresh_s
        try:
            self._proc = psutil.Process(pid)  # raises NoSuchProcess / AccessDenied for the CLI to report
        except UNPARSEABLE as e:
            raise psutil.Error(f"cannot parse /proc/{pid}/stat ({type(e).__name__}: {e})") from None
        st = read_stat(pid)
        self.starttime = st.starttime if st is not None else None
        """Clock ticks after boot the process started: with the PID it names the process, so a PID
        the kernel gives to a new process after the job exits is not taken for the job."""
        self._cmdline = ""
        self._cmdline_t: float | None = None
        self._lock = threading.Lock()
        self._tree: Tree | None = None
        self._tree_t = 0.0
        self._walked: tuple[int, dict[int, _Raw], dict[int, int | None]] | None = None
        """The identities and ranks the last tree was built from: a walk that finds the same keeps
        that tree's nodes (its roles and nodes follow from them alone)."""
        self._rank_cache: dict[tuple, int | None] = {}  # (pid, create time[, "task"])
        self._known: dict[int, tuple[int, _Raw]] = {}
        """PID -> (its starttime, its identity) from the last walk: a process seen before is re-read
        from its stat line alone (parent, name, state), its command line and create time kept."""
        self._files = ProcFiles()
        """Kept descriptors of the job's stat files and its threads' children lists (one ``pread``
        each a walk instead of an open, a read and a close)."""
        self._tids = TidLists()
        self._children_files = False
        """Whether the kernel has per-thread children lists (looked up until found)."""
        self._family: tuple[int, int, bool, float] | None = None
        """(parent PID, its start time, whether it starts the target's sibling ranks, when that was
        decided): decided once per parent, or again every FAMILY_RECHECK_S while it was not (ranks
        connect to each other after they start)."""
        self.exit_reason: str | None = None

    @property
    def process(self) -> psutil.Process:
        return self._proc

    def reused(self) -> bool:
        """Whether the PID now names another process (the job exited and the kernel gave its PID
        to a new one): its start time differs from the job's."""
        st = read_stat(self.pid, files=self._files)
        return st is not None and self.starttime is not None and st.starttime != self.starttime

    def cmdline(self) -> str:
        """The job's redacted command line; once the PID is reused, the job's last one (never the
        new process's). Read again every CMDLINE_TTL_S (a job may retitle itself), not at every
        call: each frame asks for it."""
        if self.reused():
            return self._cmdline
        now = time.monotonic()
        if self._cmdline_t is not None and now - self._cmdline_t < CMDLINE_TTL_S:
            return self._cmdline
        try:
            text = _shown_cmdline(tuple(self._proc.cmdline()))
        except (psutil.Error, OSError, *UNPARSEABLE):
            return self._cmdline
        if self.reused():  # reused while it was read
            return self._cmdline
        self._cmdline, self._cmdline_t = text, now
        return text

    def alive(self) -> bool:
        """Whether the job still runs: its stat line (through the kept descriptor) is there, is
        not a zombie's, and has the job's start time. A line that cannot be read or parsed is
        unknown, not taken for an exit."""
        try:
            text = self._files.text(f"/proc/{self.pid}/stat")
            st = parse_stat(text) if text else None
        except (OSError, ValueError, IndexError):  # unknown: not taken for an exit
            return True
        if st is not None and self.starttime is not None and st.starttime != self.starttime:
            if self.exit_reason is None:
                self.exit_reason = f"process {self.pid} exited (its PID now belongs to another process)"
            return False
        ok = st is not None and st.state not in ("Z", "X")
        if not ok and self.exit_reason is None:
            self.exit_reason = f"process {self.pid} exited"
        return ok

    def tree(self, max_age: float | None = None) -> Tree:
        """The current process tree, walked again when the last walk is ``refresh_s`` seconds old
        (or ``max_age``, where that is sooner). Raises TargetGone."""
        limit = self.refresh_s if max_age is None else min(max_age, self.refresh_s)
        with self._lock:
            now = time.monotonic()
            if self._tree is None or now - self._tree_t >= limit:
                self._tree = self._walk()
                self._tree_t = now
            return self._tree

    # -- walking ---------------------------------------------------------------------------
    def _walk(self) -> Tree:
        root = read_stat(self.pid, files=self._files)
        if root is not None and self.starttime is not None and root.starttime != self.starttime:  # reused
            self.alive()
            raise TargetGone(self.exit_reason or f"process {self.pid} exited")
        top = self._family_root(root)
        try:
            try:
                info = self._identities(root, top)
            except psutil.NoSuchProcess:
                if top == self.pid:
                    raise
                # the parent exited, or the target was re-parented, between the two reads: the
                # target's own tree (gone only if the target itself is)
                top = self.pid
                info = self._identities(root, top)
        except psutil.NoSuchProcess as e:  # also raised when the PID was reused by another process
            self.exit_reason = self.exit_reason or f"process {self.pid} exited"
            raise TargetGone(str(e)) from e
        except UNPARSEABLE as e:
            raise UnreadableProc(f"/proc/{self.pid} cannot be parsed ({type(e).__name__}: {e})") from None
        if self.pid not in info:  # gone or a zombie: it has exited either way
            self.exit_reason = self.exit_reason or f"process {self.pid} exited"
            raise TargetGone(f"process {self.pid} exited")
        ranks = {pid: self._rank(pid, r.create_time) for pid, r in info.items()}
        if self._tree is not None and self._walked == (top, info, ranks):
            # The same processes, parents, names and ranks: the same roles and nodes (a new Tree all
            # the same: a walk's tree is never the previous walk's object).
            return Tree(self.pid, self._tree.nodes)
        self._walked = (top, info, dict(ranks))  # a copy: start_order_ranks' ranks are added to ranks below
        roles = assign_roles(top, info, ranks, launcher=top != self.pid) if top in info else {}
        if top != self.pid and (roles.get(self.pid) != ROLE_MAIN
                                or sum(1 for r in roles.values() if r == ROLE_MAIN) < 2):
            # Not one rank among others after all (the parent's other children are no training
            # processes): the target's own tree, as if no parent were looked at.
            own = _subtree(self.pid, info)
            info = {pid: r for pid, r in info.items() if pid in own}
            ranks = {pid: ranks[pid] for pid in info}
            roles = assign_roles(self.pid, info, ranks)
        ranks.update(start_order_ranks(info, roles, ranks))
        ranks.update(self._task_ranks(info, roles, ranks))
        nodes = []
        for pid, r in info.items():
            role = roles.get(pid)
            if role is None:  # its parent exited during the walk: re-parented, no longer ours
                continue
            main = None if role == ROLE_MAIN else _nearest(pid, info, roles, ROLE_MAIN)
            rank = ranks[pid] if role == ROLE_MAIN else (ranks.get(main) if main else None)
            nodes.append(Node(pid, r.ppid, role, rank, main, r.name, _shown_cmdline(r.argv), r.create_time))
        nodes.sort(key=lambda n: (n.role != ROLE_LAUNCHER, n.role != ROLE_MAIN, n.pid))
        return Tree(self.pid, tuple(nodes))

    def _family_root(self, root: TaskStat | None) -> int:
        """Where the walk starts: the target's parent where that parent starts the target's sibling
        ranks (a launcher, or the ``mp.spawn`` parent of spawned children), else the target.

        Given one rank's PID (nvidia-smi lists each rank's on its GPU), the job is still all its
        ranks: walked from the target alone, the other ranks and their DataLoader workers were
        "processes outside the job", named as contention to move or renice, and the verdict
        differed from the one the launcher's PID gave (trial 22's two-rank DDP job). The walk keeps
        the parent only where it finds the target a training process among two or more (_walk)."""
        ppid = root.ppid if root is not None else 0
        if ppid <= 1:
            return self.pid
        pst = read_stat(ppid, files=self._files)
        if pst is None:
            return self.pid
        now = time.monotonic()
        fam = self._family
        if fam is None or fam[:2] != (ppid, pst.starttime) or (not fam[2] and now - fam[3] >= FAMILY_RECHECK_S):
            try:
                parent, mine = tuple(psutil.Process(ppid).cmdline()), tuple(self._proc.cmdline())
            except (psutil.Error, OSError, *UNPARSEABLE):
                return self.pid
            if _is_cluster_daemon(parent):  # its tasks may be independent runs: evidence needed
                ok = distributed(self.pid, ppid)
            else:
                ok = _is_launcher_cmd(parent) or (_is_python(parent) and mp_child(mine, parent)
                                                    and distributed(self.pid, ppid))
            self._family = (ppid, pst.starttime, ok, now)
        return ppid if self._family[2] else self.pid

    def _identities(self, root: TaskStat | None, top: int | None = None) -> dict[int, _Raw]:
        """The identity of the target and every process below ``top`` (default: the target), by PID
        (zombies left out).

        The PIDs come from the kernel's per-thread ``children`` lists when it has them
        (CONFIG_PROC_CHILDREN, on in distribution kernels): that reads only the job's own /proc
        entries, where psutil's ``children(recursive=True)`` reads the stat file of every process
        on the host. A process seen in an earlier walk costs one stat read (the walk runs about
        once a tick; reading its command line and redacting it each time was most of its cost).
        ``root``: the target's stat line, just read (None: it has exited).
        """
        if not self._children_files:
            self._children_files = os.path.exists(f"/proc/{self.pid}/task/{self.pid}/children")
        top = self.pid if top is None else top
        if not self._children_files:
            if not self._proc.is_running():
                raise psutil.NoSuchProcess(self.pid)
            try:
                start = self._proc if top == self.pid else psutil.Process(top)
                procs = [start] + _psutil_children(start)
            except psutil.Error:  # the parent exited: the target's own tree
                procs = [self._proc] + _psutil_children(self._proc)
            got = {p.pid: raw for p in procs if (raw := _read(p)) is not None}
            if self.pid not in got:
                raise psutil.NoSuchProcess(self.pid)
            me = os.getpid()
            if me in got and me not in (self.pid, top):  # gpuwatch below the target (its user's shell): not the job
                for pid in _subtree(me, got):
                    del got[pid]
            return got
        stats = self._descendant_stats(root, top)
        if self.pid not in stats:
            raise psutil.NoSuchProcess(self.pid)
        info: dict[int, _Raw] = {}
        known: dict[int, tuple[int, _Raw]] = {}
        for pid, st in stats.items():
            if st is None or st.state == "Z":  # gone, or exited and not yet reaped
                continue
            seen = self._known.get(pid)
            # A new comm is an exec (a wrapper script's `exec python train.py`): the same PID and
            # start time, another program, whose command line is read again.
            if seen is not None and seen[0] == st.starttime and len(st.name) < COMM_LEN and seen[1].name == st.name:
                raw = _Raw(st.ppid, st.name, seen[1].argv, seen[1].create_time, seen[1].interp)
            else:  # new (or a comm psutil completes from the command line): read it all
                try:
                    raw = _read(psutil.Process(pid))
                except (psutil.Error, *UNPARSEABLE):
                    continue
                if raw is None:
                    continue
            info[pid] = raw
            known[pid] = (st.starttime, raw)
        self._known = known
        return info

    def _descendant_stats(self, root: TaskStat | None, top: int | None = None) -> dict:
        """The stat line of ``top`` (default: the target) and of every process below it (None for
        one that exited mid-walk), ``top`` first, the others in the order the walk found them.

        The PIDs come from the kernel's per-thread ``children`` lists (CONFIG_PROC_CHILDREN, on in
        distribution kernels): that reads only the job's own /proc entries, where psutil's
        ``children(recursive=True)`` reads the stat file of every process on the host. Each file is
        read through a descriptor kept from walk to walk, and a process's thread list is listed
        again only when its thread count changes (collectors/tid_lists.py).
        """
        top = self.pid if top is None else top
        out: dict = {}
        todo = [top]
        seen = {top}
        order = [top]
        # gpuwatch itself, where it runs below the target (``--pid $$`` from the user's shell), is
        # never walked into: neither it nor its py-spy children are the job.
        me = os.getpid()
        if me not in (self.pid, top):
            seen.add(me)
        while todo:
            pid = todo.pop()
            st = out[pid] = root if pid == self.pid else read_stat(pid, files=self._files)
            if st is None:  # exited: its children were re-parented outside the tree
                continue
            for tid in self._tids.get(pid, st.starttime, st.num_threads) or ():
                raw = self._files.read(f"/proc/{pid}/task/{tid}/children")
                for k in (raw or b"").split():
                    child = int(k)
                    if child not in seen:
                        seen.add(child)
                        order.append(child)
                        todo.append(child)
        self._files.sweep()  # the files of processes and threads that have exited
        self._tids.keep_only(seen)
        return {pid: out[pid] for pid in order}

    def _task_ranks(self, info: dict[int, _Raw], roles: dict[int, str], ranks: dict[int, int | None]) -> dict[int, int]:
        """Ranks of the tasks of a cluster daemon (srun, mpirun), which get the launcher's own rank
        variables (SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK) and no RANK unless the
        job script exports one. Read only for a daemon's rank-less training processes: inherited by
        every process of a batch job, SLURM_PROCID=0 would number an mp.spawn parent's ranks all 0."""
        out = {}
        for pid, role in roles.items():
            parent = info.get(info[pid].ppid)
            if role != ROLE_MAIN or ranks.get(pid) is not None or parent is None or not _is_cluster_daemon(parent.argv):
                continue
            key = (pid, info[pid].create_time, "task")
            if key not in self._rank_cache:
                self._rank_cache[key] = _read_rank(pid, TASK_RANK_VARS)
            if self._rank_cache[key] is not None:
                out[pid] = self._rank_cache[key]
        return out

    def _rank(self, pid: int, create_time: float) -> int | None:
        key = (pid, create_time)
        if key not in self._rank_cache:
            if len(self._rank_cache) > 4096:  # pids of dead workers: keep the cache bounded
                self._rank_cache.clear()
            self._rank_cache[key] = _read_rank(pid)
        return self._rank_cache[key]


def _subtree(pid: int, info: dict[int, _Raw]) -> set[int]:
    """``pid`` and every process of ``info`` below it."""
    return {pid, *_below(pid, _children_of(info, pid))}


def _children_of(info: dict[int, _Raw], root: int) -> dict[int, list[int]]:
    """Parent PID -> its children in ``info`` (``root`` is no one's child: its parent lies outside)."""
    kids: dict[int, list[int]] = {}
    for pid, r in info.items():
        if pid != root:
            kids.setdefault(r.ppid, []).append(pid)
    return kids


def _below(pid: int, kids: dict[int, list[int]]) -> list[int]:
    """Every descendant of ``pid``."""
    out, todo = [], list(kids.get(pid, ()))
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(kids.get(c, ()))
    return out


def _psutil_children(proc: psutil.Process) -> list[psutil.Process]:
    """psutil's recursive children, read again when its host-wide /proc scan races an exiting
    process (psutil 7.2 raises IndexError on a stat file that reads back empty); after three
    tries this tick goes on with the target alone rather than end the walk."""
    for _ in range(3):
        try:
            return proc.children(recursive=True)
        except UNPARSEABLE:
            continue
    return []


@functools.lru_cache(maxsize=256)
def _shown_cmdline(argv: tuple[str, ...]) -> str:
    """The redacted command line (cached: the same few command lines come back every walk)."""
    return redact_cmdline(argv)


def _read(p: psutil.Process) -> _Raw | None:
    """One process's identity, or None when it is gone or a zombie (an exited worker not yet
    reaped must not show as a stale row). A denied command line is read as empty."""
    try:
        with p.oneshot():
            if p.status() == psutil.STATUS_ZOMBIE:
                return None
            ppid, name, ct = p.ppid(), p.name(), p.create_time()
            try:
                argv = tuple(p.cmdline())
            except psutil.AccessDenied:
                argv = ()
            interp = not _is_python(argv) and _runs_python(p)  # read only where argv does not tell
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except (psutil.Error, OSError, *UNPARSEABLE):
        return None
    return _Raw(ppid, clean(name, 64), argv, ct, interp)


def assign_roles(root: int, info: dict[int, _Raw], ranks: dict[int, int | None], launcher: bool = False) -> dict[int, str]:
    """Role of every process in ``info`` (pid -> identity) reachable from ``root`` by parent links.
    ``launcher``: ``root`` is known to start ranks (sibling_ranks.distributed showed it), whatever its
    command line and children show."""
    kids = _children_of(info, root)
    workers = {pid for pid, r in info.items() if pid != root and _is_worker(r, info.get(r.ppid))}
    # a worker's own fork is no worker, whatever it is named (torch 2.3/2.4 name both pt_main_thread)
    workers = {pid for pid in workers if info[pid].ppid not in workers}
    helpers = {pid for pid, r in info.items() if _is_mp_helper(r.argv) and pid not in workers}
    owners = set()
    for w in workers:
        cur = info[w].ppid
        while cur in helpers and cur in info:  # forkserver: workers are its children
            cur = info[cur].ppid
        if cur in info and cur not in workers:
            owners.add(cur)

    def leads_ranks(pid: int) -> bool:
        """True when a rank-less ``pid`` has ranked processes or worker owners below it."""
        if ranks.get(pid) is not None:
            return False
        return any(d in owners or (ranks.get(d) is not None and d not in workers and d not in helpers)
                   for d in _below(pid, kids))

    roles: dict[int, str] = {}
    r0 = info[root]
    wrapper = not _py(r0) and any(_py(info[c]) for c in kids.get(root, ()))
    if launcher or _is_launcher_cmd(r0.argv) or (root not in owners and (leads_ranks(root) or wrapper)):
        roles[root] = ROLE_LAUNCHER
    else:
        roles[root] = ROLE_MAIN
    todo = list(kids.get(root, ()))
    while todo:
        pid = todo.pop(0)
        r = info[pid]
        parent_role = roles.get(r.ppid, ROLE_OTHER)
        if pid in workers:
            role = ROLE_WORKER
        elif pid in helpers:
            role = ROLE_OTHER
        elif pid in owners:
            role = ROLE_MAIN
        elif _under(pid, info, roles, ROLE_MAIN):
            role = ROLE_OTHER
        elif _is_launcher_cmd(r.argv) or (parent_role == ROLE_LAUNCHER and leads_ranks(pid)):
            role = ROLE_LAUNCHER
        elif parent_role == ROLE_LAUNCHER and (ranks.get(pid) is not None or _py(r)):
            role = ROLE_MAIN
        else:
            role = ROLE_OTHER
        roles[pid] = role
        todo.extend(kids.get(pid, ()))
    return roles


def start_order_ranks(info: dict[int, _Raw], roles: dict[int, str], ranks: dict[int, int | None]) -> dict[int, int]:
    """Ranks for ``torch.multiprocessing.spawn`` children, which get theirs as an argument, not in
    their environment: ``mp.spawn`` starts rank i as the i-th process, so they are numbered in
    start order (create time, then PID). Only when two or more rank-less mains share a launcher
    parent and all of them are multiprocessing children (``spawn_main`` or a fork of the parent)."""
    groups: dict[int, list[int]] = {}
    for pid, role in roles.items():
        if role == ROLE_MAIN and roles.get(info[pid].ppid) == ROLE_LAUNCHER:
            groups.setdefault(info[pid].ppid, []).append(pid)
    out = {}
    for parent, mains in groups.items():
        if len(mains) < 2 or any(ranks.get(m) is not None for m in mains):
            continue
        if not all(mp_child(info[m].argv, info[parent].argv) for m in mains):
            continue
        for i, m in enumerate(sorted(mains, key=lambda m: (info[m].create_time, m))):
            out[m] = i
    return out


def _is_worker(r: _Raw, parent: _Raw | None) -> bool:
    """A DataLoader worker: named so by torch, and not a fork of one. A worker's own child carries its
    name until it execs (subprocess.run in __getitem__: each sample's short-lived fork read as a new
    worker, "re-created 7 times" with persistent_workers=True; trial 35)."""
    if parent is not None and parent.name == WORKER_COMM:
        return False
    if r.name == WORKER_COMM:
        return True
    return r.name == OLD_MAIN_COMM and parent is not None and parent.argv == r.argv


def _is_launcher_cmd(argv: tuple[str, ...]) -> bool:
    """torchrun & co. Matched on argv elements, not substrings, so ``train.py --deepspeed cfg``
    (Hugging Face Trainer's flag) is not mistaken for the ``deepspeed`` launcher."""
    if not argv:
        return False
    prog = _program(argv)
    if prog in LAUNCHER_PROGRAMS or (prog == "accelerate" and "launch" in argv[1:3]):
        return True
    if not _is_python(argv):
        return False
    args = [a for a in argv[1:] if a not in ("-u", "-B", "-O", "-OO", "-s", "-E", "-I")]
    if len(args) >= 2 and args[0] == "-m":
        return args[1] in LAUNCHER_MODULES
    if args:
        script = os.path.basename(args[0])
        if script in LAUNCHER_PROGRAMS:
            return True
        if script == "accelerate" and "launch" in args[1:3]:
            return True
    return False


def _program(argv: tuple[str, ...]) -> str:
    """argv[0]'s file name. A retitled process may hold its whole title in argv[0] ("slurmstepd:
    [12.0]" with NUL padding after it, where the daemon's path was longer than its title)."""
    if not argv:
        return ""
    head = argv[0].split(" ", 1)[0]
    return os.path.basename(head[:-1] if head.endswith(":") else argv[0])


def _is_cluster_daemon(argv: tuple[str, ...]) -> bool:
    return _program(argv) in CLUSTER_DAEMONS


def _read_rank(pid: int, names: tuple[str, ...] = RANK_VARS) -> int | None:
    """RANK or LOCAL_RANK (or ``names``) from the process's environment, where it is readable; a
    value that is not a plain number (untrusted.small_int) is no rank."""
    try:
        env = psutil.Process(pid).environ()
    except (psutil.Error, OSError, *UNPARSEABLE):
        return None
    for var in names:
        rank = small_int(env.get(var) or "")
        if rank is not None:
            return rank
    return None


PYTHON_EXE = re.compile(r"(?:python|pypy)(?:[0-9]+(?:\.[0-9]+)?)?[dtw]?")
"""The file names of Python interpreters: python, python3, python3.11, python3.13t (free-threaded),
python3.11d (debug), pythonw, pypy, pypy3, pypy3.10. Whole names only, unlike the argv[0] test: the
executable is the fallback for a retitled process, and a program that merely has "python" in its
name (an embedding server, ``python-config``) is not taken for the interpreter on that evidence."""


def _is_python(argv: tuple[str, ...] | list[str], proc: psutil.Process | None = None) -> bool:
    """Whether argv[0] names Python; given ``proc``, also whether its executable or comm does
    (_runs_python): a Python process may change its argv[0] (``exec -a train-rank0 python``,
    setproctitle) and is still the job's."""
    if argv and "python" in os.path.basename(argv[0]):
        return True
    return proc is not None and _runs_python(proc)


def _runs_python(proc: psutil.Process) -> bool:
    """Whether the process's executable (/proc/PID/exe), or its comm (the executable's name as
    the kernel set it at exec; a process may rename it, so it is the second choice), is a Python
    interpreter (PYTHON_EXE)."""
    try:
        exe = proc.exe()
    except (psutil.Error, OSError, *UNPARSEABLE):
        exe = ""
    if exe:  # the file the kernel runs, whatever argv[0] says: it decides where it is readable
        return bool(PYTHON_EXE.fullmatch(os.path.basename(exe)))
    try:
        return bool(PYTHON_EXE.fullmatch(proc.name()))
    except (psutil.Error, OSError, *UNPARSEABLE):
        return False


def _py(r: _Raw) -> bool:
    """Whether a walked process is Python, by its argv[0] or its executable (_Raw.interp)."""
    return r.interp or _is_python(r.argv)


def job_children(proc: psutil.Process) -> list[psutil.Process]:
    """Every process below ``proc`` except gpuwatch itself and its own children (py-spy): given
    the shell it runs in (``--pid $$``), gpuwatch is no Python process of the job's."""
    below = _psutil_children(proc)
    me = os.getpid()
    if proc.pid == me or not any(c.pid == me for c in below):
        return below
    kids: dict[int, list[int]] = {}
    for c in below:
        try:
            kids.setdefault(c.ppid(), []).append(c.pid)
        except (psutil.Error, OSError, *UNPARSEABLE):  # gone: it is no one's child any more
            continue
    mine = {me, *_below(me, kids)}
    return [c for c in below if c.pid not in mine]


def _is_mp_helper(argv: tuple[str, ...] | list[str]) -> bool:
    """The resource tracker and the forkserver (whose forked children, DataLoader workers included,
    keep its command line: callers check for workers first)."""
    joined = " ".join(argv)
    return "multiprocessing.resource_tracker" in joined or "multiprocessing.forkserver" in joined


def _under(pid: int, info: dict[int, _Raw], roles: dict[int, str], role: str) -> bool:
    return _nearest(pid, info, roles, role) is not None


def _nearest(pid: int, info: dict[int, _Raw], roles: dict[int, str], role: str) -> int | None:
    """The nearest ancestor of ``pid`` with ``role``."""
    seen = set()
    cur = info[pid].ppid
    while cur in info and cur not in seen:
        if roles.get(cur) == role:
            return cur
        seen.add(cur)
        cur = info[cur].ppid
    return None


def worker_owner(pid: int) -> int | None:
    """The training process a DataLoader worker ``pid`` belongs to (its nearest ancestor that is
    neither a worker nor a multiprocessing helper such as the forkserver), or None when ``pid`` is no
    worker. Given a worker's PID (top lists them beside the trainer, often busier), the watch is of
    its trainer: watched as the job itself, the worker read as the training process and the trainer
    as "a process outside the job" to renice (trial 23)."""
    try:
        proc = psutil.Process(pid)
        parent = proc.parent()
        # Only the name PyTorch gives its workers: torch 2.3/2.4's inherited pt_main_thread also
        # names fork-started ranks and Pool children, which are no one's DataLoader workers (review).
        if proc.name() != WORKER_COMM or (parent is not None and parent.name() == WORKER_COMM):
            return None  # a worker's own fork (subprocess.run before its exec) is no worker
        cur = parent
        while cur is not None and cur.pid > 1:
            argv = tuple(cur.cmdline())
            if not _is_python(argv, cur):  # cur: a retitled trainer is Python by its executable
                return None  # init, a subreaper or a shell adopted it: its trainer is gone
            if cur.name() != WORKER_COMM and not _is_mp_helper(argv):
                return cur.pid
            cur = cur.parent()
    except (psutil.Error, OSError, *UNPARSEABLE):
        return None
    return None
