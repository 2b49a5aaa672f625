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


def test_a_recv_named_function_is_a_server_read_but_local_pipes_are_not():
    """Review 42: the recv rule read multiprocessing's pipes (Connection._recv, reduction.recvfds) and
    any name holding "recv" as a server's."""
    from gpuwatch.model import stacks as lb

    assert lb.on_network("KVClient._recv_exact") and lb.on_network("recv_all")
    # review 43: recv after an underscore, and a client class of its own named Connection
    assert lb.on_network("Client.do_recv") and lb.on_network("net.sock_recv") and lb.on_network("Connection.recv_exact")
    assert not lb.on_network("x.irecv")
    assert lb.on_network("fetch_item (network)")  # the mark of recordings made by 43952f8
    for local in ("Connection._recv", "Connection._recv_bytes", "reduction.recvfds", "mod.precvalidate"):
        assert not lb.on_network(local), local


def _mask_job(worker_cpu: float, usable: int):
    from gpuwatch.model import stacks as lb
    from tests.test_diagnosis_frames import Knobs, build, run

    k = Knobs(gpu=None, main_labels={lb.DATA_WAIT: 0.8, lb.DISPATCH: 0.2}, main_cpu=0.1, workers=2,
              worker_cpu=worker_cpu, worker_labels={lb.W_BUSY: 1.0}, worker_detail={lb.W_BUSY: "Image.resize"},
              cpu_count=16, usable=usable)
    return run(build(k, 30))[-1]


def test_a_wider_mask_is_proposed_only_where_it_holds_the_batch_makers():
    """Review 42: a mask of 8 of 16 CPUs with 2 workers at 0.95 core read "which its 2 workers fill,
    and 13.90 cores of the host sat idle" beside "5 usable CPUs are free"; 2 workers at 1.9 cores each
    (thread pools) read "about 0.53x" from a wider mask."""
    roomy = _mask_job(0.95, 8)
    assert not any(r.startswith("Let the job use more") for r in roomy.remedies), roomy.remedies
    assert any(r.startswith("Raise num_workers from 2 toward 7") for r in roomy.remedies)
    threaded = _mask_job(1.9, 4)
    assert not any(g.fix == v.MORE_CPUS for g in threaded.gains), threaded.gains
    assert not any(r.startswith("Let the job use more") for r in threaded.remedies)


def test_the_storage_check_beside_local_storage_signs_checks_the_data_files():
    """Review 42: socket reads beside the job's own storage reads warned "the data comes from a
    server" under a verdict on the local storage; the check now reads as the verdict does."""
    from dataclasses import replace

    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.checks_host import check_network_fs
    from gpuwatch.report.model import WARN

    frames = load_frames(f"{DATA}/t37_kv_socket.jsonl.gz")
    assert check_network_fs(frames, NOT_RECORDED).status == WARN
    reading = [replace(f, procs=replace(f.procs, processes=tuple(
        replace(p, read_bps=50e6) if p.role == "worker" else p for p in f.procs.processes))) if f.procs else f
        for f in frames]
    beside = check_network_fs(reading, NOT_RECORDED)
    assert beside.status == WARN and "beside the job's own storage reads: the data comes partly from a server" \
        in beside.reason, beside
