"""Fuzzing the parsers of what gpuwatch reads from outside (Hypothesis): recordings, /proc files,
py-spy's JSON. Each may only return its result or raise its own documented error; never another
exception, never a hang, and every string it returns is clean (gpuwatch/untrusted.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwatch.collectors import procfs
from gpuwatch.collectors.pyspy import ParseError, parse_dump
from gpuwatch.recording import BadLine, NotARecording, Tick, read_recording
from gpuwatch.untrusted import is_clean
from tests.adversarial import CORPUS

DEMO = Path(__file__).parent / "data" / "cpu_demo.jsonl"
LINES = DEMO.read_bytes().splitlines()
PYSPY = json.loads((Path(__file__).parent / "data" / "pyspy" / "cpu-stacks.json").read_text())
REAL_STAT = b"4242 (python3) S 1 4242 4242 0 -1 4194560 2571 0 0 0 18 5 0 0 20 0 1 0 1234567 25436160 2481 18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 1 0 0 0 0 0"

REAL_DUMPS = [d["output"] for j in PYSPY["jobs"] for d in j["dumps"] if isinstance(d.get("output"), list)][:20]
SETTINGS = settings(max_examples=int(os.environ.get("GPUWATCH_FUZZ_EXAMPLES", "150")), deadline=None, derandomize=True,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
"""Derandomized, so CI runs the same examples every time (a failure is reproducible, never flaky);
GPUWATCH_FUZZ_EXAMPLES=5000 explores further by hand."""


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _strings(v)
    elif hasattr(x, "__dataclass_fields__"):
        for name in x.__dataclass_fields__:
            yield from _strings(getattr(x, name))


# -- recordings -----------------------------------------------------------------------------------

def _mutate(line: bytes, data) -> bytes:
    """A real tick line, damaged: a slice cut out, bytes flipped, a string or number replaced."""
    how = data.draw(st.sampled_from(["cut", "flip", "string", "number", "nest", "raw"]))
    if how == "cut":
        i = data.draw(st.integers(0, len(line)))
        j = data.draw(st.integers(i, len(line)))
        return line[:i] + line[j:]
    if how == "flip":
        i = data.draw(st.integers(0, len(line) - 1))
        return line[:i] + data.draw(st.binary(min_size=1, max_size=4)) + line[i + 1:]
    if how == "string":
        s = data.draw(st.sampled_from(CORPUS[:10]) | st.text(max_size=30))
        return line.replace(b'"cmdline":"', b'"cmdline":' + json.dumps(s).encode()[:-1] + b'"#', 1).replace(b'"#', b'"', 1)
    if how == "number":
        n = data.draw(st.sampled_from([b"1e999", b"-1e999", b"NaN", b"Infinity", b"-0", b"1e-400", b"99999999999999999999999", b"true", b"null", b'"1"']))
        return line.replace(b'"interval":1.0', b'"interval":' + n, 1)
    if how == "nest":
        depth = data.draw(st.integers(1, 5000))
        return line.replace(b'"gpus":', b'"gpus":' + b"[" * depth + b"]" * depth + b',"x":', 1)
    return data.draw(st.binary(max_size=200))


@SETTINGS
@given(st.data())
def test_a_damaged_recording_gives_ticks_bad_lines_or_not_a_recording(tmp_path_factory, data):
    n = data.draw(st.integers(0, 6))
    body = [LINES[0]] if data.draw(st.booleans()) else []
    for i in range(n):
        line = LINES[1 + i]
        body.append(_mutate(line, data) if data.draw(st.booleans()) else line)
    if data.draw(st.booleans()):
        body.insert(data.draw(st.integers(0, len(body))), data.draw(st.binary(max_size=300)))
    p = tmp_path_factory.mktemp("fuzz") / "r.jsonl"
    p.write_bytes(b"\n".join(body) + data.draw(st.sampled_from([b"\n", b""])))
    try:
        items = list(read_recording(str(p)))
    except NotARecording as e:
        assert str(e) and "\n" not in str(e)
        return
    assert any(isinstance(i, Tick) for i in items)
    for i in items:
        assert isinstance(i, (Tick, BadLine))
        if isinstance(i, Tick):
            assert all(is_clean(s) for s in _strings(i.frame))
            from gpuwatch.recording import dumps, tick_record

            dumps(tick_record(i.frame, None))  # everything read can be written again (finite numbers)
        else:
            assert is_clean(i.reason)


@SETTINGS
@given(st.binary(max_size=2000))
def test_any_bytes_are_ticks_bad_lines_or_not_a_recording(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("fuzz") / "b.jsonl"
    p.write_bytes(blob)
    try:
        for item in read_recording(str(p)):
            assert isinstance(item, (Tick, BadLine))
    except NotARecording:
        pass


# -- /proc ----------------------------------------------------------------------------------------

@SETTINGS
@given(st.one_of(
    st.text(max_size=400),
    st.builds(lambda cut, junk: REAL_STAT[:cut].decode() + junk, st.integers(0, len(REAL_STAT)), st.text(max_size=20)),
    st.builds(lambda name: REAL_STAT.decode().replace("python3", name), st.sampled_from(CORPUS[:10]) | st.text(max_size=40)),
))
def test_parse_stat_returns_a_clean_stat_or_raises_value_error(text):
    try:
        st_ = procfs.parse_stat(text)
    except ValueError:
        return
    assert is_clean(st_.name) and isinstance(st_.starttime, int)


@SETTINGS
@given(st.text(max_size=300) | st.builds(lambda a, b: f"36 35 98:0 /{a} /mnt/{b} rw,noatime master:1 - ext3 /dev/{a} rw\n",
                                         st.sampled_from(CORPUS[:9]), st.text(max_size=20)))
def test_the_other_proc_parsers_never_raise_anything_unexpected(text):
    for parse in (procfs.parse_pressure, procfs.parse_flat_keyed):
        parse(text)
    assert all(is_clean(e.path) for e in procfs.parse_proc_cgroup(text))
    for m in procfs.parse_mountinfo(text):  # mount paths may come from the job's own mount namespace
        assert is_clean(m.mountpoint) and is_clean(m.root) and is_clean(m.source) and is_clean(m.fstype)
    for parse in (procfs.parse_schedstat, procfs.parse_cpu_max):
        try:
            parse(text)
        except ValueError:
            pass


@SETTINGS
@given(st.text(max_size=300))
def test_stat_files_the_kernel_could_not_have_written_are_none_for_the_readers(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("proc")
    (root / "7" / "task" / "7").mkdir(parents=True)
    (root / "7" / "stat").write_text(text)
    (root / "7" / "task" / "7" / "stat").write_text(text)
    (root / "7" / "task" / "7" / "schedstat").write_text(text)
    st_ = procfs.read_stat(7, str(root))
    assert st_ is None or is_clean(st_.name)
    procfs.read_tasks(7, str(root))
    procfs.read_waits(7, str(root))


# -- py-spy ---------------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | st.sampled_from(CORPUS[:10]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["pid", "os_thread_id", "thread_name", "active", "owns_gil", "frames", "name",
                         "filename", "short_filename", "line", "x"]), kids, max_size=6),
    max_leaves=30,
)


@SETTINGS
@given(st.one_of(_JSON, st.data()))
def test_parse_dump_gives_clean_threads_or_a_parse_error(doc):
    if not isinstance(doc, (type(None), bool, int, float, str, list, dict)):  # st.data(): mutate a real dump
        data = doc
        real = json.dumps(data.draw(st.sampled_from(REAL_DUMPS)))
        i = data.draw(st.integers(0, len(real)))
        text = real[:i] + data.draw(st.sampled_from(CORPUS[:10]) | st.text(max_size=10)) + real[i:]
    else:
        text = json.dumps(doc)
    try:
        threads = parse_dump(text, 1)
    except ParseError:
        return
    assert all(is_clean(s) for s in _strings(threads))
