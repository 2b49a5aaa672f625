"""The py-spy JSON parser and the thread classifier.

Two kinds of input:
- real dumps captured by bench/capture_stacks.py, stored in tests/data/pyspy/*.json (each file says
  where it came from in ``host.source``); every job there lists the labels it is expected to show;
- hand-built thread records for shapes those jobs cannot produce on a CPU machine (CUDA sync,
  checkpoints, the pin thread, D state). Their frames are copied from torch 2.13's sources
  (function names and files, as py-spy 0.4.3 prints them on Python 3.11) and say so.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gpuwatch.collectors.pyspy import FrameRecord, ParseError, ThreadRecord, parse_dump
from gpuwatch.collectors.stack_labels import classify, origin, short_name, thread_role
from gpuwatch.model import stacks as S

FIXTURES = sorted((Path(__file__).parent / "data" / "pyspy").glob("*.json"))
PROCESS_ROLE = {"main": "main", "worker": "worker"}


def _jobs():
    for path in FIXTURES:
        doc = json.loads(path.read_text())
        for job in doc["jobs"]:
            yield pytest.param(doc["host"], job, id=f"{path.stem}:{job['name']}")


def _labelled(job, modes=("nonblocking",)):
    """(thread role, label, detail, record) for every thread of the job's dumps."""
    out = []
    for d in job["dumps"]:
        if d["mode"] not in modes or "output" not in d:
            continue
        for t in parse_dump(json.dumps(d["output"]), d["pid"]):
            role = thread_role(t, PROCESS_ROLE[d["process_role"]])
            label, detail = classify(t, role)
            out.append((role, label, detail, t))
    return out


def test_fixtures_present():
    assert FIXTURES, "tests/data/pyspy/ holds no captured dumps"
    for path in FIXTURES:
        doc = json.loads(path.read_text())
        assert doc["kind"] == "pyspy-fixtures" and doc["host"]["source"] and doc["jobs"]


@pytest.mark.parametrize("host,job", list(_jobs()))
def test_fixture_dumps_parse(host, job):
    ok = [d for d in job["dumps"] if "output" in d]
    assert len(ok) >= len(job["dumps"]) * 0.8, [d.get("error") for d in job["dumps"] if "output" not in d]
    for d in ok:
        threads = parse_dump(json.dumps(d["output"]), d["pid"])
        assert len(threads) == len(d["output"])
        main = [t for t in threads if t.tid == d["pid"]]
        assert len(main) == 1, "every dump holds its process's main thread (tid == pid)"
        if main[0].frames and d["mode"] == "blocking":
            # Leaf-first: the outermost frame of a main thread is the script's <module>.
            assert main[0].frames[-1].name == "<module>"


@pytest.mark.parametrize("host,job", list(_jobs()))
def test_fixture_majority_labels(host, job):
    rows = _labelled(job)
    for role, expected in job["expect"].items():
        labels = Counter(label for r, label, _, _ in rows if r == role)
        assert labels, f"{job['name']}: no {role} threads in the dumps"
        top, n = labels.most_common(1)[0]
        assert top in expected, f"{job['name']} {role}: {labels.most_common()} (source: {host['source']})"
        # Not a coin flip: the expected labels together hold most samples.
        assert sum(labels[e] for e in expected) >= 0.6 * sum(labels.values()), labels.most_common()


@pytest.mark.parametrize("host,job", [p for p in _jobs() if p.values[1]["name"] in ("jpeg", "cuda_train")])
def test_fixture_busy_workers_name_the_pil_function(host, job):
    busy = [(detail, t) for role, label, detail, t in _labelled(job) if role == S.ROLE_WORKER and label == S.W_BUSY]
    assert busy
    pil = Counter(detail for detail, t in busy
                  if any(f.short_filename.startswith("PIL/") and short_name(f) == detail for f in t.frames))
    assert sum(pil.values()) >= 0.5 * len(busy), Counter(d for d, _ in busy)
    assert pil.most_common(1)[0][0] in ("ImageFile.load", "Image.convert", "Image.resize", "Image.open",
                                        "Image.copy", "ImageFile.load_prepare")


