"""Security: no root needed, no shell, no ``--locals``, no listener unless asked, no secrets kept.

- ``gpuwatch --pid P --json`` as an unprivileged user on that user's own process works.
- No shell anywhere in the source tree (an AST scan, so comments and strings do not count).
- The stack collector runs py-spy with a fixed argument list without ``--locals``.
- ``--prometheus PORT`` binds 127.0.0.1 unless a host is given (that nothing listens without the
  flag is tests/test_exporter.py::test_nothing_listens_without_prometheus).
- A secret in the job's environment appears nowhere in a recording, the ``--json`` stream or a
  report; a secret on its command line is masked (tests/test_redact.py tests the patterns).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpuwatch.cli import parse_args
from gpuwatch.collectors.stacks import StackCollector
from gpuwatch.collectors.target import Target

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("gpuwatch", "collectors", "tui", "bench", "tests")
NOBODY = 65534


# -- no root needed -----------------------------------------------------------------------------

# Runs as root, imports everything gpuwatch needs (the interpreter under /root is unreadable to
# nobody), drops to nobody, forks a Python job of nobody's own, and watches it with --json.
UNPRIVILEGED_WATCH = """
import json, os, sys, time
import gpuwatch.cli, gpuwatch.commands, gpuwatch.headless, gpuwatch.assemble, gpuwatch.analysis
import gpuwatch.collectors.gpu, gpuwatch.collectors.pcie, gpuwatch.collectors.disk, gpuwatch.collectors.procs
import gpuwatch.collectors.host, gpuwatch.collectors.stacks, gpuwatch.collectors.nvml_session
import gpuwatch.diagnosis, gpuwatch.recording, asyncio, concurrent.futures, ctypes, psutil
import encodings.idna, encodings.ascii, encodings.latin_1, encodings.utf_8
try:
    import pynvml
except ImportError:
    pass
os.setgroups([]); os.setgid({uid}); os.setuid({uid})
assert os.geteuid() == {uid}
import ctypes
ctypes.CDLL(None).prctl(4, 1)  # PR_SET_DUMPABLE: as if started by that user (setuid clears it)
job = os.fork()
if job == 0:  # the watched job: nobody's own Python process
    end = time.monotonic() + 30
    while time.monotonic() < end:
        sum(range(1000)); time.sleep(0.01)
    os._exit(0)
try:
    sys.stdout = open({out!r}, "w")
    rc = gpuwatch.cli.main(["--pid", str(job), "--json", "--duration", "3", "--interval", "0.5"])
finally:
    os.kill(job, 9); os.waitpid(job, 0)
sys.exit(rc)
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_watching_your_own_process_needs_no_root():
    folder = tempfile.mkdtemp(prefix="gw_nobody_")
    os.chmod(folder, 0o777)
    out = os.path.join(folder, "ticks.jsonl")
    try:
        r = subprocess.run([sys.executable, "-c", UNPRIVILEGED_WATCH.format(uid=NOBODY, out=out)],
                           capture_output=True, text=True, timeout=90, cwd=folder)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        ticks = [json.loads(x) for x in Path(out).read_text().splitlines()]
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    assert len(ticks) >= 4  # 3 s at 0.5 s
    last = ticks[-1]["frame"]
    assert last["target"]["alive"] is True
    # The process tree, host and disk readings work without privileges ...
    assert [p["role"] for p in last["procs"]["processes"]][:1] == ["main"]
    assert "cpu_pct" in last["host"] and "devices" in last["disk"]
    assert last["disk"]["target_read_bps"] == pytest.approx(0.0, abs=1e9)  # /proc/PID/io of its own job
    # ... and what is not readable says why, with the fix. Here py-spy is refused (the interpreter
    # lives under /root, unreadable to nobody, and the container drops CAP_SYS_PTRACE); on a
    # machine where the user owns its Python, same-user stacks work with ptrace_scope 0 or 1.
    stacks = last["stacks"]
    assert "threads" in stacks or "Fix:" in stacks["unsupported"], stacks
    assert "threads" in stacks or "may not read process" in stacks["unsupported"], stacks
    gpus = last["gpus"]
    assert isinstance(gpus, list) or gpus["unsupported"], gpus


# -- no shell -----------------------------------------------------------------------------------

SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput"),
               ("asyncio", "create_subprocess_shell")}
SPAWNS = {"run", "Popen", "call", "check_call", "check_output"}


