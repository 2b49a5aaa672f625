"""The target's process tree: roles on real PyTorch jobs (fork, forkserver, torchrun, respawned
workers, exit) and the role rules on synthetic trees (launchers, wrappers, mp.spawn, old torch)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from gpuwatch.collectors.procfs import read_stat
from gpuwatch.collectors.target import (
    Target,
    TargetGone,
    _is_launcher_cmd,
    _Raw,
    assign_roles,
    start_order_ranks,
)
from gpuwatch.collectors.sibling_ranks import DIST_VARS, distributed, mp_child

PY = "/usr/bin/python3"
pytestmark = pytest.mark.timeout(120)



def wait_for(pred, timeout=30.0, step=0.1):
    """Poll ``pred`` until it returns something truthy; the value, or the last one on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


def tree_with(t: Target, workers: int, mains: int = 1, timeout: float = 30.0):
    """The tree once it shows ``workers`` workers and ``mains`` mains (forkserver and spawn workers
    take their name a moment after they appear); the last tree read on timeout."""
    last = None

    def pred():
        nonlocal last
        last = t.tree()
        return len(last.workers()) == workers and len(last.mains()) == mains

    wait_for(pred, timeout)
    return last


# -- real jobs -------------------------------------------------------------------------------
@pytest.mark.slow
def test_fork_job_main_and_workers(busy_job):
    job = busy_job
    t = Target(job.pid)
    tree = tree_with(t, 2)
    main = tree.get(job.pid)
    assert main.role == "main" and main.rank is None and main.main_pid is None
    assert tree.mains() == (main,)
    workers = tree.workers(job.pid)
    assert len(workers) == 2
    for w in workers:
        assert w.name == "pt_data_worker"
        assert w.ppid == job.pid and w.main_pid == job.pid
        assert w.create_time == pytest.approx(psutil.Process(w.pid).create_time())
        assert "cpu_train.py" in w.cmdline
    assert set(tree.pids()) == {job.pid, *(w.pid for w in workers)}
    assert tree.nodes[0].pid == job.pid  # mains sort first
    assert t.alive() and "cpu_train.py" in t.cmdline()


