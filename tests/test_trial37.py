"""Trial 37 (2026-12-07, the 2-vCPU VM, no GPU): real CPU jobs recorded with their own clocks
(tests/data/cpu_field/README.md).

t37_kv_socket: workers fetch each sample from a key-value server on localhost, the client calling the
socket's C method itself, so no socket frame is on the stack. It read "Input-bound on storage ... No
data file was seen open" with the storage remedies, the disk 0 % busy and nothing read.
"""

from __future__ import annotations

import json

from gpuwatch.analysis import Analysis
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames

DATA = "tests/data/cpu_field"


def test_a_client_reading_its_socket_itself_is_said_to_wait_on_a_server():
    with open(f"{DATA}/t37_kv_socket.clock.txt") as f:
        waits = [r["share"]["wait_data"] for r in map(json.loads, f) if "share" in r]
    assert min(waits) > 0.65 and sorted(waits)[len(waits) // 2] > 0.85  # its own clock: the wait throughout
    a = Analysis()
    verdicts = [a.update(f) for f in load_frames(f"{DATA}/t37_kv_socket.jsonl.gz")]
    named = [x for x in verdicts if x.stage == v.IO]
    assert len(named) > len(verdicts) // 2
    last = named[-1]
    assert last.sentence.startswith("Input-bound on loading from a server or object store"), last.sentence
    assert "in KVClient._recv_exact" in last.sentence and "No data file" not in last.sentence
    said = " ".join(last.remedies)
    assert "Test the storage" not in said and "Raise num_workers above 2: workers waiting on socket reads" in said
