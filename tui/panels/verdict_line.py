"""The verdict under the pipeline: shown whole, in a height that only grows, wrapped so that a
number stays with the word after it.

A height that followed the text (one, two, three lines as the sentence changed) laid out the
whole screen each time (60-110 ms of CPU each on the H200 replay); a height capped at three lines
cut the sentence mid-word at 80 columns. Here the height is the most lines the verdict has needed
at this width: it grows when a longer sentence comes, which lays the screen out once, and never
shrinks back and forth. A resize starts over.

Textual wraps at any whitespace (NBSP and U+202F too), so "waits for data 33 % of the time" could
end a line on "33" and start the next on "%". :class:`KeptWords` breaks the text itself, only at
spaces that do not follow a number, once per text and width; Textual then draws lines that fit.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from textual.content import Content
from textual.css.styles import RulesMap
from textual.geometry import Size
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual, VisualType
from textual.widgets import Static

from gpuwatch.tui.panels.lazy_static import LazyStatic

_WORD = re.compile(r"[^ \n]+ *|\n| +")
"""A run of non-spaces with the spaces after it (the spaces are where a line may break), or a
newline, which starts a line of its own (the whole verdict's paragraphs and list)."""
_ENDS_IN_NUMBER = re.compile(r"\d$")
"""A word ending in a digit ("33", "(~1.7") is kept with the next one (its unit or noun)."""


def break_offsets(plain: str, width: int) -> list[int]:
    """Where to start new lines so that each holds at most ``width`` cells (unless one unbreakable
    run is longer), breaking only at spaces after a word that does not end in a number.

    Hand-written rather than textwrap: the breaks must be offsets into the styled text (the stage
    name is bold) and widths in terminal cells, and textwrap gives neither."""
    offsets: list[int] = []
    x = 0  # cells on the current line, spaces after its last word included
    run_start, run_cells, run_text = 0, 0, 0  # the unbreakable run being built: start, cells, text cells
    for m in _WORD.finditer(plain):
        word = m.group()
        if word == "\n":  # Textual breaks there itself: the next line starts empty
            x, run_cells = 0, 0
            continue
        text = word.rstrip(" ")
        if run_cells == 0:
            run_start = m.start()
        run_text = run_cells + cell_len(text)
        run_cells += cell_len(word)
        if text and _ENDS_IN_NUMBER.search(text) and m.end() < len(plain):
            continue  # no break after a number: the run goes on
        if x and x + run_text > width:
            offsets.append(run_start)
            x = 0
        x += run_cells
        run_cells = 0
    return offsets


MORE = "[dim]… the rest: v shows the whole verdict[/dim]"
"""The last line of a verdict cut to the lines its screen can spare (markup)."""


class KeptWords(Visual):
    """Markup shown as Content, broken into lines by :func:`break_offsets` at the width drawn; at
    most ``max_lines`` of them, the last then saying how to read the rest (:data:`MORE`)."""

    def __init__(self, markup: str, max_lines: int | None = None) -> None:
        self.markup = markup
        self.max_lines = max_lines
        self.content = Content.from_markup(markup)
        self._wrapped: dict[int, Content] = {}

    def __eq__(self, other: object) -> bool:
        return type(other) is KeptWords and other.markup == self.markup and other.max_lines == self.max_lines

    __hash__ = None  # type: ignore[assignment]

    def at_width(self, width: int) -> Content:
        """The content with a newline at each break for ``width`` cells. Kept per width: a layout
        asks at two widths (with and without the bottleneck's border and padding)."""
        wrapped = self._wrapped.get(width)
        if wrapped is None:
            if len(self._wrapped) >= 4:  # widths from before a resize
                self._wrapped.clear()
            lines = self.content.divide(break_offsets(self.content.plain, width)) if width > 0 else [self.content]
            cap = self.max_lines
            if cap is not None and len(lines) > cap:
                lines = [*lines[:max(cap - 1, 1)], Content.from_markup(MORE)]
            wrapped = self._wrapped[width] = Content("\n").join(line.rstrip() for line in lines)
        return wrapped

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        pad = options.rules.get("line_pad", 0) * 2
        return self.at_width(width - pad).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_minimal_width(self, rules: RulesMap) -> int:
        return self.content.get_minimal_width(rules)

    def get_height(self, rules: RulesMap, width: int) -> int:
        pad = rules.get("line_pad", 0) * 2
        return self.at_width(width - pad).get_height(rules, width)


class _Tallest(Static):
    """A Static whose content height is the tallest it has been at each width."""

    _tallest: dict[tuple[int, int | None], int]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = super().get_content_height(container, viewport, width)
        tallest = self.__dict__.setdefault("_tallest", {})
        if len(tallest) > 8:  # widths from before resizes
            tallest.clear()
        key = (width, getattr(self, "max_lines", None))  # per cap too: a lower cap is not held taller
        tallest[key] = max(tallest.get(key, 0), height)
        return tallest[key]


def lines_to_spare(height: int, more: int = 0) -> int:
    """The most lines the main screen gives its verdict at ``height`` rows: what is left once every
    other panel has its least useful size, at least 3. Short screens (under 34 rows): header 1,
    pipeline 2, charts 4, the GPU's title and two metric rows 3, the processes' header and three
    rows 4, host 2, footer 1 (17); from 34 rows the boxes' borders and the three-plot charts take 28;
    from 50, the taller charts 34 (tui/gpuwatch.tcss). ``more``: rows the other panels need beyond
    those on this screen (the ranks line; a list of many GPUs, all of which stay in view)."""
    others = (17 if height < 34 else 28 if height < 50 else 34) + more
    return max(3, height - others)


class VerdictLine(LazyStatic, _Tallest):
    """LazyStatic's cheap updates (a layout only when the size changes) over a grow-only height;
    markup text is shown through :class:`KeptWords`, in at most :attr:`max_lines` lines.

    A verdict with its epochs and warnings ran to 14 lines at 80x24 and left the processes table
    no row (H100 run 47's Lightning job); the whole text is one key away (v)."""

    max_lines: int | None = None
    """The most lines the screen can spare (set by the main screen from its height); None: all."""

    def cap(self, max_lines: int | None) -> None:
        """Show at most ``max_lines`` lines (the text on show is wrapped again at once). The caller
        reads the terminal's height, not the screen's: the screen's shrinks by its scrollbar while
        the content overflows, and a cap from it fed back (24 and 25 rows in turn, without end)."""
        if max_lines == self.max_lines:
            return
        self.max_lines = max_lines
        shown = self.content
        if isinstance(shown, KeptWords):
            super().update(KeptWords(shown.markup, max_lines))

    def update(self, content: VisualType = "", *, layout: bool | None = None) -> None:
        if isinstance(content, str):
            shown = self.content
            if not layout and isinstance(shown, KeptWords) and shown.markup == content:
                return  # the same text each tick (cap() re-wraps it when the cap changes): nothing drawn
            content = KeptWords(content, self.max_lines)
        super().update(content, layout=layout)
