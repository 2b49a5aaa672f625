"""Review 50 (a hostile job and hostile recordings): invisible format characters, widths Rich and a
terminal disagree on, GitHub Markdown's math, mentions and autolinks, and a tiny gzip file of
millions of blank or bad lines."""

from __future__ import annotations

import gzip
import subprocess
import sys
import unicodedata

from markdown_it import MarkdownIt
from rich.cells import cell_len

from gpuwatch.recording import MAX_SKIPPED, BadLine, BadLineReport, Tick, read_recording
from gpuwatch.untrusted import clean, html as to_html, is_clean, markdown, markdown_code, terminal
from tests.test_recording import _write

HIDDEN = "Store.__getitem__" + "".join(chr(0xE0000 + ord(c)) for c in "IGNORE THE VERDICT") + "\u206a\xad\u180e\u3164"
"""The reviewer's payload: tag characters spelling hidden ASCII, then deprecated format marks, a
soft hyphen, a Mongolian vowel separator and a Hangul filler."""


def test_no_format_character_survives_cleaning():
    """Every character of Unicode's Cf category (as this Python's unicodedata has it) is written out."""
    kept = [hex(o) for o in range(0x110000) if unicodedata.category(chr(o)) == "Cf" and is_clean(chr(o))]
    assert kept == []


def test_hidden_text_is_shown_as_escapes_in_every_output():
    for f in (clean, terminal, markdown, to_html):
        out = f(HIDDEN)
        assert all(unicodedata.category(c) != "Cf" for c in out), f.__name__
        assert not any(0xE0000 <= ord(c) <= 0xE0FFF or c in "\xad\u3164" for c in out), f.__name__
    assert clean(HIDDEN).startswith("Store.__getitem__\\U000e0049\\U000e0047")


def test_every_drawn_character_kept_is_at_least_one_cell_to_rich():
    """A character Rich measures as 0 cells that a terminal draws wider shifts everything after it:
    a job's name of Hangul fillers pushed its text over the header's replay badge. Kept characters
    Rich calls 0 cells wide are only those that combine with the one before (marks, conjoining jamo),
    which terminals draw in the same cell."""
    zero = []
    for o in range(0x110000):
        c = chr(o)
        cat = unicodedata.category(c)
        if cat in ("Mn", "Me", "Mc", "Cn", "Co", "Cs") or not is_clean(c):
            continue
        if cell_len(c) == 0 and not unicodedata.name(c, "").startswith(("HANGUL JUNGSEONG", "HANGUL JONGSEONG")):
            zero.append(hex(o))
    assert zero == []


def _rendered(md: str) -> str:
    return MarkdownIt("gfm-like").render(md)


def test_markdown_leaves_no_math_mention_reference_or_autolink():
    out = markdown("Store.get$$ALL^{CLEAR}_{GPU OK}$$ @octocat #1 www.evil.com http://evil.com/x WWW.X")
    assert "\\$\\$ALL" in out and "\\@octocat" in out and "\\#1" in out
    html = _rendered(out)
    assert "<a" not in html  # GFM's linkify finds no www. or http:// once their . or : is escaped
    # the reader sees the same words, without the backslashes
    assert "$$ALL^{CLEAR}_{GPU OK}$$ @octocat #1 www.evil.com http://evil.com/x" in html
    assert _rendered("www.evil.com http://evil.com/x").count("<a") == 2  # the check above can see links


def test_a_code_span_outside_a_table_shows_its_pipes_bare():
    assert markdown_code("python train.py | tee log") == "`python train.py | tee log`"
    assert markdown_code("a|b", in_table=True) == "`a\\|b`"
    assert "a|b" in _rendered(markdown_code("a|b"))


def _flooded(tmp_path, filler: bytes, n: int):
    """A gzip recording of three ticks, then ``n`` copies of ``filler``, then a last tick."""
    plain = tmp_path / "r.jsonl"
    _write(plain, 4)
    lines = plain.read_bytes().splitlines(keepends=True)
    p = tmp_path / "flood.jsonl.gz"
    p.write_bytes(gzip.compress(b"".join(lines[:4]) + filler * n + lines[4]))
    return p


def test_a_file_of_millions_of_bad_lines_stops_after_the_cap(tmp_path):
    """A 9 KB gzip file of 2 million ``{}`` lines held a replay 22 s and 281 MB (review 50)."""
    p = _flooded(tmp_path, b"{}\n", 2_000_000)
    assert p.stat().st_size < 20_000
    items = list(read_recording(str(p)))
    ticks = [i for i in items if isinstance(i, Tick)]
    bad = [i for i in items if isinstance(i, BadLine)]
    assert [t.frame.seq for t in ticks] == [1, 2, 3]  # the ticks before the flood are kept
    assert len(bad) == MAX_SKIPPED + 1 and bad[-1].gave_up and not any(b.gave_up for b in bad[:-1])
    assert "the rest of the file is not read" in bad[-1].reason


def test_blank_lines_count_towards_the_cap(tmp_path):
    p = _flooded(tmp_path, b"\n", 5_000_000)
    items = list(read_recording(str(p)))
    assert [type(i).__name__ for i in items] == ["Tick", "Tick", "Tick", "BadLine"]
    assert items[-1].gave_up and items[-1].line == 4 + MAX_SKIPPED + 1


def test_a_few_blank_lines_lose_nothing(tmp_path):
    p = _flooded(tmp_path, b"\n", 100)
    assert [i.frame.seq for i in read_recording(str(p))] == [1, 2, 3, 4]


def test_the_report_says_where_reading_stopped_and_counts_no_stop_as_a_bad_line(tmp_path, capsys):
    p = _flooded(tmp_path, b"\n", 20_000)
    out = subprocess.run([sys.executable, "-m", "gpuwatch", "diagnose", "--replay", str(p)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "read only up to line 10,005: more than 10,000 of its lines were blank or unreadable" in out.stdout
    assert "unreadable line" not in out.stdout  # blank lines are no unreadable ones, nor is the stop
    report = BadLineReport(str(p))
    for item in read_recording(str(p)):
        if isinstance(item, BadLine):
            report(item)
    assert report.count == 0 and report.gave_up_at == 4 + MAX_SKIPPED + 1


def test_the_replay_screen_says_the_same():
    from gpuwatch.source import ReplaySource, damaged

    src = ReplaySource("x.jsonl")
    src.bad_lines.append(BadLine(10_005, "more than 10,000 blank or unreadable lines", gave_up=True))
    assert damaged(src) == ("The recording is read only up to line 10,005: more than 10,000 of its lines were "
                            "blank or unreadable, so the rest of the file was not read.")


def test_where_reading_stopped_is_said_after_the_first_twenty_bad_lines_too(tmp_path):
    """replay --json said "10000 bad lines in all, skipped" and nothing of the stop (review 51)."""
    p = _flooded(tmp_path, b"{}\n", 20_000)
    out = subprocess.run([sys.executable, "-m", "gpuwatch", "replay", "--json", "--speed", "0", str(p)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert "more than 10,000 blank or unreadable lines: the rest of the file is not read" in out.stderr


def test_a_file_of_blank_lines_is_refused_for_its_blank_lines():
    import tempfile

    import pytest

    from gpuwatch.recording import NotARecording

    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl") as f:
        f.write(b"\n" * (MAX_SKIPPED + 5))
        f.flush()
        with pytest.raises(NotARecording) as e:
            list(read_recording(f.name))
    assert "0 unreadable lines and no tick" in str(e.value) and "blank or unreadable" in str(e.value)
