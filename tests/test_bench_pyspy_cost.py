"""bench/pyspy_cost.py: the ELF counts it reports, the bare Pythons it dumps, and its split."""

from __future__ import annotations

import struct
import sys

import pytest

from bench import pyspy_cost
from gpuwatch.collectors.pyspy import find_pyspy

PYSPY = find_pyspy()


def _elf(sections: list[tuple[str, int, int]]) -> bytes:
    """A 64-bit little-endian ELF file holding only section headers: (name, size, entsize) each,
    after the null section, with the section-name table last."""
    names = b"\0" + b"".join(name.encode() + b"\0" for name, _, _ in sections) + b".shstrtab\0"
    shoff = 64 + len(names)
    shnum = len(sections) + 2
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, shnum, shnum - 1)
    table = bytes(64)  # the null section
    at = 1
    for name, size, entsize in sections:
        table += struct.pack("<IIQQQQIIQQ", at, 2, 0, 0, 0, size, 0, 0, 8, entsize)
        at += len(name) + 1
    table += struct.pack("<IIQQQQIIQQ", at, 3, 0, 0, 64, len(names), 0, 0, 1, 0)
    return bytes(header) + names + table


def test_elf_counts_read_the_symbol_tables_and_relocations(tmp_path):
    path = tmp_path / "lib.so"
    path.write_bytes(_elf([(".dynsym", 5 * 24, 24), (".text", 4096, 0), (".symtab", 3 * 24, 24),
                           (".rela.dyn", 7 * 24, 24)]))
    assert pyspy_cost.elf_counts(str(path)) == {"symtab": 3, "dynsym": 5, "rela_dyn": 7}
    stripped = tmp_path / "stripped.so"
    stripped.write_bytes(_elf([(".dynsym", 2 * 24, 24)]))
    assert pyspy_cost.elf_counts(str(stripped)) == {"symtab": 0, "dynsym": 2, "rela_dyn": 0}


def test_elf_counts_refuse_what_is_not_a_64_bit_elf_file(tmp_path):
    text = tmp_path / "script.py"
    text.write_text("print('not an ELF file')\n" * 10)
    assert pyspy_cost.elf_counts(str(text)) is None
    short = tmp_path / "short"
    short.write_bytes(b"\x7fELF\x02\x01")
    assert pyspy_cost.elf_counts(str(short)) is None
    assert pyspy_cost.elf_counts(str(tmp_path / "missing")) is None


def test_the_bare_python_holds_one_map_line_per_extra_mapping():
    procs = [pyspy_cost.hold_maps(sys.executable, 0), pyspy_cost.hold_maps(sys.executable, 300)]
    try:
        bare, held = (pyspy_cost.target_facts(p.pid) for p in procs)
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(5)
    # the first or last may merge with a neighbouring anonymous region of the interpreter's own
    assert held["map_lines"] - bare["map_lines"] >= 298
    assert bare["threads"] == 1 and bare["exe"] == held["exe"]


def test_the_split_accounts_for_the_whole_dump():
    results = {"start-up": {"median": 1.0}, "bare": {"median": 4.0}, "bare+1000": {"median": 6.0},
               "main": {"median": 9.0}}
    facts = {"bare": {"map_lines": 50}, "bare+1000": {"map_lines": 1050}, "main": {"map_lines": 500}}
    parts = pyspy_cost.split(results, facts, 1000)
    assert parts["per_map_line_us"] == pytest.approx(2.0)
    assert parts["maps"] == pytest.approx(1.0)
    assert parts["attaching"] == pytest.approx(4.0 - 1.0 - 0.1)
    assert parts["start-up"] + parts["attaching"] + parts["maps"] + parts["job"] == pytest.approx(9.0)


@pytest.mark.skipif(PYSPY is None, reason="py-spy is not installed")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="py-spy attach needs Linux /proc")
def test_each_run_is_reaped_with_its_own_cpu():
    proc = pyspy_cost.hold_maps(sys.executable, 0)
    try:
        got = pyspy_cost.measure({"start-up": [PYSPY, "--version"],
                                  "bare": [PYSPY, "dump", "--json", "--nonblocking", "--pid", str(proc.pid)],
                                  "gone": [PYSPY, "dump", "--json", "--nonblocking", "--pid", "999999999"]}, 2)
    finally:
        proc.stdin.close()
        proc.wait(5)
    assert len(got["start-up"]["ms"]) == 2 and got["start-up"]["failed"] == 0
    assert got["gone"]["failed"] == 2 and got["gone"]["median"] is None
    if got["bare"]["failed"]:  # no ptrace here (a container without SYS_PTRACE): nothing more to check
        return
    assert all(ms > 0 for ms in got["bare"]["ms"])


@pytest.mark.skipif(PYSPY is None, reason="py-spy is not installed")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="py-spy attach needs Linux /proc")
def test_record_runs_give_a_sample_price_from_two_lengths():
    proc = pyspy_cost.hold_maps(sys.executable, 0)
    try:
        got = pyspy_cost.record_cost(PYSPY, proc.pid, 2.0, 1)
        gone = pyspy_cost.record_cost(PYSPY, 999999999, 2.0, 1)
    finally:
        proc.stdin.close()
        proc.wait(5)
    assert gone == {"seconds": 2.0, "failed": True}
    if got.get("failed"):  # no ptrace here: nothing more to check
        return
    # 2 samples a second, idle threads included: about 4 samples in 2 s and 2 in 1 s
    assert got["samples_long"] > got["samples_short"] >= 1
    # one round: the price is the two runs' difference over the samples between them
    assert got["ms_per_sample"] * (got["samples_long"] - got["samples_short"]) == pytest.approx(
        got["ms_long"][0] - got["ms_short"][0])
    assert got["ms_attach"] == pytest.approx(got["ms_short"][0] - got["samples_short"] * got["ms_per_sample"])
