"""Checks on the host side: workers vs cores, swap, CPU quota, network storage, NUMA, stack access.

Pure functions over frames, verdicts and the environment probe; each returns a CheckResult.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuwatch.collectors.environment import Environment
from gpuwatch.diagnosis.thresholds import (
    CG_THROTTLED,
    FEW_WORKERS_RATIO,
    JOB_CPU_SATURATED,
    NETWORK_SHARE,
    READS_BPS,
    RUN_DELAY,
    RUN_INPUT_SHARE,
    RUN_WARNING_SHARE,
    SWAP_FAIL_SHARE,
    SWAP_IN_BPS,
    WORKER_D_SHARE,
)
from gpuwatch.diagnosis.evidence import count, sets_of
from gpuwatch.diagnosis.fix_gains import worker_target
from gpuwatch.diagnosis.host_signals import job_signals, queued_threads
from gpuwatch.diagnosis.phases import worker_sets
from gpuwatch.diagnosis.timeline import timeline
from gpuwatch.model.frame import Frame
from gpuwatch.model.host import HostSample
from gpuwatch.model.procs import NO_WORKER_SEEN, ROLE_MAIN, ROLE_WORKER, ProcsSample
from gpuwatch.model import stacks as lb
from gpuwatch.model.stacks import StackSample
from gpuwatch.model.values import Maybe, Unsupported, known
from gpuwatch.model.verdict import DECODE, IO, MORE_WORKERS, Verdict
from gpuwatch.report.checks_gpu import NO_JOB_GPU, target_gpus
from gpuwatch.report.model import FAIL, NOT_CHECKED, PASS, WARN, CheckResult
from gpuwatch.report.units import rate



def cpulist(cpus: Sequence[int]) -> str:
    """(0, 1, 2, 3, 8) -> "0-3,8", the kernel's notation."""
    out, run = [], []
    for c in sorted(set(cpus)):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def _env_part(env: Maybe[Environment], name: str) -> object:
    return env if isinstance(env, Unsupported) else getattr(env, name)


def _loader_sets(frames: Sequence[Frame]) -> tuple[int, ...]:
    """The loaders' worker sets (phases.worker_sets) at the tick with the most workers alive."""
    ticks = timeline(frames, None)
    if not ticks:
        return ()
    most = max(range(len(ticks)), key=lambda i: len(ticks[i].workers))
    return worker_sets(ticks, most)


def _loading(v: Verdict) -> bool:
    """The verdict is the input (disk or decode), not checkpoint saves, which the disk stage names too
    (run 25's checkpoint job, 2 idle workers, read "far fewer workers than cores while loading data
    held the GPU back 78% of the time" and "raise num_workers")."""
    saving = any(e.stage == IO and e.signal == "checkpoint" and e.supports for e in v.evidence)
    # A loop that transforms its own batches waits on that work, not on its workers: "raise
    # num_workers" beside "move these transforms out of the loop" told two stories (review 34).
    # Nor does the DataLoader's sampler, which runs in the training process (review 45).
    on_main = any(e.stage == DECODE and e.signal in ("loop_prep", "sampler") and e.supports for e in v.evidence)
    return v.stage in (IO, DECODE) and not saving and not on_main


def _more_workers_help(v: Verdict) -> bool:
    """A loading verdict whose fixes include more workers, or that carries no fix figures at all
    (recordings from before them). One whose wait is the workers' start-up proposes keeping them,
    not more of them: a Lightning job re-creating idle workers was told "raise num_workers towards 15"
    by this check beside its own stage's remedies, and more workers make each re-creation slower."""
    return not v.gains or any(g.fix == MORE_WORKERS for g in v.gains)


