"""A dataset of many files on a real disk, read cold: the page cache is dropped before every read.

What is real here: every item is a real ``read`` of a real file on a disk-backed file system. Before
each read the worker calls ``posix_fadvise(POSIX_FADV_DONTNEED)`` on the file (the files are clean
after the fsync at creation, so the kernel drops their cached pages), or opens it with ``O_DIRECT``
(``--read-mode direct``), so the bytes come from the block device, not from RAM. Each worker checks
that with its own ``/proc/self/io`` ``read_bytes`` (storage-layer reads only) and the scenario
reports the share of requested bytes that really came from the device.
What is not: the host under a VM may cache the virtual disk, so "disk" speed is whatever the
virtual block device delivers.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile

import torch
from torch.utils.data import Dataset

MEMORY_FS = {"tmpfs", "ramfs", "devtmpfs", "squashfs"}
"""File systems whose reads never touch a block device (a cold read there is impossible)."""
FEATURES = 4096
"""Values the model sees per file: a strided sample of the bytes (the sampling costs no CPU)."""
BLOCK = 4096
"""O_DIRECT needs offsets, sizes and buffers aligned to the logical block size; 4 KiB covers all."""


def fs_type(path: str) -> str:
    """The file-system type of the mount that holds ``path`` (from /proc/mounts)."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ")
                inside = path == mnt or path.startswith(mnt.rstrip("/") + "/")
                if inside and len(mnt) >= len(best):
                    best, kind = mnt, parts[2]
    except OSError:
        pass
    return kind


def pick_data_dir(asked: str | None) -> str:
    """A directory on a disk-backed file system: ``asked``, else the temp dir, else the cwd."""
    candidates = [asked] if asked else [tempfile.gettempdir(), os.getcwd(), os.path.expanduser("~")]
    for c in candidates:
        if c and os.path.isdir(c) and os.access(c, os.W_OK) and fs_type(c) not in MEMORY_FS:
            return c
    raise SystemExit(
        f"scenario: error: no disk-backed directory among {candidates} (they are in RAM: "
        f"{[fs_type(c) for c in candidates if c]}); pass --data-dir on a real disk"
    )


def write_files(root: str, count: int, size: int) -> list[str]:
    """``count`` files of ``size`` bytes, synced to disk and dropped from the page cache."""
    size = max(BLOCK, size // BLOCK * BLOCK)
    block = bytearray(os.urandom(size))
    paths = []
    for i in range(count):
        block[:8] = i.to_bytes(8, "little")  # every file differs, no need for fresh randomness
        path = os.path.join(root, f"sample_{i:06d}.bin")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, block)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        paths.append(path)
    return paths


def read_bytes_from_disk() -> int:
    """This process's storage-layer reads so far (page-cache hits do not count)."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


class ReadBuffer:
    """One page-aligned buffer per process, reused for every read.

    A fresh buffer per read would cost a memset and a page fault per 4 KiB (measured on the dev
    VM: worker CPU 0.38-0.5 core instead of the reads' own cost), which is CPU work a real loader
    reading into a reused buffer does not do. Made lazily, so each DataLoader worker has its own.
    """

    def __init__(self) -> None:
        self._buf: mmap.mmap | None = None
        self._pid = -1

    def get(self, size: int) -> memoryview:
        size = -(-size // BLOCK) * BLOCK
        if self._buf is None or self._pid != os.getpid() or len(self._buf) < size:
            self._buf = mmap.mmap(-1, size)  # anonymous mmap: page-aligned, as O_DIRECT needs
            self._pid = os.getpid()
        return memoryview(self._buf)[:size]


def read_cold(path: str, direct: bool, buf: ReadBuffer) -> memoryview:
    """The whole file, from the device: O_DIRECT, or the page cache dropped right before reading."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        if not direct:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        size = os.fstat(fd).st_size
        view = buf.get(size)
        got = 0
        while got < size:
            n = os.readv(fd, [view[got:]])
            if n == 0:
                break
            got += n
        return view[:got]
    finally:
        os.close(fd)


class ColdFiles(Dataset):
    """One file per item, read cold; returns (features, label, bytes the device really read)."""

    def __init__(self, paths: list[str], direct: bool = False) -> None:
        self.paths = paths
        self.direct = direct
        self.buf = ReadBuffer()

    def __len__(self) -> int:
        return 1 << 30  # one endless epoch

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int, int, int]:
        before = read_bytes_from_disk()
        data = read_cold(self.paths[i % len(self.paths)], self.direct, self.buf)
        from_disk = read_bytes_from_disk() - before if before >= 0 else -1
        raw = torch.frombuffer(data, dtype=torch.uint8)
        step = max(1, raw.numel() // FEATURES)
        x = raw[::step][:FEATURES].float()  # copies 4096 values out of the reused buffer: the only CPU work
        return x, i % 10, len(data), from_disk


class DataDir:
    """A private directory of sample files, removed on close."""

    def __init__(self, asked: str | None, count: int, size: int) -> None:
        base = pick_data_dir(asked)
        self.fs = fs_type(base)
        self.root = tempfile.mkdtemp(prefix="gpuwatch-io-", dir=base)
        try:
            self.paths = write_files(self.root, count, size)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
