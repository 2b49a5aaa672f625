"""The ``gpuwatch`` command: watch a PID (TUI or --json), replay a recording, diagnose, demo.

Bad input gets one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import os
import sys

if os.path.basename(sys.argv[0]) == "gpuwatch":  # the console script: clean from its first instruction
    from gpuwatch.startup_heap import hold
    from gpuwatch.stopping import guard_startup

    guard_startup()
    hold()  # no garbage collection while modules load (gpuwatch/startup_heap.py)

import argparse  # noqa: E402 - after the signal guard
from collections.abc import Sequence  # noqa: E402

from gpuwatch.errors import EXIT_USAGE, UsageError  # noqa: E402
from gpuwatch.startup_heap import release  # noqa: E402
from gpuwatch.stopping import Stopped, exit_code, finish, raising_stop  # noqa: E402

SUBCOMMANDS = ("watch", "replay", "diagnose", "compare", "demo")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage + message; we want one line
        raise UsageError(message)


def _positive(name: str, lo: float, hi: float):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}") from None
        if not (lo <= v <= hi) or v != v:
            # .10g: plain digits up to ten of them ("10000000", where :g wrote "1e+07")
            raise argparse.ArgumentTypeError(f"{name} must be between {lo:.10g} and {hi:.10g}, not {text}")
        return v

    return parse


def _pid(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"--pid must be a process ID (a positive whole number), not {text!r}")
    v = int(text)
    if v <= 0 or v > 2**22:
        raise argparse.ArgumentTypeError(f"--pid {text} is not a valid process ID")
    return v


def _gpus(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise argparse.ArgumentTypeError(f"--gpu takes GPU indexes like 0 or 0,1, not {text!r}")
        out.append(int(part))
    return out


def _file(name: str):
    """A file name that names something: an empty one (``--record "$UNSET_VAR"``) would record
    nothing or read nothing without a word."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{name} needs a file name, not an empty one")
        return text

    return parse


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    if not port.isdigit() or not (0 < int(port) < 65536):
        raise argparse.ArgumentTypeError(f"--prometheus takes [HOST:]PORT with a port 1-65535, not {text!r}")
    return (host.strip("[]") or "127.0.0.1", int(port))


def _watch_options(p: argparse.ArgumentParser, pid_required: bool) -> None:
    p.add_argument("--pid", type=_pid, required=pid_required, help="PID of the training process (or its launcher)")
    p.add_argument("--interval", type=_positive("--interval", 0.2, 60), default=1.0,
                   help="seconds between frames (default 1)")
    p.add_argument("--gpu", type=_gpus, default=None, metavar="IDX[,IDX]",
                   help="watch these GPU indexes (default: the GPUs the job uses)")
    p.add_argument("--stack-rate", type=_positive("--stack-rate", 0, 50), default=None, metavar="HZ",
                   help="py-spy dumps per second of each training process (0 turns stacks off)")
    p.add_argument("--no-stacks", action="store_true", help="do not sample stacks with py-spy")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpuwatch", description="What is holding your GPU back? Watch a PyTorch job from outside.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    w = sub.add_parser("watch", help="watch a running job (the default command)")
    _watch_options(w, pid_required=True)
    w.add_argument("--json", action="store_true", help="stream one JSON object per tick instead of the TUI")
    w.add_argument("--duration", type=_positive("--duration", 0.1, 10**7), default=None, metavar="S",
                   help="stop after S seconds")
    w.add_argument("--record", type=_file("--record"), metavar="FILE", default=None,
                   help="write every frame to FILE (JSONL; gzip when FILE ends in .gz); an existing FILE is refused unless --force")
    w.add_argument("--force", action="store_true", help="let --record overwrite an existing file")
    w.add_argument("--prometheus", type=_listen, default=None, metavar="[HOST:]PORT",
                   help="serve metrics for Prometheus (binds 127.0.0.1 unless HOST is given)")

    r = sub.add_parser("replay", help="replay a recording through the same pipeline")
    r.add_argument("file", type=_file("replay"), metavar="FILE", help="a recording written by --record (JSONL, gzip-compressed or not)")
    r.add_argument("--speed", type=_positive("--speed", 0, 1000), default=1.0,
                   help="playback speed (0: as fast as possible)")
    r.add_argument("--json", action="store_true", help="print the ticks as JSON instead of the TUI")

    d = sub.add_parser("diagnose", help="watch for a while, then print a report")
    _watch_options(d, pid_required=False)
    d.add_argument("--replay", type=_file("--replay"), metavar="FILE", default=None, help="diagnose a recording instead of a live job")
    d.add_argument("--duration", type=_positive("--duration", 1, 86400), default=None, metavar="S",
                   help="seconds to watch the job (default 60); with --replay, diagnose the recording's first S "
                        "seconds (default: all of it)")
    d.add_argument("--format", choices=("md", "json", "html"), default="md",
                   help="md (default), json for tools, html: one self-contained file with charts")
    d.add_argument("-o", "--output", type=_file("-o"), metavar="FILE", default=None,
                   help="write the report to FILE (an existing FILE is refused unless --force)")
    d.add_argument("--force", action="store_true", help="let -o overwrite an existing file")

    c = sub.add_parser("compare", help="what changed between two runs (recordings or JSON reports)")
    c.add_argument("before", type=_file("compare"), metavar="BEFORE", help="recording or `diagnose --format json` report of the run before")
    c.add_argument("after", type=_file("compare"), metavar="AFTER", help="the same, after the fix")
    c.add_argument("--format", choices=("text", "md", "json", "html"), default="text",
                   help="text (default), md, json for tools, html: one self-contained file with both runs' charts")
    c.add_argument("-o", "--output", type=_file("-o"), metavar="FILE", default=None,
                   help="write to FILE (an existing FILE is refused unless --force)")
    c.add_argument("--force", action="store_true", help="let -o overwrite an existing file")

    m = sub.add_parser("demo", help="start a small bundled training job and watch it")
    m.add_argument("--json", action="store_true", help="stream one JSON object per tick instead of the TUI")
    m.add_argument("--duration", type=_positive("--duration", 1, 86400), default=None, metavar="S",
                   help="stop the demo after S seconds")
    m.add_argument("--cpu", action="store_true", help="run the demo job on the CPU even if a GPU is present")
    return p


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    argv = list(argv)
    if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
        raise UsageError(_unknown_command(argv[0]))
    if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "watch")
    if argv == ["--version"]:
        from gpuwatch import __version__

        print(f"gpuwatch {__version__}")
        raise SystemExit(0)
    ns = build_parser().parse_args(argv)
    if ns.command is None:
        raise UsageError("give --pid PID, or one of: replay, diagnose, compare, demo (see gpuwatch --help)")
    if ns.command == "diagnose" and (ns.pid is None) == (ns.replay is None):
        raise UsageError("diagnose takes either --pid PID or --replay FILE")
    if ns.command == "diagnose" and ns.pid is not None and ns.duration is None:
        ns.duration = DIAGNOSE_S
    return ns


