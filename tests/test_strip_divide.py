"""tui/strip_divide.py: Strip.divide as Textual's, without a reference cycle for a strip left whole."""

from __future__ import annotations

import gc

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gpuwatch.tui import strip_divide


def _strip() -> Strip:
    return Strip([Segment("ab", Style(bold=True)), Segment("cdef"), Segment("gh", Style(italic=True))])


@pytest.mark.parametrize("cuts", [[8], [3, 8], [2, 5, 8], [8, 9], [3, 10], [], [0, 8], [4]])
def test_divides_as_textual_does(cuts):
    textual = strip_divide._textual_divide(_strip(), cuts)
    strip_divide.install()
    ours = Strip.divide(_strip(), cuts)
    assert [list(s) for s in ours] == [list(s) for s in textual]
    assert [s.cell_length for s in ours] == [s.cell_length for s in textual]


def test_a_strip_left_whole_is_freed_without_the_garbage_collector():
    strip_divide.install()
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            strip = _strip()
            assert Strip.divide(strip, [strip.cell_length]) == [strip]
            Strip.divide(strip, [3, strip.cell_length])  # cut: Textual's own path, cached
            del strip
        assert gc.collect() == 0  # nothing was left for the collector: no cycle
    finally:
        gc.enable()