def test_a_workers_pid_leads_to_its_training_process(cpu_job):
    """Given a DataLoader worker's PID (top shows them beside the trainer), the watch is of its
    trainer: the worker read as the training process and its trainer as an outside process to
    renice (trial 23). Forkserver workers are grandchildren: the forkserver is skipped; the CLI
    says which PID it watches."""
    from gpuwatch.collectors.target import worker_owner

    for start in ("fork", "forkserver"):
        job = cpu_job(workers=1, slow="sleep", start_method=start)
        tree = tree_with(Target(job.pid), 1)
        (w,) = tree.workers(job.pid)
        assert worker_owner(w.pid) == job.pid
        assert worker_owner(job.pid) is None
    out = subprocess.run([sys.executable, "-m", "gpuwatch", "diagnose", "--pid", str(w.pid), "--duration", "2",
                          "--no-stacks", "--format", "json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"PID {w.pid} is a DataLoader worker; watching its training process, PID {job.pid}" in out.stderr
    assert f'"pid": {job.pid}' in out.stdout


@pytest.mark.slow
def test_tree_is_cached_then_refreshed(busy_job):
    t = Target(busy_job.pid, refresh_s=0.3)
    a = t.tree()
    assert t.tree() is a
    time.sleep(0.35)
    assert t.tree() is not a


def test_a_caller_can_ask_for_a_fresher_tree_but_not_a_staler_one(busy_job):
    t = Target(busy_job.pid, refresh_s=10.0)
    a = t.tree()
    time.sleep(0.05)
    assert t.tree() is a and t.tree(max_age=1.0) is a
    b = t.tree(max_age=0.01)  # the procs collector's "this moment"
    assert b is not a and t.tree() is b
    quick = Target(busy_job.pid, refresh_s=0.0)
    c = quick.tree()
    assert quick.tree(max_age=5.0) is not c  # max_age only ever tightens refresh_s


@pytest.mark.slow
def test_forkserver_workers_are_grandchildren(forkserver_job):
    job = forkserver_job
    t = Target(job.pid)
    tree = tree_with(t, 2)
    workers = tree.workers(job.pid)
    assert len(workers) == 2, tree
    (server,) = {w.ppid for w in workers}
    assert server != job.pid
    assert tree.get(server).role == "other" and tree.get(server).ppid == job.pid
    assert "forkserver" in tree.get(server).cmdline
    tracker = [n for n in tree.nodes if "resource_tracker" in n.cmdline]
    assert tracker and tracker[0].role == "other" and tracker[0].main_pid == job.pid
    assert tree.mains() == (tree.get(job.pid),)


@pytest.mark.slow
def test_respawned_workers_are_picked_up(respawn_job):
    job = respawn_job
    t = Target(job.pid, refresh_s=0.0)
    seen: set[int] = set()
    deadline = time.monotonic() + 20
    while len(seen) < 6 and time.monotonic() < deadline:
        ws = t.tree().workers(job.pid)
        assert len(ws) <= 2  # an exited (zombie) worker is never listed next to its successor
        assert all(w.main_pid == job.pid for w in ws)
        seen.update(w.pid for w in ws)
        time.sleep(0.05)
    assert len(seen) >= 6, f"only {len(seen)} distinct workers in 20 s: no respawn seen"


def test_target_exit_raises_target_gone():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t = Target(proc.pid, refresh_s=0.0)
        assert t.tree().get(proc.pid).role == "main" and t.alive()
        proc.kill()  # not reaped yet: a zombie, which has exited all the same
        assert wait_for(lambda: not t.alive(), timeout=10)
        with pytest.raises(TargetGone):
            t.tree()
        assert t.exit_reason == f"process {proc.pid} exited"
        proc.wait(10)
        assert not t.alive()
        with pytest.raises(TargetGone):
            t.tree()
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.slow
def test_torchrun_launcher_and_ranks(cpu_job):
    job = cpu_job(nproc=2, workers=1, slow="sleep", item_ms=20)
    t = Target(job.pid)
    tree = tree_with(t, workers=2, mains=2, timeout=60)
    root = tree.get(job.pid)
    assert root.role == "launcher" and root.rank is None
    mains = tree.mains()
    assert sorted(m.rank for m in mains) == [0, 1], tree
    for m in mains:
        assert m.ppid == job.pid
        (w,) = tree.workers(m.pid)
        assert w.rank == m.rank and w.main_pid == m.pid


# -- role rules on synthetic trees -----------------------------------------------------------
def raw(ppid, argv, name="python"):
    return _Raw(ppid, name, tuple(argv), 0.0)


def roles_of(root, info, ranks=None):
    ranks = {pid: (ranks or {}).get(pid) for pid in info}
    return assign_roles(root, info, ranks)


def test_single_process_with_deepspeed_flag_is_a_main():
    # Hugging Face Trainer's --deepspeed flag must not make the trainer a launcher.
    info = {10: raw(1, [PY, "train.py", "--deepspeed", "ds.json"]),
            11: raw(10, [PY, "train.py", "--deepspeed", "ds.json"], name="pt_data_worker")}
    assert roles_of(10, info) == {10: "main", 11: "worker"}


def test_torchrun_with_ranks_compile_workers_and_forkserver():
    run = [PY, "/usr/bin/torchrun", "--nproc-per-node=2", "train.py"]
    info = {
        100: raw(1, run),
        101: raw(100, [PY, "-u", "train.py"]),
        102: raw(100, [PY, "-u", "train.py"]),
        103: raw(101, [PY, "-u", "train.py"], name="pt_data_worker"),
        104: raw(101, [PY, "-m", "torch._inductor.compile_worker", "--pool=subprocess"]),  # inherits RANK
        105: raw(102, [PY, "-c", "from multiprocessing.forkserver import main; main(8, 9)"]),
        106: raw(105, [PY, "-c", "from multiprocessing.forkserver import main; main(8, 9)"], name="pt_data_worker"),
    }
    ranks = {101: 0, 102: 1, 103: 0, 104: 0, 105: 1, 106: 1}
    assert roles_of(100, info, ranks) == {100: "launcher", 101: "main", 102: "main", 103: "worker",
                                          104: "other", 105: "other", 106: "worker"}


def test_deepspeed_launcher_chain():
    info = {
        200: raw(1, [PY, "/usr/local/bin/deepspeed", "train.py"]),
        201: raw(200, [PY, "-u", "-m", "deepspeed.launcher.launch", "--world_info=xyz", "train.py"]),
        202: raw(201, [PY, "-u", "train.py", "--local_rank=0"]),
        203: raw(201, [PY, "-u", "train.py", "--local_rank=1"]),
    }
    roles = roles_of(200, info, {202: 0, 203: 1})
    assert roles == {200: "launcher", 201: "launcher", 202: "main", 203: "main"}


def test_shell_wrapper_is_a_launcher():
    info = {300: raw(1, ["/bin/bash", "run.sh"], name="bash"),
            301: raw(300, [PY, "train.py"]),
            302: raw(301, [PY, "train.py"], name="pt_data_worker")}
    assert roles_of(300, info) == {300: "launcher", 301: "main", 302: "worker"}
    # The same wrapper with num_workers=0: its Python child is still the main.
    del info[302]
    assert roles_of(300, info) == {300: "launcher", 301: "main"}


def test_mp_spawn_parent_is_a_launcher_when_children_own_workers():
    spawn = [PY, "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=6, pipe_handle=11)",
             "--multiprocessing-fork"]
    info = {400: raw(1, [PY, "train_ddp.py"]),
            401: raw(400, [PY, "-c", "from multiprocessing.resource_tracker import main;main(5)"]),
            402: raw(400, spawn), 403: raw(400, spawn),
            404: raw(402, spawn, name="pt_data_worker"), 405: raw(403, spawn, name="pt_data_worker")}
    roles = roles_of(400, info)
    assert roles == {400: "launcher", 401: "other", 402: "main", 403: "main", 404: "worker", 405: "worker"}
    # mp.spawn passes the rank as an argument: the ranks are numbered in start order.
    info[402] = _Raw(400, "python", tuple(spawn), 2.0)
    info[403] = _Raw(400, "python", tuple(spawn), 1.0)
    assert start_order_ranks(info, roles, {}) == {403: 0, 402: 1}
    assert start_order_ranks(info, roles, {402: 0}) == {}  # real RANK variables win


def test_wrapper_children_are_not_numbered_by_start_order():
    info = {300: raw(1, ["/bin/bash", "run.sh"], name="bash"), 301: raw(300, [PY, "prep.py"]),
            302: raw(300, [PY, "train.py"])}
    roles = roles_of(300, info)
    assert roles == {300: "launcher", 301: "main", 302: "main"}
    assert start_order_ranks(info, roles, {}) == {}


def test_process_reparented_during_the_walk_gets_no_role():
    info = {600: raw(1, [PY, "train.py"]), 601: raw(600, [PY, "train.py"], name="pt_data_worker"),
            602: raw(1, [PY, "train.py"], name="pt_data_worker")}  # its parent exited: now init's
    assert roles_of(600, info) == {600: "main", 601: "worker"}


def test_old_torch_workers_inherit_pt_main_thread():
    argv = [PY, "train.py"]
    info = {500: raw(1, argv, name="pt_main_thread"), 501: raw(500, argv, name="pt_main_thread"),
            502: raw(500, [PY, "-m", "tensorboard"], name="pt_main_thread")}
    assert roles_of(500, info) == {500: "main", 501: "worker", 502: "other"}


@pytest.mark.parametrize("argv,expected", [
    (["torchrun", "--nproc-per-node=8", "train.py"], True),
    ([PY, "-u", "-m", "torch.distributed.run", "train.py"], True),
    ([PY, "-m", "torch.distributed.launch", "train.py"], True),
    ([PY, "/opt/conda/bin/accelerate", "launch", "train.py"], True),
    (["accelerate", "launch", "train.py"], True),
    ([PY, "/opt/conda/bin/accelerate", "env"], False),
    ([PY, "train.py", "--deepspeed", "cfg.json"], False),
    ([PY, "torchrun_notes.py"], False),
    ([], False),
    (["slurmstepd:", "[4242.0]"], True),  # Slurm's step daemon, retitled; srun's tasks are its children
    (["slurmstepd: [1234567.0]", "", "", ""], True),  # the title in argv[0], NUL-padded
    (["prterun", "-np", "2", "python", "t.py"], True),
    (["/opt/my tools/torchrun", "t.py"], True),  # a path with a space
    (["/usr/lib/x86_64-linux-gnu/openmpi/bin/orted", "-mca", "ess", "env"], True),
    (["prted", "--leave-session-attached"], True),
    (["/opt/intel/mpi/bin/hydra_pmi_proxy", "--control-port", "n1:3456"], True),
    (["slurmstepd_notes.sh"], False),
])
def test_launcher_command_lines(argv, expected):
    assert _is_launcher_cmd(tuple(argv)) is expected


def test_unknown_pid_raises_at_construction():
    with pytest.raises(psutil.NoSuchProcess):
        Target(2**22 + 12345)



def test_descendants_from_children_files_match_psutil():
    """The kernel's per-thread children lists find the same processes as psutil's full /proc scan,
    grandchildren and children forked by a non-main thread included."""
    code = ("import subprocess, sys, threading, time\n"
            "sleep = [sys.executable, '-c', 'import time; time.sleep(60)']\n"
            "kid = subprocess.Popen([sys.executable, '-c', "
            "'import subprocess, sys, time; subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(60)\"]); time.sleep(60)'])\n"
            "threading.Thread(target=lambda: subprocess.Popen(sleep)).start()\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        want = wait_for(lambda: {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
                        if len(psutil.Process(proc.pid).children(recursive=True)) >= 3 else None)
        assert want and len(want) == 3
        if not os.path.exists(f"/proc/{proc.pid}/task/{proc.pid}/children"):
            pytest.skip("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
        target = Target(proc.pid, refresh_s=0.0)
        got = list(target._descendant_stats(read_stat(proc.pid)))
        assert got[0] == proc.pid and set(got[1:]) == want and len(got) == len(want) + 1
        assert set(target.tree().pids()) == want | {proc.pid}
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait(10)


def test_psutil_children_read_again_when_its_scan_races_an_exiting_process():
    """psutil raises IndexError when a stat file it scans reads back empty (a process exiting):
    the fallback walk reads again, and gives the target alone rather than fail the walk."""
    from gpuwatch.collectors.target import _psutil_children

    class Racy:
        def __init__(self, fails: int) -> None:
            self.fails = fails

        def children(self, recursive: bool = False) -> list[str]:
            if self.fails:
                self.fails -= 1
                raise IndexError("list index out of range")
            return ["child"]

    assert _psutil_children(Racy(fails=2)) == ["child"]
    assert _psutil_children(Racy(fails=5)) == []


def test_a_walk_that_finds_the_same_processes_keeps_the_tree_and_a_new_child_changes_it():
    """The roles and nodes follow from the processes' identities and ranks alone: an unchanged walk
    returns the same tree; a new child is seen by the next walk."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        wait_for(lambda: read_stat(proc.pid) and "python" in " ".join(psutil.Process(proc.pid).cmdline()))
        target = Target(proc.pid, refresh_s=0.0)
        first = target.tree()
        assert target.tree().nodes is first.nodes
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # not under the target
        try:
            assert target.tree().nodes is first.nodes
        finally:
            kid.kill()
            kid.wait(10)
    finally:
        proc.kill()
        proc.wait(10)
    # A parent of its own (not this test process, whose children include the shared CPU job and
    # its respawning workers): it starts one child once the go file appears.
    with tempfile.TemporaryDirectory() as d:
        go = os.path.join(d, "go")
        code = ("import os, subprocess, sys, time\n"
                f"while not os.path.exists({go!r}): time.sleep(0.02)\n"
                "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                "time.sleep(60)\n")
        parent = subprocess.Popen([sys.executable, "-c", code])
        try:
            wait_for(lambda: read_stat(parent.pid) and "python" in " ".join(psutil.Process(parent.pid).cmdline()))
            respawned = Target(parent.pid, refresh_s=0.0)
            before = respawned.tree()
            assert set(before.pids()) == {parent.pid}
            open(go, "w").close()
            after = wait_for(lambda: t if len((t := respawned.tree()).pids()) == 2 else None)
            kids = psutil.Process(parent.pid).children()
            assert after.nodes is not before.nodes and set(after.pids()) == {parent.pid} | {k.pid for k in kids}
        finally:
            for k in psutil.Process(parent.pid).children(recursive=True):
                k.kill()
            parent.kill()
            parent.wait(10)


def test_a_walk_keeps_the_tree_of_ranks_numbered_by_start_order(monkeypatch):
    """start_order_ranks adds ranks to the walk's own: the next walk, which reads the same ranks
    before them, still finds an unchanged tree (mp.spawn children)."""
    import gpuwatch.collectors.target as target_mod

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        wait_for(lambda: read_stat(proc.pid) and "python" in " ".join(psutil.Process(proc.pid).cmdline()))
        monkeypatch.setattr(target_mod, "start_order_ranks", lambda info, roles, ranks: {proc.pid: 0})
        target = Target(proc.pid, refresh_s=0.0)
        first = target.tree()
        assert target.tree().nodes is first.nodes
    finally:
        proc.kill()
        proc.wait(10)


def test_a_python_parents_other_children_that_train_nothing_stay_outside():
    """A Python parent that forked the target and other children which are no training processes
    (no DataLoader workers, no rank): the target is not one rank among others, so the walk keeps to
    the target's own tree (the parent's other children are not the job's)."""
    code = ("import os, time\n"
            "kids = [os.fork() for _ in range(1)]\n"
            "if 0 in kids: time.sleep(60); os._exit(0)\n"
            "k2 = os.fork()\n"
            "if k2 == 0: time.sleep(60); os._exit(0)\n"
            "print(kids[0], k2, flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        first, second = map(int, proc.stdout.readline().split())
        tree = Target(first).tree()
        assert tree.root == first and {n.pid for n in tree.nodes} == {first}
        assert tree.get(first).role == "main"
    finally:
        for p in psutil.Process(proc.pid).children():
            p.kill()
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize(("parent", "child", "expected"), [
    ([PY, "t.py"], [PY, "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=4, pipe_handle=6)",
                    "--multiprocessing-fork"], True),
    ([PY, "t.py"], [PY, "t.py"], True),  # a fork keeps its parent's command line
    ([PY, "notebook.py"], [PY, "t.py"], False),
])
def test_multiprocessing_children(parent, child, expected):
    assert mp_child(tuple(child), tuple(parent)) is expected


def test_siblings_connected_over_tcp_are_ranks_and_the_others_are_not():
    """c10d's store and gloo connect every rank to the others over TCP; forked experiments of a sweep
    do not talk to each other. Two children connected to each other, a third alone."""
    code = ("import os, socket, time\n"
            "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(); port = srv.getsockname()[1]\n"
            "a = os.fork()\n"
            "if a == 0:\n    conn, _ = srv.accept(); time.sleep(60); os._exit(0)\n"
            "b = os.fork()\n"
            "if b == 0:\n    srv.close(); c = socket.create_connection(('127.0.0.1', port)); time.sleep(60); os._exit(0)\n"
            "c = os.fork()\n"
            "if c == 0:\n    srv.close(); time.sleep(60); os._exit(0)\n"
            "srv.close(); print(a, b, c, flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                                                                    "MASTER_ADDR", "MASTER_PORT")})
    try:
        a, b, c = map(int, proc.stdout.readline().split())
        assert wait_for(lambda: distributed(a, proc.pid), timeout=10) and distributed(b, proc.pid)
        assert not distributed(c, proc.pid)
    finally:
        for p in psutil.Process(proc.pid).children():
            p.kill()
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize("distributed_env", [True, False], ids=["ranks", "independent-tasks"])
def test_a_task_under_a_cluster_daemon_is_watched_with_its_siblings_only_when_they_are_ranks(distributed_env):
    """``srun python train.py``: each task is a child of Slurm's step daemon, which retitles itself
    ``slurmstepd: [job.step]`` (here a shell exec'd under that name stands in for it). Tasks with
    torch.distributed's variables (exported before srun) are ranks of one job: given one's PID, the
    walk starts at the daemon. Tasks without them (``srun -n 2`` of two seeds) stay apart."""
    rank = "import time; time.sleep(60)"
    # each task with the rank srun gives it (SLURM_PROCID), as srun's tasks have no RANK of their own
    script = f"SLURM_PROCID=0 {sys.executable} -c '{rank}' & SLURM_PROCID=1 {sys.executable} -c '{rank}' & wait"
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    if distributed_env:
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
    proc = subprocess.Popen(["bash", "-c", f'exec -a "slurmstepd:" bash -c "{script}"'], env=env)
    try:
        def both_python() -> bool:  # each task forked by the shell, then exec'd into Python
            kids = psutil.Process(proc.pid).children()
            return len(kids) == 2 and all(k.cmdline()[:1] == [sys.executable] for k in kids)

        assert wait_for(both_python, timeout=30)
        first = min(c.pid for c in psutil.Process(proc.pid).children())
        tree = Target(first).tree()
        assert tree.root == first and tree.get(first).role == "main"
        if distributed_env:
            assert tree.get(proc.pid).role == "launcher" and sorted(m.rank for m in tree.mains()) == [0, 1]
        else:
            assert tree.get(proc.pid) is None and [n.pid for n in tree.nodes] == [first]
    finally:
        for p in psutil.Process(proc.pid).children():
            p.kill()
        proc.kill()
        proc.wait(10)


def test_a_child_that_execs_another_program_is_read_again():
    """A wrapper (``sh -c '...; exec python train.py'``) keeps its PID and start time through the
    exec: the walk's cache kept the shell's command line for the Python process that replaced it."""
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen(['sh', '-c', 'sleep 3; exec ' + sys.executable + ' -c \"import time; time.sleep(60)\"'])\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        kids = wait_for(lambda: psutil.Process(proc.pid).children() or None)
        target = Target(proc.pid, refresh_s=0.0)

        def child():  # noqa: ANN202
            return next((n for n in target.tree().nodes if n.pid == kids[0].pid), None)

        # the child reads as the shell once its fork has exec'd sh (a moment after Popen, longer on a busy
        # host: CI once read the forked Python's command line here)
        shell = wait_for(lambda: (n := child()) is not None and n.cmdline.startswith("sh ") and n, timeout=10.0)
        assert shell, child()
        after = wait_for(lambda: (n := child()) is not None and n.name != "sh" and n, timeout=10.0)
        assert after and after.cmdline.startswith(sys.executable), after
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait(10)