@pytest.mark.parametrize("host,job", [p for p in _jobs() if p.values[1]["name"] in ("slow_read",)])
def test_fixture_slow_reads_are_io_in_the_read_loop(host, job):
    details = Counter(d for role, label, d, _ in _labelled(job) if role == S.ROLE_WORKER and label == S.W_IO)
    assert details.most_common(1)[0][0] == "stack_targets.read_slowly"


def test_helper_threads_are_role_other():
    seen = Counter()
    for _, job in ((p.values[0], p.values[1]) for p in _jobs()):
        for role, label, _, t in _labelled(job):
            if t.name in ("QueueFeederThread",) or "(_serve)" in t.name:
                seen[(role, label)] += 1
    assert seen and set(seen) == {(S.ROLE_OTHER_THREAD, S.OTHER)}


# -- parser edge cases -----------------------------------------------------------------------------

def test_parse_rejects_garbage():
    for text in ("", "Error: Failed to find python version", "{\"not\": \"a list\"}", "[{\"frames\": 3}]"):
        with pytest.raises(ParseError):
            parse_dump(text, 1)


def test_parse_tolerates_nulls():
    # py-spy prints thread_name null for threads it cannot name (seen on a `python -c` target).
    text = json.dumps([{"pid": 5, "thread_id": 1, "thread_name": None, "os_thread_id": 5, "active": False,
                        "owns_gil": False, "frames": [{"name": "<module>", "filename": "<string>",
                                                       "short_filename": "<string>", "line": 1}]}])
    (t,) = parse_dump(text, 5)
    assert t.name == "" and t.tid == 5 and t.frames[0].text() == "<module> (<string>:1)"


def test_parse_keeps_frames_that_are_not_plain_values():
    """Frames seen before come back as the same record; a field that is not a plain value (not
    py-spy's output) is read as its text, as before, without the memo."""
    frame = {"name": "step", "filename": "/x/train.py", "short_filename": "train.py", "line": 7}
    text = json.dumps([{"pid": 5, "os_thread_id": 5, "frames": [frame, frame]}])
    (a,), (b,) = parse_dump(text, 5), parse_dump(text, 5)
    assert a.frames[0] is a.frames[1] is b.frames[0] and a.frames[0].text() == "step (train.py:7)"
    odd = json.dumps([{"pid": 5, "frames": [dict(frame, name=["a", "b"])]}])
    (t,) = parse_dump(odd, 5)
    assert t.frames[0].name == "['a', 'b']"


def test_labels_from_the_memo_match_a_fresh_classification():
    """label_threads keeps labels by what decides them; each is what classify says afresh, and
    the kernel state still counts (a worker in D state inside __getitem__ reads)."""
    from gpuwatch.collectors import stacks as st
    from gpuwatch.collectors.pyspy import DumpOutcome
    from gpuwatch.collectors.target import Node

    for _, job in (p.values for p in _jobs()):
        for d in job["dumps"]:
            if "output" not in d:
                continue
            threads = parse_dump(json.dumps(d["output"]), d["pid"])
            node = Node(d["pid"], 1, PROCESS_ROLE[d["process_role"]], None, None, "python", "")
            for _ in range(2):  # the second pass answers from the memo
                for t, got in zip(threads, st.label_threads(DumpOutcome(d["pid"], threads, 1.0), node)):
                    want = classify(t, got.role, st.thread_state(t.pid, t.tid) if got.role != S.ROLE_OTHER_THREAD
                                    and t.tid else None, source_line=lambda f, n, pid=t.pid: st.source_line(pid, f, n))
                    assert (got.label, got.detail) == want


# -- hand-built records (frames as py-spy prints them; from torch 2.13 sources) --------------------

