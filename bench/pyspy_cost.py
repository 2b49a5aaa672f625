"""py-spy's own CPU per ``dump --json --nonblocking``, split into what it goes to.

Every dump is a new py-spy process that learns the target from nothing: it starts (exec, the Rust
runtime, argument parsing), reads /proc/PID/maps, parses the target Python's ELF symbol tables (the
executable's, and libpython's for a Python built shared), compiles a regex, finds and checks the
interpreter, then walks the threads' stacks and looks their names up in the ``threading`` module.
py-spy 0.4.3's ``dump`` keeps nothing between runs (no library; ``--subprocesses`` starts over for
each child and is ignored with ``--json``), so the split says which of those the target decides.
``record`` is the one mode that attaches once and samples many times, but it writes its samples only
when it ends, without py-spy's idle flag per sample (speedscope: each thread's stacks in order, one
weight each): what a sample costs there is measured too (``--record-s``), as the price of a design
that would trade freshness and the idle flag for fewer attaches. The CPU of each py-spy run is its own user + system
time, from os.wait4 as it is reaped; the variants alternate, round by round:

- start-up: ``py-spy --version`` (exec, the runtime, argument parsing);
- per line of /proc/PID/maps: a bare Python (the job's executable, nothing imported) holding 0 and
  ``--extra-maps`` extra mappings, dumped alike; the slope between the two;
- attaching: the bare Python's dump, less start-up and its map lines at that slope (the ELF symbol
  tables, the regex, finding the interpreter, a one-thread stack);
- the job's own: what a dump of the job costs beyond attaching and its map lines (its threads,
  their stacks, the modules walked for thread names);
- a sample inside ``record``: ``py-spy record --idle --nonblocking --rate 2`` on the main process for
  ``--record-s`` seconds and for half of that; the difference over the samples between them.

The facts that set those parts are printed beside them: map lines, threads, the Python executable
and libpython with their symbol and relocation counts.

    python -m bench.pyspy_cost --device cuda --rounds 30 --out DIR    # starts the steady job
    python -m bench.pyspy_cost --pid 1234 --rounds 30 --out DIR       # a running job
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
from collections.abc import Sequence

import psutil

if __package__ in (None, ""):  # run as a file: make `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import observe

EXTRA_MAPS = 3000
"""Extra mappings the second bare Python holds: about the gap between a bare Python (~60 map
lines) and a CUDA training process (thousands)."""

HOLD_MAPS = """
import mmap, sys, time
n = int(sys.argv[1])
# alternate protections so that neighbouring mappings never merge into one map line
held = [mmap.mmap(-1, 4096, prot=mmap.PROT_READ if i % 2 else mmap.PROT_READ | mmap.PROT_WRITE) for i in range(n)]
print("ready", flush=True)
sys.stdin.read()
"""
"""The bare Python: holds N mappings until its stdin closes."""

ELF_COUNTED = {".symtab": "symtab", ".dynsym": "dynsym", ".rela.dyn": "rela_dyn"}
"""Sections whose entries py-spy's ELF parse walks (goblin reads the symbol tables and relocations;
py-spy hashes every symbol's name)."""