def check_workers(frames: Sequence[Frame], verdicts: Sequence[Verdict], env: Maybe[Environment]) -> CheckResult:
    title = "DataLoader workers fit the CPUs"
    procs = [f.procs for f in frames if isinstance(f.procs, ProcsSample)]
    target = _env_part(env, "target")
    sets: tuple[int, ...] = ()
    if procs:
        workers = max(len(p.by_role(ROLE_WORKER)) for p in procs)
        mains = max(len(p.by_role(ROLE_MAIN)) for p in procs) or 1
        usable = procs[-1].usable_cpus
        if mains == 1:
            sets = _loader_sets(frames)
    elif not isinstance(target, Unsupported) and isinstance(target.affinity, tuple):  # type: ignore[union-attr]
        workers, mains, usable = target.workers, max(target.mains, 1), len(target.affinity)  # type: ignore[union-attr]
    else:
        why = next((f.procs.reason for f in reversed(frames) if isinstance(f.procs, Unsupported)), "no process data")
        return CheckResult("workers_vs_cores", title, NOT_CHECKED, why)
    quota = _cpu_quota(frames, env)
    cores = min(usable, quota) if quota is not None else usable
    where = count(usable, "usable CPU") + (f", a CPU quota of {quota:g} cores" if quota is not None else "")
    alive = count(workers, "DataLoader worker") if workers else NO_WORKER_SEEN
    if len(sets) >= 2:  # several sets live together (loaders, or passes that left theirs): num_workers is a set's
        alive += (f" in {sets_of(sets)} (each forked together, by a loader or an earlier pass over one "
                  "that left them alive)")
        workers = max(sets)
    counted = f"{alive} for {count(mains, 'training process', 'training processes')} on {where}"
    # PyTorch's own rule: the DataLoader warns when num_workers exceeds the CPUs the process may use
    # (torch/utils/data/dataloader.py, _check_worker_number_rationality): one loader's workers, so
    # a validation loader's persistent set, idle while the training loader runs, is not added.
    if workers > cores:
        idle = _not_competing(frames, cores) if procs else None
        if idle is not None:
            return CheckResult("workers_vs_cores", title, PASS, f"more workers than cores ({counted}), but {idle}")
        # At most the CPUs, PyTorch's own bound: "about 1" (cores minus the training process) was
        # read as the advice for a job whose loop waited on its workers, where the training process
        # needs little of its core. Several training processes share the CPUs: each loader's share,
        # so that the workers together fit (the check counts them together).
        if mains == 1:
            fix = (f"lower num_workers to at most {cores:g} (the CPUs it may use{_own_core(cores, mains)}), "
                   "or give the job more CPUs")
        elif cores >= mains:  # the processes share the CPUs: each loader its share, so the total fits
            fix = (f"lower num_workers to at most {int(cores // mains)} in each of the {mains} training processes, "
                   "which share the CPUs, or give the job more CPUs")
        else:  # no num_workers fits: the training processes alone outnumber the CPUs (review 31)
            cpus = f"{cores:g} CPU" + ("" if cores == 1 else "s")
            fix = (f"the {mains} training processes alone outnumber the {cpus} they may use: give the job "
                   "more CPUs, or run fewer processes on this host")
        return CheckResult("workers_vs_cores", title, WARN, f"more workers than cores: {counted}", fix)
    n = len(verdicts) or 1
    input_share = sum(1 for v in verdicts if _loading(v)) / n  # said: the time loading held the job back
    helped = sum(1 for v in verdicts if _loading(v) and _more_workers_help(v)) / n  # judged: where more would help
    if workers * FEW_WORKERS_RATIO <= cores and helped >= RUN_INPUT_SHARE and worker_target(cores, mains) > workers:
        return CheckResult("workers_vs_cores", title, WARN,
                           f"far fewer workers than cores while loading data held the job back "
                           f"{input_share:.0%} of the time: {counted}",
                           f"raise num_workers toward {worker_target(cores, mains)}")
    return CheckResult("workers_vs_cores", title, PASS, counted)