SITE = "/venv/lib/python3.11/site-packages/"
STDLIB = "/usr/lib/python3.11/"


def fr(name: str, short: str, line: int = 1) -> FrameRecord:
    if short.startswith(("torch/", "PIL/", "numpy/", "accelerate/", "transformers/", "safetensors/", "tensorboard/")):
        full = SITE + short
    elif short.startswith("/"):
        full, short = short, short.rsplit("/", 1)[-1]
    else:
        full = STDLIB + short
    return FrameRecord(name, full, short, line)


def rec(*frames: FrameRecord, active: bool = True, tid: int = 100, name: str = "MainThread") -> ThreadRecord:
    return ThreadRecord(pid=100, tid=tid, name=name, active=active, owns_gil=False, frames=tuple(frames))


USER = fr("train_step", "/home/me/train.py", 57)
LOOP = fr("main", "/home/me/train.py", 90)


@pytest.mark.parametrize("frames,active,label,detail", [
    ([fr("synchronize", "torch/cuda/__init__.py"), USER, LOOP], True, S.SYNC, "train_step (train.py:57)"),
    ([fr("Event.synchronize", "torch/cuda/streams.py"), USER], False, S.SYNC, "train_step (train.py:57)"),
    ([fr("Tensor.__format__", "torch/_tensor.py"), USER], True, S.SYNC, "train_step (train.py:57)"),
    ([fr("GradScaler._maybe_opt_step.<locals>.<genexpr>", "torch/amp/grad_scaler.py"),
      fr("GradScaler._maybe_opt_step", "torch/amp/grad_scaler.py"), fr("GradScaler.step", "torch/amp/grad_scaler.py"),
      USER], True, S.SYNC, "train_step (train.py:57)"),
    ([fr("c10::cuda::memcpy_and_sync(void*, void const*, long, cudaMemcpyKind, CUstream_st*)", "libc10_cuda.so"),
      USER], True, S.SYNC, "train_step (train.py:57)"),
    ([fr("_engine_run_backward", "torch/autograd/graph.py"), fr("backward", "torch/autograd/__init__.py"),
      fr("Tensor.backward", "torch/_tensor.py"), USER], False, S.BACKWARD, "graph._engine_run_backward"),
    ([fr("_multi_tensor_adam", "torch/optim/adam.py"), fr("Adam.step", "torch/optim/adam.py"), USER],
     True, S.OPTIMIZER, "adam._multi_tensor_adam"),
    ([fr("Linear.forward", "torch/nn/modules/linear.py"), fr("Module._call_impl", "torch/nn/modules/module.py"),
      USER], True, S.DISPATCH, "Linear.forward"),
    ([fr("send_to_device", "accelerate/utils/operations.py"), USER], True, S.H2D, "operations.send_to_device"),
    ([fr("move_data_to_device", "/home/me/utils.py"), USER], True, S.H2D, "utils.move_data_to_device"),
    ([fr("_save", "torch/serialization.py"), fr("save", "torch/serialization.py"),
      fr("Module.state_dict", "torch/nn/modules/module.py"), USER], True, S.CHECKPOINT, "serialization.save"),
    ([fr("save_checkpoint", "/home/me/ckpt.py"), USER], False, S.CHECKPOINT, "ckpt.save_checkpoint"),
    # The user line itself: dispatching, or spin-waiting in .item() (py-spy cannot tell; see module doc).
    ([USER, LOOP], True, S.DISPATCH, "train_step (train.py:57)"),
    ([USER, LOOP], False, S.OTHER, "train_step (train.py:57)"),
    # pin_memory=True: the main thread waits on the pin thread's queue.Queue (signals.md §5.2).
    ([fr("Condition.wait", "threading.py"), fr("Queue.get", "queue.py"),
      fr("_MultiProcessingDataLoaderIter._try_get_data", "torch/utils/data/dataloader.py"),
      fr("_MultiProcessingDataLoaderIter._get_data", "torch/utils/data/dataloader.py"),
      fr("_MultiProcessingDataLoaderIter._next_data", "torch/utils/data/dataloader.py"), USER],
     False, S.DATA_WAIT, "Queue.get"),
    # Python 3.10 and older: py-spy prints bare function names.
    ([fr("select", "selectors.py"), fr("get", "multiprocessing/queues.py"),
      fr("_try_get_data", "torch/utils/data/dataloader.py"), fr("_next_data", "torch/utils/data/dataloader.py"),
      USER], False, S.DATA_WAIT, "queues.get"),
    ([fr("Popen._launch", "multiprocessing/popen_fork.py"),
      fr("_MultiProcessingDataLoaderIter.__init__", "torch/utils/data/dataloader.py"),
      fr("DataLoader.__iter__", "torch/utils/data/dataloader.py"), USER], True, S.DATA_WAIT,
     "DataLoader workers starting or stopping (_MultiProcessingDataLoaderIter.__init__)"),
    # A background-thread prefetcher: the loop's next batch from a queue.Queue a thread of the same
    # process fills (prefetch_generator's BackgroundGenerator: __next__ -> next -> Queue.get).
    ([fr("Condition.wait", "threading.py"), fr("Queue.get", "queue.py"),
      fr("BackgroundGenerator.next", "/home/me/prefetch.py"), fr("BackgroundGenerator.__next__", "/home/me/prefetch.py"),
      USER], False, S.DATA_WAIT, "a prefetch thread's queue (BackgroundGenerator.next)"),
    # A queue read straight from the job's own code: the main thread waits on something its own threads
    # or processes make (a multiprocessing.Pool feeding the loop: tests/test_queue_fed_loop.py); said
    # with its place, so a queue that is not the batches' shows which one it is.
    ([fr("Condition.wait", "threading.py"), fr("Queue.get", "queue.py"), fr("drain_logs", "/home/me/log.py"),
      USER], False, S.DATA_WAIT, "a queue the job fills itself (Queue.get at log.py:1)"),
    ([fr("Event.wait", "threading.py"), fr("ApplyResult.wait", "multiprocessing/pool.py"),
      fr("ApplyResult.get", "multiprocessing/pool.py"), LOOP], False, S.DATA_WAIT,
     "a queue the job fills itself (ApplyResult.get at train.py:90)"),
    # The same read inside a library's code is the library's business, not the loop's input.
    ([fr("Condition.wait", "threading.py"), fr("Queue.get", "queue.py"), fr("Writer.flush", "tensorboard/writer.py"),
      USER], False, S.OTHER, "Condition.wait"),
    # A command the job runs and waits for: the call it made, not the selector it ends in (trial 23's
    # job pacing on subprocess.run read "_PollLikeSelector.select").
    ([fr("_PollLikeSelector.select", "selectors.py"), fr("Popen._communicate", "subprocess.py"),
      fr("Popen.communicate", "subprocess.py"), fr("run", "subprocess.py"), LOOP], False, S.OTHER,
     "subprocess.run from main (train.py:90)"),
    ([], True, S.OTHER, "no Python frames"),
    # Importing torch on start-up: module set-up, not the step (trial report item 5).
    ([fr("<module>", "torch/fx/experimental/symbolic_shapes.py"),
      fr("_call_with_frames_removed", "<frozen importlib._bootstrap>"),
      fr("_find_and_load", "<frozen importlib._bootstrap>"), fr("<module>", "torch/__init__.py"), USER],
     True, S.OTHER, "importing modules (symbolic_shapes.<module>)"),
])
def test_main_thread_shapes(frames, active, label, detail):
    assert classify(rec(*frames, active=active), S.ROLE_MAIN_THREAD) == (label, detail)