DIAGNOSE_S = 60.0
"""How long ``diagnose --pid`` watches without --duration: a minute holds a few epochs' worth of
steps on most jobs and the verdict's one-minute window once."""


def _unknown_command(word: str) -> str:
    """The line for ``gpuwatch WORD`` where WORD is no command: a PID typed bare, or a typo."""
    from difflib import get_close_matches

    from gpuwatch.untrusted import clean

    if word.isdigit():
        return f"to watch process {word}, give --pid {word}"
    close = get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return (f"unknown command '{clean(word, 40)}'{hint}: commands are {', '.join(SUBCOMMANDS)}, "
            "or give --pid PID to watch a job")


def check_pid(pid: int) -> None:
    """Refuse a PID that does not exist, is gpuwatch itself, or belongs to someone else."""
    import psutil

    if pid == os.getpid():
        raise UsageError(f"--pid {pid} is gpuwatch itself")
    try:
        proc = psutil.Process(pid)
        uids = proc.uids()
        proc.cmdline()
    except psutil.NoSuchProcess:
        raise UsageError(f"no process with PID {pid}") from None
    except psutil.ZombieProcess:
        raise UsageError(f"process {pid} has already exited (zombie)") from None
    except psutil.AccessDenied:
        raise UsageError(f"process {pid} is not yours: run gpuwatch as its owner or as root") from None
    except (ValueError, IndexError, KeyError, TypeError) as e:  # psutil's /proc parsers on a file they cannot parse
        raise UsageError(f"cannot read process {pid}: its /proc files cannot be parsed ({type(e).__name__}: {e})") from None
    if os.geteuid() != 0 and uids.real != os.getuid():
        raise UsageError(f"process {pid} belongs to another user (uid {uids.real}): run gpuwatch as that user or as root")
    if _kernel_thread(pid):
        raise UsageError(f"process {pid} ({_comm(pid)}) is a kernel thread, not a Python process: "
                         "give the PID of the training process (or its launcher)")
    not_a_job = _not_a_job(proc)
    if not_a_job:
        raise UsageError(f"process {pid} ({_comm(pid)}) {not_a_job}: give the PID of the training process "
                         "(or its launcher)")


def _trainer_of(pid: int) -> int:
    """``pid``, or where it is a DataLoader worker, the training process it belongs to (said on
    stderr, one line: the watch is of the job, as with a rank's PID)."""
    from gpuwatch.collectors.target import worker_owner

    owner = worker_owner(pid)
    if owner is None:
        return pid
    print(f"gpuwatch: PID {pid} is a DataLoader worker; watching its training process, PID {owner}, "
          "and all its workers", file=sys.stderr)
    return owner


INIT_NAMES = ("systemd", "init", "tini", "dumb-init", "s6-svscan", "runit", "launchd")
"""Programs that adopt orphaned processes: every stray Python process on the host can sit below them."""


