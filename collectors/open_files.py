"""The files a process has open for reading, from /proc/PID/fd and /proc/PID/fdinfo.

Read by hand rather than with psutil's ``open_files``: psutil stats every path the fds point to and
reads the fdinfo of every regular file, and a CUDA process holds dozens of fds (driver device
nodes, shared memory) that its DataLoader workers inherit, which made that scan about 1 % of a
core per tick on the H200 (bench/profile_self.py). Here paths are filtered by name first and only
the survivors' fdinfo is read (for the access mode); nothing is stat'ed, so a hung network mount
cannot block the scan.
"""

from __future__ import annotations

import os

from gpuwatch.untrusted import clean

O_ACCMODE = 0o3
O_WRONLY = 0o1
O_DIRECTORY = 0o200000
"""Flag bits of fdinfo's octal ``flags:`` line (asm-generic/fcntl.h, the same on x86-64 and arm64)."""


def readable_files(pid: int, keep, proc_root: str = "/proc") -> list[str]:
    """Paths of the regular files ``pid`` has open for reading, for which ``keep(path)`` is true.
    Raises OSError when the process is gone or its fds are not readable."""
    fd_dir = f"{proc_root}/{pid}/fd"
    out = []
    for fd in os.listdir(fd_dir):
        try:
            path = os.readlink(f"{fd_dir}/{fd}")
        except OSError:  # closed since the listing
            continue
        if not path.startswith("/") or path.endswith(" (deleted)") or not keep(path):
            continue
        flags = _flags(f"{proc_root}/{pid}/fdinfo/{fd}")
        if flags is None or flags & O_DIRECTORY or flags & O_ACCMODE == O_WRONLY:
            continue
        out.append(clean(path))
    return out


def _flags(path: str) -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        return None
    return None