WORKER_TAIL = [fr("_MapDatasetFetcher.fetch", "torch/utils/data/_utils/fetch.py"),
               fr("_worker_loop", "torch/utils/data/_utils/worker.py")]


@pytest.mark.parametrize("frames,active,state,label,detail", [
    ([fr("ImageFile.load", "PIL/ImageFile.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL,
     True, "R", S.W_BUSY, "ImageFile.load"),
    # A D-state thread is idle to py-spy; the kernel state says it waits on storage.
    ([fr("ImageFile.load", "PIL/ImageFile.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL,
     False, "D", S.W_IO, "ImageFile.load"),
    ([fr("load", "numpy/lib/_npyio_impl.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL,
     False, "S", S.W_IO, "_npyio_impl.load"),
    ([fr("SocketIO.readinto", "socket.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL,
     True, "R", S.W_IO, "SocketIO.readinto" + S.NETWORK_DETAIL),
    # under a library's own fetch the socket frames still say the read is over the network
    ([fr("stream", "urllib3/response.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL,
     False, "S", S.W_IO, "response.stream" + S.NETWORK_DETAIL),
    ([fr("collate_tensor_fn", "torch/utils/data/_utils/collate.py"),
      fr("default_collate", "torch/utils/data/_utils/collate.py")] + WORKER_TAIL,
     True, "R", S.W_BUSY, "collate.default_collate"),
    ([fr("_PollLikeSelector.select", "selectors.py"), fr("wait", "multiprocessing/connection.py"),
      fr("Queue.get", "multiprocessing/queues.py"), WORKER_TAIL[1]], True, "R", S.W_IDLE, "Queue.get"),
])
def test_worker_shapes(frames, active, state, label, detail):
    assert classify(rec(*frames, active=active), S.ROLE_WORKER, state) == (label, detail)


SLEEPY = [fr("DS.__getitem__", "/home/me/ds.py", 12)] + WORKER_TAIL
"""A worker off the CPU on its own line of __getitem__ (a C call: py-spy shows only the line)."""


def test_a_worker_off_the_cpu_reads_only_on_a_sign_of_a_read():
    # time.sleep or a lock in __getitem__: nothing names a read (trial report item 4).
    assert classify(rec(*SLEEPY, active=False), S.ROLE_WORKER, "S") == (S.W_WAIT, "DS.__getitem__")
    # A function named for reading is one (the diagnosis applies the same rule to old recordings).
    reading = [fr("DS.read_item", "/home/me/ds.py", 30)] + SLEEPY
    assert classify(rec(*reading, active=False), S.ROLE_WORKER, "S") == (S.W_IO, "DS.read_item")
    # D state is a read whatever the frames say, and its detail says why, so that the views and the
    # diagnosis (which count a read only where the detail names one) keep it one (trial 24: a worker
    # in os.preadv at 406 MB/s read "waiting, no read in its stack").
    label, detail = classify(rec(*SLEEPY, active=False), S.ROLE_WORKER, "D")
    assert (label, detail) == (S.W_IO, "DS.__getitem__ (D state: blocked on I/O)")
    assert S.activity(S.ROLE_WORKER, label, detail) == S.W_IO


def test_a_stopped_worker_neither_reads_nor_computes():
    """Trial 30: a worker stopped (SIGSTOP) inside ImageFile.load read "reading: ImageFile.load" in
    six samples, and a view said it was reading. Kernel state T is a stop, whatever the frames say."""
    loading = [fr("ImageFile.load", "PIL/ImageFile.py"), fr("DS.__getitem__", "/home/me/ds.py")] + WORKER_TAIL
    for active in (False, True):
        label, detail = classify(rec(*loading, active=active), S.ROLE_WORKER, "T")
        assert (label, detail) == (S.W_WAIT, "ImageFile.load (stopped: SIGSTOP or SIGTSTP)")
        assert S.activity(S.ROLE_WORKER, label, detail) == S.W_WAIT
    # the same frames off the CPU and not stopped still read
    assert classify(rec(*loading, active=False), S.ROLE_WORKER, "S")[0] == S.W_IO


def test_a_worker_off_the_cpu_on_its_own_read_call_reads():
    # py-spy shows only the job's line while the thread sits in os.pread: the line's text names the read
    # (an IterableDataset that spent 64 % of its time there read as a wait before).
    lines = {12: "buf = os.pread(fd, REC, off)  # one record", 13: "time.sleep(0.05)  # read( later",
             14: "self.f.readinto(view)", 15: "img = Image.open(path)"}
    def source(_file: str, line: int) -> str | None:
        return lines.get(line)
    for line, label in ((12, S.W_IO), (13, S.W_WAIT), (14, S.W_IO), (15, S.W_IO), (16, S.W_WAIT)):
        leaf = [fr("DS.__getitem__", "/home/me/ds.py", line)] + WORKER_TAIL
        assert classify(rec(*leaf, active=False), S.ROLE_WORKER, "S", source_line=source)[0] == label, line
    # on the CPU it computes, whatever the line says (a read from the page cache is a copy)
    on_cpu = [fr("DS.__getitem__", "/home/me/ds.py", 12)] + WORKER_TAIL
    assert classify(rec(*on_cpu, active=True), S.ROLE_WORKER, "R", source_line=source)[0] == S.W_BUSY


PIN_TAIL = [fr("_pin_memory_loop", "torch/utils/data/_utils/pin_memory.py"), fr("Thread.run", "threading.py")]


@pytest.mark.parametrize("frames,active,label", [
    ([fr("pin_memory", "torch/utils/data/_utils/pin_memory.py"),
      fr("do_one_step", "torch/utils/data/_utils/pin_memory.py")] + PIN_TAIL, True, S.PIN_BUSY),
    ([fr("_PollLikeSelector.select", "selectors.py"), fr("Queue.get", "multiprocessing/queues.py"),
      fr("do_one_step", "torch/utils/data/_utils/pin_memory.py")] + PIN_TAIL, False, S.PIN_IDLE),
    ([fr("rebuild_storage_fd", "torch/multiprocessing/reductions.py"), fr("Queue.get", "multiprocessing/queues.py"),
      fr("do_one_step", "torch/utils/data/_utils/pin_memory.py")] + PIN_TAIL, True, S.PIN_BUSY),
    # Off the CPU in the IPC that hands it a batch, it waits for the worker's side: pinning nothing.
    ([fr("Connection._recv", "multiprocessing/connection.py"), fr("answer_challenge", "multiprocessing/connection.py"),
      fr("DupFd.detach", "multiprocessing/resource_sharer.py"),
      fr("rebuild_storage_fd", "torch/multiprocessing/reductions.py"), fr("Queue.get", "multiprocessing/queues.py"),
      fr("do_one_step", "torch/utils/data/_utils/pin_memory.py")] + PIN_TAIL, False, S.PIN_IDLE),
])
def test_pin_thread(frames, active, label):
    t = rec(*frames, active=active, tid=101, name="Thread-3 (_pin_memory_loop)")
    assert thread_role(t, "main") == S.ROLE_PIN
    assert classify(t, S.ROLE_PIN)[0] == label


def test_thread_roles():
    main = rec(USER, tid=100)
    assert thread_role(main, "main") == S.ROLE_MAIN_THREAD
    assert thread_role(main, "worker") == S.ROLE_WORKER
    assert thread_role(rec(USER, tid=0, name="MainThread"), "main") == S.ROLE_MAIN_THREAD  # no os tid
    helper = rec(fr("Queue._feed", "multiprocessing/queues.py"), tid=105, name="QueueFeederThread")
    assert thread_role(helper, "worker") == S.ROLE_OTHER_THREAD
    assert thread_role(helper, "main") == S.ROLE_OTHER_THREAD
    assert thread_role(main, "other") == S.ROLE_OTHER_THREAD


def test_short_names():
    assert short_name(fr("ImageFile.load", "PIL/ImageFile.py")) == "ImageFile.load"
    assert short_name(fr("open", "PIL/Image.py")) == "Image.open"
    assert short_name(fr("synchronize", "torch/cuda/__init__.py")) == "cuda.synchronize"
    assert short_name(FrameRecord("<module>", "<string>", "<string>", 1)) == "<module>"


def test_origin():
    assert origin(fr("f", "torch/nn/modules/linear.py")) == "torch"
    assert origin(fr("f", "PIL/Image.py")) == "lib"
    assert origin(fr("f", "threading.py")) == "stdlib"
    assert origin(FrameRecord("f", "<frozen runpy>", "<frozen runpy>", 1)) == "stdlib"
    assert origin(USER) == "user"


def test_every_worker_label_has_words():
    assert all(label in S.LABEL_WORDS for label in S.WORKER_LABELS)


def test_a_pass_is_flagged_from_the_whole_stack_but_never_from_the_jobs_driver():
    """The collector flags a main thread inside an evaluation pass from frames beyond the dozen it
    keeps (a validation loader's wait lies ten frames deep in DataLoader internals). Out there the
    job's drivers sit under every sample: a ``train_and_evaluate`` is no pass, and a function that
    runs the training step (a driver named ``evaluate``) stops counting as one once it is seen under
    a backward sample (review 33: every sample of such a job read as validation)."""
    from gpuwatch.collectors import stacks as st
    from gpuwatch.collectors.pyspy import DumpOutcome
    from gpuwatch.collectors.target import Node

    wait = [fr("_PollLikeSelector.select", "selectors.py"), fr("wait", "multiprocessing/connection.py"),
            fr("Connection._poll", "multiprocessing/connection.py"), fr("_ConnectionBase.poll", "multiprocessing/connection.py"),
            fr("Queue.get", "multiprocessing/queues.py"),
            fr("_MultiProcessingDataLoaderIter._try_get_data", "torch/utils/data/dataloader.py", 1291),
            fr("_MultiProcessingDataLoaderIter._get_data", "torch/utils/data/dataloader.py", 1464),
            fr("_MultiProcessingDataLoaderIter._next_data", "torch/utils/data/dataloader.py", 1505),
            fr("_BaseDataLoaderIter.__next__", "torch/utils/data/dataloader.py", 725),
            *[fr("Fetcher.__next__", "/home/me/fetch.py", 10 + k) for k in range(4)]]
    backward = [fr("_engine_run_backward", "torch/autograd/graph.py"), fr("backward", "torch/autograd/__init__.py"),
                fr("Tensor.backward", "torch/_tensor.py"), *[fr("step", "/home/me/train.py", 20 + k) for k in range(10)]]

    def flagged(frames: list, outer: str, pid: int) -> tuple[str, bool | None]:
        r = ThreadRecord(pid=pid, tid=pid, name="MainThread", active=False, owns_gil=False,
                         frames=(*frames, fr(outer, "/home/me/train.py", 80), fr("<module>", "/home/me/train.py", 99)))
        node = Node(pid, 1, "main", None, None, "python", "")
        (t,) = [x for x in st.label_threads(DumpOutcome(pid, (r,), 1.0), node) if x.role == S.ROLE_MAIN_THREAD]
        assert len(t.frames) == 12 and not any(outer in f for f in t.frames)
        return t.label, t.evaluating

    assert flagged(wait, "validate", 7001) == (S.DATA_WAIT, True)
    assert flagged(wait, "train_and_evaluate", 7002) == (S.DATA_WAIT, False)
    # a driver named for a pass: a pass until a backward sample is seen under it, then never again
    assert flagged(wait, "evaluate", 7003) == (S.DATA_WAIT, True)
    assert flagged(backward, "evaluate", 7003) == (S.BACKWARD, False)
    assert flagged(wait, "evaluate", 7003) == (S.DATA_WAIT, False)
    assert flagged(wait, "evaluate", 7004) == (S.DATA_WAIT, True)  # another process keeps its own
