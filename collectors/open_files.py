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
    Raises OSError when the process is gone or its fds are not readable.

    The links and fdinfo files are looked up relative to descriptors of their two folders: the
    kernel resolves one name each time instead of the whole path (and the process's entry), and a
    process that exits mid-scan answers ENOENT rather than its PID's next holder."""
    fd_dir = os.open(f"{proc_root}/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    info_dir = None
    out = []
    try:
        for fd in os.listdir(fd_dir):
            try:
                path = os.readlink(fd, dir_fd=fd_dir)
            except OSError:  # closed since the listing
                continue
            if not path.startswith("/") or path.endswith(" (deleted)") or not keep(path):
                continue
            if info_dir is None:
                try:
                    info_dir = os.open(f"{proc_root}/{pid}/fdinfo", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError:
                    return out
            flags = _flags(fd, info_dir)
            if flags is None or flags & O_DIRECTORY or flags & O_ACCMODE == O_WRONLY:
                continue
            out.append(clean(path))
    finally:
        os.close(fd_dir)
        if info_dir is not None:
            os.close(info_dir)
    return out


def _flags(fd: str, info_dir: int) -> int | None:
    """The octal ``flags:`` line of fdinfo file ``fd`` (the second line: one read holds it)."""
    try:
        f = os.open(fd, os.O_RDONLY | os.O_CLOEXEC, dir_fd=info_dir)
        try:
            raw = os.read(f, 4096)
        finally:
            os.close(f)
        at = raw.index(b"flags:")
        return int(raw[at + 6:raw.index(b"\n", at)], 8)
    except (OSError, ValueError):
        return None