def _dotted(node: ast.AST) -> tuple[str, ...]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def _stringy(node: ast.AST) -> bool:
    """A command string: a str literal, an f-string, ``"..." + x``, ``"..." % x``, ``"...".format()``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _stringy(node.left) or _stringy(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _stringy(node.func.value)
    return False


def shell_uses(path: Path, root: Path = ROOT) -> list[str]:
    """Every call in ``path`` that goes through a shell or hands a spawn a command string."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        where = f"{path.relative_to(root)}:{node.lineno}"
        if name[-2:] in SHELL_CALLS:
            found.append(f"{where} {'.'.join(name)}")
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{where} shell={ast.unparse(kw.value)}")
        if name and name[-1] in SPAWNS and name[0] in ("subprocess", "sp") and node.args:
            if _stringy(node.args[0]):
                found.append(f"{where} {'.'.join(name)} with a command string")
    return found


def test_no_shell_invocation_anywhere_in_the_source_tree():
    files = [p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts]
    assert len(files) > 50  # the scan really covers the tree
    found = [hit for p in files for hit in shell_uses(p)]
    assert found == []


def test_the_shell_scan_finds_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os, subprocess\nos.system('ls')\nsubprocess.run('ls -l', shell=True)\n"
                   "subprocess.check_output(f'ps {1}')\nsubprocess.run(['ls'])\nsubprocess.run(['ls'] + ['-l'])\n"
                   "subprocess.Popen('ps ' + x)\n")
    hits = shell_uses(bad, tmp_path)
    # os.system, shell=True with its command string (2), the f-string, the concatenation; lists are fine
    assert len(hits) == 5, hits


# -- py-spy never gets --locals -----------------------------------------------------------------

def test_pyspy_argument_list_has_no_locals(tmp_path):
    # A stand-in py-spy that logs its argv and answers with an empty dump (valid JSON).
    log = tmp_path / "argv.jsonl"
    fake = tmp_path / "py-spy"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(log)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
                    "print('[]')\n")
    fake.chmod(0o755)
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        c = StackCollector(Target(job.pid), interval=0.2, pyspy=str(fake))
        c.probe()
        c.sample()
        c.close()
    finally:
        job.kill()
        job.wait()
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert calls, "the stack collector never ran py-spy"
    for argv in calls:
        assert argv[1:] == ["dump", "--pid", str(job.pid), "--json", "--nonblocking"], argv
    sources = "".join((ROOT / "collectors" / f).read_text() for f in ("pyspy.py", "stacks.py"))
    assert '"--locals"' not in sources and "'--locals'" not in sources


# -- listener: only when asked, loopback by default ---------------------------------------------

def test_prometheus_binds_loopback_unless_a_host_is_given():
    assert parse_args(["--pid", "1", "--prometheus", "9400"]).prometheus == ("127.0.0.1", 9400)
    assert parse_args(["--pid", "1", "--prometheus", ":9400"]).prometheus == ("127.0.0.1", 9400)
    assert parse_args(["--pid", "1", "--prometheus", "0.0.0.0:9400"]).prometheus == ("0.0.0.0", 9400)
    assert parse_args(["--pid", "1"]).prometheus is None


# -- no secrets in recordings, --json or reports ------------------------------------------------

ENV_SECRET = "envsecret-" + "q8Zr4Lm2Xw7Tp9Kd"
ARG_SECRET = "argsecret-" + "V3nB6cJ1hF5sY0uE"
HF_SECRET = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm123456"


@pytest.mark.slow
def test_secrets_never_reach_a_recording_the_json_stream_or_a_report(tmp_path):
    env = {**os.environ, "WANDB_API_KEY": ENV_SECRET, "MY_PLAIN_VAR": ENV_SECRET, "RANK": "0"}
    job = subprocess.Popen(
        [sys.executable, "-c",
         "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n"
         "end = time.time() + 60\nwhile time.time() < end:\n    sum(range(1000)); time.sleep(0.01)\n",
         "--api-key", ARG_SECRET, f"--model=user/{HF_SECRET}"],
        env=env, start_new_session=True)
    rec = tmp_path / "rec.jsonl"
    report = tmp_path / "report.json"
    try:
        time.sleep(0.3)
        gw = [sys.executable, "-m", "gpuwatch"]
        r = subprocess.run([*gw, "--pid", str(job.pid), "--json", "--duration", "2", "--interval", "0.5",
                            "--record", str(rec)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        d = subprocess.run([*gw, "diagnose", "--pid", str(job.pid), "--duration", "1", "--format", "json",
                            "-o", str(report)], capture_output=True, text=True, timeout=60)
        assert d.returncode == 0, d.stderr
    finally:
        os.killpg(job.pid, 9)
        job.wait()
    texts = {"recording": rec.read_text(), "--json": r.stdout + r.stderr, "report": report.read_text()}
    for what, text in texts.items():
        assert "--api-key" in text, what  # the command line is there ...
        for secret in (ENV_SECRET, ARG_SECRET, HF_SECRET):
            assert secret not in text, f"{secret} leaked into the {what}"  # ... its secrets are not
        assert "WANDB_API_KEY" not in text and "MY_PLAIN_VAR" not in text, what
