"""One tick far out of time does not cost the rest of a recording (field trial: a corrupt tick
years ahead, amid good ticks, made every later tick read as running back and be skipped).

The lone outlier is the line dropped, said as every bad line is; a clock that did leap (every tick
after it goes on from it) keeps every tick; the joined-recordings rule is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuwatch.recording import BadLine, Tick, read_recording

DEMO = Path(__file__).parent / "data" / "cpu_demo.jsonl"  # a real recording: header + 62 ticks
LINES = DEMO.read_text().splitlines()
YEARS = 3 * 365 * 86400.0


def _moved(line: str, by: float) -> str:
    rec = json.loads(line)
    rec["frame"]["t"] += by
    return json.dumps(rec)


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _read(path: str) -> tuple[list[int], list[BadLine]]:
    items = list(read_recording(path))
    return [i.line for i in items if isinstance(i, Tick)], [i for i in items if isinstance(i, BadLine)]


def test_a_lone_tick_years_ahead_is_the_one_line_skipped(tmp_path):
    lines = [*LINES[:11]]
    lines[5] = _moved(lines[5], YEARS)  # line 6 of 11
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [2, 3, 4, 5, 7, 8, 9, 10, 11]
    assert [b.line for b in bad] == [6]
    assert "s ahead of the tick after it, which goes on from the ticks before (a damaged line?), skipped" in bad[0].reason


def test_the_outlier_is_said_on_stderr_and_every_other_tick_replays(tmp_path, capsys):
    from gpuwatch.cli import main

    lines = [*LINES]
    lines[30] = _moved(lines[30], YEARS)
    p = _write(tmp_path / "r.jsonl", lines)
    assert main(["replay", p, "--json"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == len(LINES) - 2  # every tick but the outlier
    said = [ln for ln in err.splitlines() if ln.startswith(f"gpuwatch: {p}: ")]
    assert len(said) == 1 and said[0].startswith(f"gpuwatch: {p}: line 31: its time runs "), err


def test_a_report_of_it_covers_the_run_not_the_outliers_years(tmp_path, capsys):
    from gpuwatch.cli import main

    lines = [*LINES]
    lines[30] = _moved(lines[30], YEARS)
    assert main(["diagnose", "--replay", _write(tmp_path / "r.jsonl", lines), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["frames"] == len(LINES) - 2 and doc["source"]["covered_s"] < 3600
    assert doc["source"]["bad_lines"] == 1


def test_bad_lines_around_a_held_tick_keep_their_file_order(tmp_path):
    lines = [*LINES[:8]]
    lines[3] = _moved(lines[3], YEARS)  # line 4: the outlier
    lines.insert(4, "{not json")  # line 5: unreadable
    lines.insert(5, _moved(LINES[1], 0.0))  # line 6: runs back from every tick before it
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [2, 3, 7, 8, 9, 10]
    assert [b.line for b in bad] == [4, 5, 6]
    assert "ahead of the tick after it" in bad[0].reason and "back from the tick before" in bad[2].reason


def test_a_clock_that_leaps_and_goes_on_from_there_keeps_every_tick(tmp_path):
    lines = [*LINES[:6], *(_moved(x, 7200.0) for x in LINES[6:11])]
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == list(range(2, 12)) and bad == []


def test_a_tick_years_ahead_at_the_very_end_is_kept_as_read(tmp_path):
    """Nothing after it says which clock is wrong: it is read, as before."""
    lines = [*LINES[:6]]
    lines[5] = _moved(lines[5], YEARS)
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [2, 3, 4, 5, 6] and bad == []


def test_joined_recordings_still_stop_at_the_second_header_with_a_tick_held(tmp_path):
    lines = [*LINES[:6], *LINES[:4]]
    lines[5] = _moved(lines[5], YEARS)  # the last tick of the first recording, held when the header comes
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [2, 3, 4, 5, 6]
    assert len(bad) == 1 and bad[0].joined and bad[0].line == 7 and "after 5 ticks" in bad[0].reason


def test_a_first_tick_years_ahead_is_the_one_line_skipped(tmp_path):
    """The first tick has no tick before it to be judged against: held until the next, a first line
    years ahead is the outlier, not the tick every later one reads as running back from."""
    lines = [*LINES[:11]]
    lines[1] = _moved(lines[1], YEARS)  # line 2: the first tick
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert [b.line for b in bad] == [2]
    assert "ahead of the tick after it, which goes on from the ticks after (a damaged line?)" in bad[0].reason


def test_a_second_tick_a_little_behind_the_first_is_still_the_one_skipped(tmp_path):
    lines = [*LINES[:6]]
    lines[2] = _moved(lines[2], -5.0)  # line 3 runs 4 s back from line 2
    ticks, bad = _read(_write(tmp_path / "r.jsonl", lines))
    assert ticks == [2, 4, 5, 6] and [b.line for b in bad] == [3]
    assert "back from the tick before" in bad[0].reason