def elf_counts(path: str) -> dict[str, int] | None:
    """Entries of the symbol tables and dynamic relocations of a 64-bit little-endian ELF file,
    from its section headers; None when the file is not one or cannot be read.

    Hand-written (two struct layouts) rather than pyelftools: the benchmark runs on the device image,
    which has no ELF library, and only the section headers are needed."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
            if shentsize < 64 or not 0 < shnum < 65536 or shstrndx >= shnum:
                return None
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            if len(table) < shentsize * shnum:
                return None
            sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
            names_at, names_size = sections[shstrndx][4], sections[shstrndx][5]
            f.seek(names_at)
            names = f.read(names_size)
    except OSError:
        return None
    counts = {key: 0 for key in ELF_COUNTED.values()}
    for name_off, _type, _flags, _addr, _off, size, _link, _info, _align, entsize in sections:
        name = names[name_off:names.find(b"\0", name_off)].decode("ascii", "replace")
        if name in ELF_COUNTED and entsize:
            counts[ELF_COUNTED[name]] = size // entsize
    return counts


def target_facts(pid: int) -> dict[str, object]:
    """What sets a dump's cost in the target: map lines, threads, its Python's ELF files."""
    with open(f"/proc/{pid}/maps", "rb") as f:
        maps = f.read().splitlines()
    exe = os.readlink(f"/proc/{pid}/exe")
    libpython = next((line.split(None, 5)[5].decode("utf-8", "replace") for line in maps
                      if len(line.split(None, 5)) == 6 and b"/libpython" in line.split(None, 5)[5]), None)
    return {
        "pid": pid, "map_lines": len(maps), "threads": len(os.listdir(f"/proc/{pid}/task")),
        "exe": exe, "exe_elf": elf_counts(f"/proc/{pid}/exe"),
        "libpython": libpython, "libpython_elf": elf_counts(f"/proc/{pid}/root{libpython}") if libpython else None,
    }


def run_cpu_ms(argv: Sequence[str]) -> float | None:
    """User + system CPU of one run of ``argv`` (its own, from wait4), or None when it failed."""
    env = {**os.environ, "RUST_BACKTRACE": "0"}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return None if status else (usage.ru_utime + usage.ru_stime) * 1e3


def measure(variants: dict[str, list[str]], rounds: int) -> dict[str, dict[str, object]]:
    """CPU of each variant's runs, alternating the order round by round."""
    runs: dict[str, list[float]] = {name: [] for name in variants}
    failed = dict.fromkeys(variants, 0)
    order = list(variants)
    for r in range(rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            ms = run_cpu_ms(variants[name])
            if ms is None:
                failed[name] += 1
            else:
                runs[name].append(ms)
    return {name: {"ms": v, "failed": failed[name], **_spread(v)} for name, v in runs.items()}


def _spread(v: Sequence[float]) -> dict[str, float | None]:
    if not v:
        return {"median": None, "p10": None, "p90": None}
    s = sorted(v)
    return {"median": statistics.median(s), "p10": s[len(s) // 10], "p90": s[(9 * len(s)) // 10]}


def hold_maps(python: str, n: int) -> subprocess.Popen:
    """A bare Python holding ``n`` extra mappings; ends when its stdin is closed."""
    proc = subprocess.Popen([python, "-S", "-c", HOLD_MAPS, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        raise RuntimeError(f"{python} could not hold {n} mappings")
    return proc


def split(results: dict[str, dict[str, object]], facts: dict[str, dict[str, object]], extra: int) -> dict[str, float]:
    """The parts of a dump of the job's main process, in ms of CPU (medians)."""
    med = {name: r["median"] for name, r in results.items()}
    lines0, lines1 = facts["bare"]["map_lines"], facts[f"bare+{extra}"]["map_lines"]
    per_line = (med[f"bare+{extra}"] - med["bare"]) / (lines1 - lines0)
    start = med["start-up"]
    attach = med["bare"] - start - lines0 * per_line
    maps = facts["main"]["map_lines"] * per_line
    return {"start-up": start, "attaching": attach, "maps": maps, "job": med["main"] - start - attach - maps,
            "per_map_line_us": per_line * 1e3}


RECORD_RATE = 2
"""Samples a second in the record runs: the main process's full dump rate (collectors/stacks.py)."""


def record_cost(pyspy: str, pid: int, seconds: float, rounds: int) -> dict[str, object]:
    """py-spy's CPU for ``record`` runs of ``seconds`` and ``seconds / 2`` on ``pid``, and per sample
    the difference over the samples between them (attaching once is in both, so it cancels)."""
    import json  # noqa: PLC0415 - only here
    import tempfile  # noqa: PLC0415

    def run(s: float) -> tuple[float | None, int]:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.json")
            ms = run_cpu_ms([pyspy, "record", "--pid", str(pid), "--nonblocking", "--idle", "--rate",
                             str(RECORD_RATE), "--duration", str(int(s)), "--format", "speedscope", "--output", out])
            try:
                with open(out) as f:
                    prof = json.load(f)["profiles"]
                n = max((len(p["samples"]) for p in prof), default=0)  # the busiest thread's samples
            except (OSError, ValueError, KeyError):
                n = 0
            return ms, n

    long, short = [], []
    for _ in range(rounds):
        long.append(run(seconds))
        short.append(run(seconds / 2))
    ok_l = [m for m, n in long if m is not None and n]
    ok_s = [m for m, n in short if m is not None and n]
    if not ok_l or not ok_s:
        return {"seconds": seconds, "failed": True}
    n_l = statistics.median(n for m, n in long if n)
    n_s = statistics.median(n for m, n in short if n)
    per = (statistics.median(ok_l) - statistics.median(ok_s)) / max(1.0, n_l - n_s)
    return {"seconds": seconds, "rate": RECORD_RATE, "rounds": rounds, "ms_long": ok_l, "ms_short": ok_s,
            "samples_long": n_l, "samples_short": n_s, "ms_per_sample": per,
            "ms_attach": statistics.median(ok_s) - n_s * per}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    observe.add_job_options(p, workers=8)
    p.add_argument("--pid", type=int, default=None, help="dump this running job instead of starting the steady job")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--extra-maps", type=int, default=EXTRA_MAPS)
    p.add_argument("--record-s", type=float, default=10.0,
                   help="seconds of the longer record run (0: no record runs)")
    p.add_argument("--record-rounds", type=int, default=3)
    p.add_argument("--out", required=True)
    ns = p.parse_args(argv)

    from gpuwatch.collectors.pyspy import find_pyspy  # noqa: PLC0415 - after sys.path

    pyspy = find_pyspy()
    if pyspy is None:
        print("pyspy_cost: py-spy not found (pip install py-spy)", file=sys.stderr)
        return 2
    os.makedirs(ns.out, exist_ok=True)
    job = None
    held: list[subprocess.Popen] = []
    try:
        if ns.pid is None:
            reader, job = observe.launch_job(ns)
            observe.wait_warm(reader, job, observe.warmup_s(ns))
            pid = job.pid
        else:
            pid = ns.pid
        workers = [c.pid for c in psutil.Process(pid).children()]
        python = os.readlink(f"/proc/{pid}/exe")
        held = [hold_maps(python, 0), hold_maps(python, ns.extra_maps)]
        pids = {"main": pid, "bare": held[0].pid, f"bare+{ns.extra_maps}": held[1].pid}
        if workers:
            pids["worker"] = workers[0]
        facts = {name: target_facts(p) for name, p in pids.items()}
        dump = [pyspy, "dump", "--json", "--nonblocking", "--pid"]
        variants = {"start-up": [pyspy, "--version"], **{name: dump + [str(p)] for name, p in pids.items()}}
        results = measure(variants, ns.rounds)
        record = record_cost(pyspy, pid, ns.record_s, ns.record_rounds) if ns.record_s > 0 else None
    finally:
        for proc in held:
            proc.stdin.close()
            proc.wait(5)
        if job is not None:
            observe.stop_job(job)
    parts = split(results, facts, ns.extra_maps)

    md = [observe.table(
        ("py-spy run", "runs", "failed", "median ms CPU", "p10", "p90", "map lines", "threads"),
        [(name, len(r["ms"]), r["failed"], *(f"{r[k]:.2f}" if r[k] is not None else "?" for k in ("median", "p10", "p90")),
          facts.get(name, {}).get("map_lines", ""), facts.get(name, {}).get("threads", ""))
         for name, r in results.items()])]
    main_facts = facts["main"]
    md.append(f"\nThe job's Python: {main_facts['exe']} (ELF {main_facts['exe_elf']}); libpython: "
              f"{main_facts['libpython'] or 'none (built static)'}"
              + (f" (ELF {main_facts['libpython_elf']})" if main_facts["libpython"] else "") + ".\n")
    md.append(f"A dump of the main process, {results['main']['median']:.2f} ms of py-spy's CPU (medians): start-up "
              f"{parts['start-up']:.2f}, attaching (ELF symbols, regex, interpreter; a bare Python's dump less start-up "
              f"and maps) {parts['attaching']:.2f}, /proc/PID/maps {parts['maps']:.2f} ({main_facts['map_lines']} lines "
              f"at {parts['per_map_line_us']:.2f} us a line), the job's own threads and stacks {parts['job']:.2f}.\n")
    if record and not record.get("failed"):
        md.append(f"In one `record` run ({RECORD_RATE} samples a second, idle threads included): "
                  f"{record['ms_per_sample']:.2f} ms of py-spy's CPU a sample, {record['ms_attach']:.2f} ms to "
                  f"attach once (medians of {record['rounds']} runs of {record['seconds']:.0f} s and half that).\n")
    elif record:
        md.append("The `record` runs failed or wrote no samples.\n")
    result = {"schema": 1, "bench": "pyspy_cost", "device": ns.device if ns.pid is None else None, "pid_given": ns.pid is not None,
              "rounds": ns.rounds, "extra_maps": ns.extra_maps, "pyspy": pyspy, "machine": observe.machine(),
              "facts": facts, "runs": results, "split_ms": parts, "record": record}
    observe.write_results(ns.out, "pyspy_cost", result, "py-spy's own CPU per dump, and where it goes", "\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
