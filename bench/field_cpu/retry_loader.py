"""Log-line classifier whose loader meets bad records, keeps the errors and starts a new loader.

A common shape for messy data: a worker's ``__getitem__`` raises on a malformed record, the
DataLoader re-raises it in the training loop, which keeps the exception for an end-of-run summary
(``errors.append(e)``), builds a new DataLoader and carries on. The kept exception's traceback holds
the old iterator's frames, so the old iterator is not freed and its workers stay alive, asleep, until
the run ends: after a few errors the job has several sets of workers, of which one works.
``num_workers=2``; each item is parsed with regexes and hashed into a bag of token ids.

    python bench/field_cpu/retry_loader.py --duration 90

Prints a ready line on stdout, then on exit its own time split (batch waits, steps) and how many
loaders it built.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

BUCKETS = 1 << 14
WORDS = ("GET", "POST", "timeout", "upstream", "cache", "miss", "user", "token", "retry", "ok", "error",
         "shard", "replica", "lease", "commit", "rollback", "disk", "latency", "ms", "bytes")
LINE = re.compile(r"^(\d{4}-\d\d-\d\dT[\d:.]+Z) (\w+) \[([\w-]+)\] (.*)$")


class LogLines(Dataset):
    """Synthetic log lines; about one in ``bad_every`` is truncated and fails to parse."""

    def __init__(self, n: int, bad_every: int, seed: int):
        self.n, self.bad_every, self.seed = n, bad_every, seed

    def __len__(self):
        return self.n

    def _line(self, i: int) -> str:
        h = hashlib.blake2b(f"{self.seed}:{i}".encode(), digest_size=32).digest()
        words = " ".join(WORDS[b % len(WORDS)] for b in h) * 10
        line = f"2026-12-06T10:{h[0] % 60:02d}:{h[1] % 60:02d}.{h[2]:03d}Z {'INFO' if h[3] % 4 else 'WARN'} [svc-{h[4] % 9}] {words}"
        if (i * 2654435761 + self.seed) % self.bad_every == 0:
            line = line[:17]  # truncated record
        return line

    def __getitem__(self, i):
        m = LINE.match(self._line(i))
        if m is None:
            raise ValueError(f"record {i}: cannot parse log line")
        ids = [int(hashlib.md5(tok.encode()).hexdigest()[:8], 16) % BUCKETS
               for tok in re.findall(r"[A-Za-z]+|\d+", m.group(4))]
        return torch.tensor(ids[:512] + [0] * (512 - len(ids[:512]))), int(m.group(2) == "WARN")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=90)
    ap.add_argument("--bad-every", type=int, default=15000, help="one malformed record in this many")
    a = ap.parse_args()
    torch.set_num_threads(1)
    net = nn.Sequential(nn.EmbeddingBag(BUCKETS, 64, mode="mean"), nn.Linear(64, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    errors: list[Exception] = []

    def loader(seed: int):
        return DataLoader(LogLines(1 << 20, a.bad_every, seed), batch_size=32, shuffle=True, num_workers=2)

    print(json.dumps({"t": time.time(), "ready": True, "pid": os.getpid()}), flush=True)
    t0 = time.perf_counter()
    wait = step = 0.0
    steps = 0
    it = iter(loader(0))
    while time.perf_counter() - t0 < a.duration:
        ta = time.perf_counter()
        try:
            x, y = next(it)
        except ValueError as e:
            errors.append(e)  # kept for the summary: its traceback keeps the old iterator alive
            it = iter(loader(len(errors)))
            wait += time.perf_counter() - ta
            continue
        tb = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(net[1](net[0](x)), y).backward()
        opt.step()
        wait += tb - ta
        step += time.perf_counter() - tb
        steps += 1
    total = time.perf_counter() - t0
    print(json.dumps({"t": time.time(), "event": "end", "steps": steps, "loaders": len(errors) + 1,
                      "steps_per_s": steps / total, "wait_share": wait / total, "step_share": step / total}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
