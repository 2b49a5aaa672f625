"""Textual's ``Strip.divide`` without a reference cycle for a strip it leaves whole.

The compositor divides every line a widget draws at the cuts of the widgets beside it. A line with
no cut inside it comes back as ``[self]``, which Textual keeps in the strip's own divide cache: the
strip then refers to itself, and when it is dropped only the garbage collector frees it, with its
seven caches and its segments. At 200x60 that is ~27 strips (~450 objects) a frame: the young
generation filled with them and was collected every ~20 frames (2-8 ms each, a middle-generation
collection of ~20 ms every ~200), on a replay of the H200 benchmark job. Here that case returns a
new ``[self]`` and caches nothing; every other division is Textual's own, cache included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.strip import Strip

_textual_divide = Strip.divide


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    cell_length = self.cell_length
    cuts = [cut for cut in cuts if cut <= cell_length]  # as Textual filters them
    if cuts == [cell_length]:
        return [self]
    return _textual_divide(self, cuts)


def install() -> None:
    """Use :func:`_divide` for ``Strip.divide`` (idempotent)."""
    Strip.divide = _divide  # type: ignore[method-assign]