def _not_a_job(proc) -> str | None:
    """Why a process that is not Python cannot be the job, or None: a Python process, a launcher
    (torchrun & co.) or a wrapper with a Python process below it (a shell script, ``uv run``) is
    watched. The init process (or another that adopts orphans) is refused even with Python below
    it: those are unrelated orphans, not its job."""
    import psutil

    from gpuwatch.collectors.target import _is_launcher_cmd, _is_python, job_children

    try:
        argv = tuple(proc.cmdline())
        if _is_python(argv, proc) or _is_launcher_cmd(argv):  # proc: its executable too (argv[0] may be a title)
            return None
        if proc.pid == 1 or os.path.basename(argv[0] if argv else proc.name()) in INIT_NAMES:
            return "is the init process, which adopts every orphaned process on the host; it is no training job"
        below = job_children(proc)  # not gpuwatch itself: `--pid $$` of the shell it runs in
    except (psutil.Error, OSError, ValueError, IndexError):  # gone or unparseable: the watch says so itself
        return None
    for child in below:
        try:
            if _is_python(tuple(child.cmdline()), child):
                return None
        except (psutil.Error, OSError, ValueError, IndexError):
            continue
    return "is not a Python process and runs no Python process below it"


PF_KTHREAD = 0x00200000
"""The per-process flag of a kernel thread (include/linux/sched.h), field 9 of /proc/PID/stat."""


def _kernel_thread(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
        return bool(int(text[text.rindex(")") + 2:].split()[6]) & PF_KTHREAD)
    except (OSError, ValueError, IndexError):
        return False


def _comm(pid: int) -> str:
    from gpuwatch.untrusted import clean

    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return clean(f.read().strip(), 64)
    except OSError:
        return "?"


def check_recording(path: str) -> None:
    """Refuse a recording that is missing, a folder, a device, unreadable, empty or no recording at
    all (read up to its first tick), before the TUI starts. A FIFO or pipe is not read here (it
    cannot be read twice): its stream is checked as it is replayed."""
    import stat

    from gpuwatch.recording import NotARecording, Tick, read_recording

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"no recording at {path}") from None
    except OSError as e:
        raise UsageError(f"cannot read recording {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} is a folder, not a recording")
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        raise UsageError(f"{path} is a device, not a recording")
    if not stat.S_ISREG(st.st_mode):
        return
    if st.st_size == 0 and _reads_empty(path):  # /proc and /sys files say 0 bytes and hold text
        raise UsageError(f"{path} is empty: no frames to replay")
    try:
        for item in read_recording(path):
            if isinstance(item, Tick):
                return
    except NotARecording as e:
        if _is_report(path):
            raise UsageError(f"{path} is a gpuwatch report (diagnose --format json), not a recording: replay "
                             "reads what --record wrote") from None
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot read recording {path}: {e.strerror or e}") from None


def _reads_empty(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return not f.read(1)
    except OSError:
        return True


def _is_report(path: str) -> bool:
    """The file begins as a JSON report does (render_json: an indented object whose first keys are
    "schema" and "type": "report"), read from its first few KiB only."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"type": "report"' in head


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with raising_stop():
        return _main(argv)


def _main(argv: Sequence[str]) -> int:
    try:
        ns = parse_args(argv)
        return _dispatch(ns)
    except Stopped as e:  # a stop signal before or after the watch's event loop: as clean as during it
        return finish(exit_code(e.signum))
    except UsageError as e:
        # The message quotes what the user gave (a file name, which may be a recording named by
        # someone else): cleaned, so no escape sequence or bidi override in it acts on the terminal.
        from gpuwatch.untrusted import clean

        print(f"gpuwatch: error: {clean(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except RuntimeError as e:
        # A stop signal during an import can land in a class body's __set_name__, which Python
        # re-raises as "Error calling __set_name__" caused by it (a Ctrl-C 0.1 s into a start
        # printed that traceback): the stop it is, as clean as any other.
        if isinstance(e.__cause__, Stopped):
            return finish(exit_code(e.__cause__.signum))
        raise
    except BrokenPipeError:
        # The reader of --json went away (e.g. `| head`): quiet exit, as Unix tools do.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0


def _dispatch(ns: argparse.Namespace) -> int:
    from gpuwatch import commands

    if ns.command == "watch":
        check_pid(ns.pid)
        ns.pid = _trainer_of(ns.pid)
        return commands.watch(ns)
    if ns.command == "replay":
        check_recording(ns.file)
        return commands.replay(ns)
    release()  # the other commands are not timed from their start: collect as usual
    if ns.command == "diagnose":
        if ns.pid is not None:
            check_pid(ns.pid)
            ns.pid = _trainer_of(ns.pid)
        else:
            check_recording(ns.replay)
        return commands.diagnose(ns)
    if ns.command == "compare":
        return commands.compare(ns)
    if ns.command == "demo":
        return commands.demo(ns)
    raise UsageError(f"unknown command {ns.command}")