def _not_competing(frames: Sequence[Frame], cores: float) -> str | None:
    """Why more workers than cores cost nothing here, or None where they may: no thread of the job
    queued for a CPU (under RUN_DELAY threads ready to run with no CPU free, on average) and the
    workers together used under JOB_CPU_SATURATED of the CPUs, medians over the run. PyTorch's rule
    (one core a worker) assumes workers that compute; workers that wait on a sleep, a lock or a
    remote service take no CPU from anyone, and "lower num_workers" for a job waiting on such
    workers (two CPU ranks with 4 workers at 0.01 core each on 2 CPUs) would slow it."""
    job = job_signals(frames, None)
    queued = queued_threads(job)
    if not job.seen or queued is None or job.workers_cpu is None:
        return None
    if queued >= RUN_DELAY or job.workers_cpu >= JOB_CPU_SATURATED * cores:
        return None
    # Nor where they compete part of the run: the middle readings pass a job that queued for a CPU
    # in a fifth of its ticks or more (review 31)
    ticks = [queued_threads(job_signals([f], None)) for f in frames]
    busy = sum(1 for q in ticks if q is not None and q >= RUN_DELAY)
    if busy >= RUN_WARNING_SHARE * len(frames):
        return None
    return (f"they do not compete for them: the workers use {job.workers_cpu:.2f} core together (under "
            f"{JOB_CPU_SATURATED:.0%} of the CPUs), and {queued:.2f} of the job's threads were ready to run "
            f"with no CPU free (under {RUN_DELAY:.2f}; {busy} of {len(frames)} ticks at or over it); middle "
            "readings over the run")


def _own_core(cores: float, mains: int) -> str:
    """"; N leaves each training process a core of its own", where there are cores to leave: on one
    CPU the clause said 1 worker left the trainer a core of its own (trial 23, taskset -c 0)."""
    left = worker_target(cores, mains)
    if left is None or cores - left < mains:
        return ""
    return f"; {left} leaves each training process a core of its own"


def _cpu_quota(frames: Sequence[Frame], env: Maybe[Environment]) -> float | None:
    for f in reversed(frames):
        if isinstance(f.host, HostSample) and not isinstance(f.host.cgroup, Unsupported) and known(f.host.cgroup.quota_cores):
            return float(f.host.cgroup.quota_cores)  # type: ignore[arg-type]
    cg = _env_part(env, "cgroup")
    if not isinstance(cg, Unsupported) and isinstance(cg.cpu_limit_cores, float):  # type: ignore[union-attr]
        return cg.cpu_limit_cores  # type: ignore[union-attr]
    return None


