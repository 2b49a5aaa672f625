"""Whether the watched process is one rank among its siblings: then the job is all of them, walked
from their common parent (collectors/target.py, Target._family_root).

A launcher (torchrun, deepspeed, ``accelerate launch``: target._is_launcher_cmd) starts ranks and
nothing else, so its children are ranks. A Python process whose multiprocessing children include
the target may start ranks (``torch.multiprocessing.spawn``) or independent jobs (a sweep driver
forking one experiment per GPU, a ProcessPoolExecutor of trials, a notebook): there the target must
show that it is part of a distributed job, by torch.distributed's variables in its environment, or
by a TCP connection to one of its siblings (c10d's store and gloo's pairs connect every rank to the
others; independent experiments do not talk to each other). Two forked experiments taken for ranks
lost each other's CPU from contention and were compared as stragglers (review of trial 22's fix).
"""

from __future__ import annotations

import psutil

DIST_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")
"""torch.distributed's environment (torchrun sets them all; an mp.spawn script often sets
MASTER_ADDR/MASTER_PORT before spawning, which its children inherit)."""

MP_CHILD = "multiprocessing.spawn import spawn_main"
"""The command line of a ``spawn`` child (``torch.multiprocessing.spawn`` starts ranks so)."""


def mp_child(argv: tuple[str, ...], parent: tuple[str, ...]) -> bool:
    """A multiprocessing child of ``parent``: spawned (``spawn_main``), or forked (the parent's own
    command line)."""
    return MP_CHILD in " ".join(argv) or argv == parent


def distributed(pid: int, ppid: int) -> bool:
    """Evidence that ``pid`` is a rank of a distributed job with its siblings (children of ``ppid``):
    torch.distributed's variables in its environment, or a TCP connection to a sibling."""
    try:
        env = psutil.Process(pid).environ()
    except (psutil.Error, OSError, ValueError):
        env = {}
    if any(v in env for v in DIST_VARS):
        return True
    try:
        mine = {(c.laddr, c.raddr) for c in psutil.Process(pid).net_connections(kind="tcp") if c.raddr}
        if not mine:
            return False
        for sib in psutil.Process(ppid).children():
            if sib.pid == pid:
                continue
            theirs = {(c.raddr, c.laddr) for c in sib.net_connections(kind="tcp") if c.raddr}
            if mine & theirs:
                return True
    except (psutil.Error, OSError, ValueError):
        return False
    return False
