"""On-CPU time of each phase of py-spy 0.4.3's `dump`, from uprobes on its functions and the
scheduler's switch events (README.md beside this file says how the perf data was recorded).

    perf script -i probes.data -F tid,time,event,trace > probes.txt
    python3 uprobe_phases.py probes.txt

Each py-spy process's events are put on its own on-CPU clock (time between sched_switch out and
back in is left out), so a phase is CPU time even on a busy machine. A uprobe hit costs ~1-2 us,
so phases with many calls read a little high; the totals match the wait4 CPU to ~0.3 ms."""
import re, sys, statistics
from collections import defaultdict
lines = open(sys.argv[1]).read().splitlines()
# pass 1: which tids are py-spy
spy = set()
for ln in lines:
    if "sched_process_exec" in ln or "probe_py:main:" in ln:
        spy.add(int(ln.split()[0]))
oncpu = {}      # tid -> on-cpu accumulated seconds up to last event
state = {}      # tid -> (running?, since)
def cpu_at(tid, t):
    run, since, acc = state.get(tid, (True, t, 0.0))
    return acc + (t - since if run else 0.0)
events = defaultdict(list)  # tid -> [(name, cpu_time)]
for ln in lines:
    parts = ln.split()
    tid = int(parts[0]); t = float(parts[1].rstrip(":")); ev = parts[2].rstrip(":")
    if ev == "sched:sched_switch":
        m = re.search(r"prev_pid=(\d+).*next_pid=(\d+)", ln)
        prev, nxt = int(m.group(1)), int(m.group(2))
        if prev in spy:
            state[prev] = (False, t, cpu_at(prev, t))
        if nxt in spy:
            run, since, acc = state.get(nxt, (False, t, 0.0))
            state[nxt] = (True, t, acc)
        continue
    if tid not in spy:
        continue
    if tid not in state:
        state[tid] = (True, t, 0.0)
    events[tid].append((ev.split(":")[1], cpu_at(tid, t)))
def first(evs, name, after=-1.0):
    for n, c in evs:
        if n == name and c >= after: return c
    return None
def total(evs, name):
    s = 0.0; start = None
    for n, c in evs:
        if n == name: start = c
        elif n == name + "_ret__return" and start is not None: s += c - start; start = None
    return s
rows = defaultdict(list)
for tid, evs in events.items():
    names = [n for n, _ in evs]
    if "sched_process_exit" not in names or "main" not in names or "main_ret__return" not in names or "gst_ret__return" not in names: continue
    t0 = evs[0][1]  # exec
    main = first(evs, "main"); exit_ = first(evs, "sched_process_exit")
    pinfo = first(evs, "pinfo"); pinfo_r = first(evs, "pinfo_ret__return")
    spynew = first(evs, "spynew"); spynew_r = first(evs, "spynew_ret__return")
    gst = first(evs, "gst"); gst_r = first(evs, "gst_ret__return")
    mainr = first(evs, "main_ret__return")
    # parse_binary calls: first exe, second libpython
    parses = []; st = None
    for n, c in evs:
        if n == "parse": st = c
        elif n == "parse_ret__return": parses.append(c - st)
    maps = total(evs, "maps"); pyver = total(evs, "pyver") + total(evs, "pyver2"); thr = total(evs, "threads")
    r = rows
    r["exec->main (startup)"].append(main - t0)
    r["main->PythonSpy::new (args)"].append(spynew - main)
    r["/proc/PID/maps read+parse"].append(maps)
    r["ELF parse: exe"].append(parses[0] if parses else 0)
    r["ELF parse: libpython"].append(parses[1] if len(parses) > 1 else 0)
    r["rest of ProcessInfo::new (regex, ...)"].append((pinfo_r - pinfo) - maps - sum(parses))
    r["version detection"].append(pyver)
    r["rest of PythonSpy::new (interp, ...)"].append((spynew_r - spynew) - (pinfo_r - pinfo) - pyver)
    r["get_stack_traces: total"].append(gst_r - gst)
    r["  of which /proc/PID/task list"].append(thr)
    r["after traces -> main return (JSON print)"].append(mainr - gst_r)
    r["main return -> exit (teardown)"].append(exit_ - mainr)
    r["TOTAL exec->exit"].append(exit_ - t0)
print(f"n={len(r['TOTAL exec->exit'])} dumps; on-CPU ms, median [p10..p90]")
for k, v in r.items():
    v = sorted(x * 1000 for x in v); n = len(v)
    print(f"  {k:44s} {statistics.median(v):6.3f}  [{v[n//10]:.3f}..{v[(9*n)//10]:.3f}]")
# extra: regex compiles and thread-name lookup, summed per dump
ex = defaultdict(list)
for tid, evs in events.items():
    names = [n for n, _ in evs]
    if "sched_process_exit" not in names: continue
    ex["Regex::new (all calls)"].append(total(evs, "rxnew")); ex["thread_name_lookup"].append(total(evs, "tnl"))
for k, v in ex.items():
    v = sorted(x * 1000 for x in v); n = len(v)
    print(f"  {k:44s} {statistics.median(v):6.3f}  [{v[n//10]:.3f}..{v[(9*n)//10]:.3f}]")