def check_swap(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "No swapping"
    hosts = [f.host for f in frames if isinstance(f.host, HostSample)]
    if not hosts:
        why = next((f.host.reason for f in reversed(frames) if isinstance(f.host, Unsupported)), "no host data")
        return CheckResult("swap", title, NOT_CHECKED, why)
    active = [h for h in hosts if h.swap_in_bps + h.swap_out_bps >= SWAP_IN_BPS]
    if not active:
        used = hosts[-1].swap_used
        return CheckResult("swap", title, PASS, f"no swap traffic over {len(hosts)} ticks ({used / 2**20:.0f} MiB parked in swap)")
    peak = max(h.swap_in_bps + h.swap_out_bps for h in active)
    share = len(active) / len(hosts)
    return CheckResult("swap", title, FAIL if share >= SWAP_FAIL_SHARE else WARN,
                       f"swapping in {len(active)} of {len(hosts)} ticks, up to {rate(peak, 1)}",
                       "the host is short of memory: fewer workers or prefetch_factor, smaller shuffle buffers, "
                       "or more RAM")


def check_cpu_quota(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "Not held back by a cgroup CPU quota"
    cgs = [f.host.cgroup for f in frames if isinstance(f.host, HostSample) and not isinstance(f.host.cgroup, Unsupported)]
    if not cgs:
        why = next((f.host.cgroup.reason for f in reversed(frames) if isinstance(f.host, HostSample)
                    and isinstance(f.host.cgroup, Unsupported)), "no cgroup data in the frames")
        return CheckResult("cpu_quota", title, NOT_CHECKED, why)
    mean = sum(c.throttled_frac for c in cgs) / len(cgs)
    worst = max(c.throttled_frac for c in cgs)
    fix = "raise the container's CPU limit (cpu.max / --cpus) or run fewer workers"
    if mean >= CG_THROTTLED:
        return CheckResult("cpu_quota", title, FAIL, f"CPU-throttled {mean:.0%} of the time by the cgroup quota", fix)
    if worst >= CG_THROTTLED:
        return CheckResult("cpu_quota", title, WARN, f"CPU-throttled up to {worst:.0%} of a tick", fix)
    return CheckResult("cpu_quota", title, PASS, f"throttled {mean:.1%} of the time")


def _socket_reads(frames: Sequence[Frame]) -> tuple[int, int]:
    """(the samples reading data over a socket, all samples reading data) of the workers and the
    training process's own loading, as the diagnosis counts them (input_stages.network_reads)."""
    net = n = 0
    for f in frames:
        if not isinstance(f.stacks, StackSample):
            continue
        for t in f.stacks.threads:
            reading = ((t.role == lb.ROLE_WORKER and lb.activity(t.role, t.label, t.detail) == lb.W_IO)
                       or (t.role == lb.ROLE_MAIN_THREAD and t.label == lb.INLINE_LOAD))
            if reading:
                n += 1
                net += lb.on_network(t.detail)
    return net, n


def check_network_fs(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "Data on local storage"
    net, reads = _socket_reads(frames)
    if reads and net / reads >= NETWORK_SHARE:
        # The data comes from a server (review 41: beside "loading from a server or object store" this
        # check passed on the working directory's disk); partly, beside storage signs of the job's own
        # (D state, storage reads), as the verdict reads it (input_stages.socket_fed).
        job = job_signals(frames, None)
        said = f"{net} of the {count(reads, 'sample')} reading data were socket reads"
        if (job.worker_read_bps or 0.0) >= READS_BPS or (job.worker_d or 0.0) >= WORKER_D_SHARE:
            return CheckResult("network_fs", title, WARN, f"{said}, beside the job's own storage reads: the data comes "
                               "partly from a server", "cache what comes from the server on local storage")
        return CheckResult("network_fs", title, WARN, f"{said}: the data comes from a server or an object store",
                           "cache it on local storage, or fetch it in fewer, larger requests (shards)")
    seen: dict[tuple[str, str], tuple[str, str, bool]] = {}
    for f in frames:
        if not isinstance(f.disk, Unsupported):
            for loc in f.disk.locations:
                seen[(loc.kind, loc.mountpoint)] = (loc.fstype, loc.path, loc.network)
    storage = _env_part(env, "storage")
    if isinstance(storage, tuple):
        for s in storage:
            seen.setdefault((s.kind, s.mountpoint), (s.fstype, s.path, s.network))
    if not seen:
        reason = storage.reason if isinstance(storage, Unsupported) else "no storage location was found"
        return CheckResult("network_fs", title, NOT_CHECKED, reason)
    data = {k: v for k, v in seen.items() if k[0] == "data"}
    remote = {k: v for k, v in (data or seen).items() if v[2]}
    fix = ("copy the dataset to local disk (or node-local NVMe) first, or cache it; "
           "more workers and prefetch_factor hide some of the latency")
    if remote:
        (kind, mp), (fstype, path, _) = next(iter(remote.items()))
        what = "the data" if kind == "data" else "the working directory (no open data files were seen)"
        return CheckResult("network_fs", title, WARN, f"{what} is on a network file system: {fstype} at {mp} ({path})", fix)
    kinds = ", ".join(sorted({f"{v[0]} at {k[1]}" for k, v in (data or seen).items()}))
    if not data:  # the working directory says nothing of where the data is
        return CheckResult("network_fs", title, NOT_CHECKED, f"no data file was seen open (the working directory is "
                           f"on local storage: {kinds})")
    return CheckResult("network_fs", title, PASS, f"data on local storage: {kinds}")


def check_numa(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    title = "Job runs on the GPU's NUMA node"
    if isinstance(env, Unsupported):
        return CheckResult("numa", title, NOT_CHECKED, env.reason)
    if isinstance(env.gpus, Unsupported):  # no GPU seen, so no GPU's node to be on (trial 26: a PASS on a CPU host)
        return CheckResult("numa", title, NOT_CHECKED, env.gpus.reason)
    if isinstance(env.cpus.numa_nodes, tuple) and len(env.cpus.numa_nodes) == 1:
        return CheckResult("numa", title, PASS, "the host has one NUMA node: nothing to mismatch")
    idx = target_gpus(frames) or {g.index for g in env.gpus if g.used_by_target}
    gpus = [g for g in env.gpus if g.index in idx]
    if not gpus:
        return CheckResult("numa", title, NOT_CHECKED, NO_JOB_GPU)
    affinity = _affinity(frames, env)
    if affinity is None:
        return CheckResult("numa", title, NOT_CHECKED, "the job's CPU affinity is unreadable")
    node_cpus = dict(env.cpus.numa_nodes) if isinstance(env.cpus.numa_nodes, tuple) else {}
    results: list[tuple[str, str]] = []
    for g in gpus:
        if isinstance(g.numa_node, Unsupported):
            results.append((NOT_CHECKED, f"GPU {g.index}: {g.numa_node.reason}"))
            continue
        local = set(node_cpus.get(g.numa_node, ())) or set(g.local_cpus if isinstance(g.local_cpus, tuple) else ())
        if not local:
            results.append((NOT_CHECKED, f"GPU {g.index}: the CPUs of node {g.numa_node} are unknown"))
        elif not affinity & local:
            results.append((FAIL, f"GPU {g.index} is on node {g.numa_node} (CPUs {cpulist(sorted(local))}) but the job "
                                  f"runs only on CPUs {cpulist(sorted(affinity))}"))
        elif affinity - local:
            results.append((WARN, f"GPU {g.index} is on node {g.numa_node}; the job may also run on CPUs "
                                  f"{cpulist(sorted(affinity - local))} of other nodes (not pinned)"))
        else:
            results.append((PASS, f"GPU {g.index} and the job are both on node {g.numa_node}"))
    status = next(s for s in (FAIL, WARN, PASS, NOT_CHECKED) if any(r[0] == s for r in results))
    fix = None if status in (PASS, NOT_CHECKED) else (
        "pin each rank to its GPU's node: `numactl --cpunodebind=N --membind=N python train.py` "
        "(or taskset with the GPU's local CPUs)")
    return CheckResult("numa", title, status, "; ".join(r[1] for r in results), fix)


def _affinity(frames: Sequence[Frame], env: Environment) -> set[int] | None:
    if not isinstance(env.target, Unsupported) and isinstance(env.target.affinity, tuple):
        return set(env.target.affinity)
    for f in reversed(frames):
        if isinstance(f.procs, ProcsSample):
            mains = f.procs.by_role(ROLE_MAIN)
            if mains and mains[0].affinity:
                return set(mains[0].affinity)
    return None


def check_stacks(frames: Sequence[Frame], env: Maybe[Environment]) -> CheckResult:
    """Denied by ptrace: fail (a permission to fix). Turned off by the user: not checked. Any
    other reason (py-spy missing, not a Python process): warn, since the verdict is weaker without."""
    title = "Python stacks readable (py-spy)"
    ok = sum(1 for f in frames if isinstance(f.stacks, StackSample) and f.stacks.threads)
    ptrace = _env_part(env, "ptrace")
    if ok:
        return CheckResult("stacks", title, PASS, f"stacks in {ok} of {len(frames)} ticks")
    why_not = "without stacks the verdict cannot tell decode from I/O, or launch from sync"
    if not isinstance(ptrace, Unsupported) and not ptrace.allowed:  # type: ignore[union-attr]
        return CheckResult("stacks", title, FAIL, ptrace.reason, why_not)  # type: ignore[union-attr]
    reasons = [f.stacks.reason for f in frames if isinstance(f.stacks, Unsupported)]
    if not reasons:
        return CheckResult("stacks", title, NOT_CHECKED, "no stack samples were taken" if frames else "no frames")
    if "--no-stacks" in reasons[-1]:
        return CheckResult("stacks", title, NOT_CHECKED, reasons[-1])
    return CheckResult("stacks", title, WARN, reasons[-1])
