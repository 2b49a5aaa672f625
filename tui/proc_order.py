"""Which processes the processes table lists, and in what order: htop's sort, filter and tree.

Pure functions over the frame's processes, so the panel and the tests share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuwatch.model.procs import ROLE_LAUNCHER, ROLE_MAIN, ProcInfo
from gpuwatch.model.values import known

SORTS = (None, "cpu", "rss", "read")
"""Sort columns in the order F6 and < > step through them; None: the job's order (launcher,
main processes, then the rest by PID, as the collector lists them)."""

SORT_WORDS = {None: "job order", "cpu": "CPU", "rss": "RSS", "read": "reads"}
SORT_COLUMN = {"cpu": "cpu", "rss": "rss", "read": "read"}
"""Sort -> the table column that gets the ▼ mark."""


def sort_value(p: ProcInfo, sort: str | None) -> float:
    if sort == "cpu":
        return p.cpu_pct
    if sort == "rss":
        return float(p.rss)
    if sort == "read":
        return float(p.read_bps) if known(p.read_bps) else -1.0
    return 0.0


def matches(text: str, query: str) -> bool:
    """Case-insensitive substring match, as htop's filter (F4)."""
    return query.lower() in text.lower()


@dataclass(frozen=True)
class Listed:
    """One process as the table lists it: its depth in the tree (0 when flat) and whether it is
    the last of its siblings (└ rather than ├)."""

    proc: ProcInfo
    depth: int = 0
    last: bool = False
    prefix: str = ""
    """Tree glyphs before the role (``│ └─``), empty when flat."""


def order(procs: Sequence[ProcInfo], sort: str | None, tree: bool,
          keep: set[int] | None = None) -> list[Listed]:
    """``procs`` sorted (descending; the job's order when ``sort`` is None), as a tree when ``tree``
    (siblings sorted among themselves, as htop does), keeping only PIDs in ``keep`` when given.
    In a tree, a kept process keeps its ancestors too, so it is shown where it lives."""
    def key(p: ProcInfo) -> tuple:
        job = (p.role != ROLE_LAUNCHER, p.role != ROLE_MAIN, p.pid)  # the collector's order
        return (-sort_value(p, sort), *job) if sort else job

    if not tree:
        shown = [p for p in procs if keep is None or p.pid in keep]
        return [Listed(p) for p in sorted(shown, key=key)]
    by_pid = {p.pid: p for p in procs}
    if keep is not None:  # the kept ones and their ancestors
        wanted: set[int] = set()
        for pid in keep:
            cur: int | None = pid
            while cur is not None and cur in by_pid and cur not in wanted:
                wanted.add(cur)
                cur = by_pid[cur].ppid
        procs = [p for p in procs if p.pid in wanted]
        by_pid = {p.pid: p for p in procs}
    kids: dict[int | None, list[ProcInfo]] = {}
    for p in procs:
        parent = p.ppid if p.ppid in by_pid and p.ppid != p.pid else None
        kids.setdefault(parent, []).append(p)
    out: list[Listed] = []

    def walk(parent: int | None, lead: str, depth: int) -> None:
        children = sorted(kids.get(parent, ()), key=key)
        for n, p in enumerate(children):
            last = n == len(children) - 1
            prefix = "" if depth == 0 else lead + ("└─" if last else "├─")
            out.append(Listed(p, depth, last, prefix))
            walk(p.pid, "" if depth == 0 else lead + ("  " if last else "│ "), depth + 1)

    walk(None, "", 0)
    return out
