"""Strings that come from the watched job, made harmless for each place they are shown.

Everything gpuwatch shows about a job is chosen by the job: its command line, process and thread
names, function and file names in its stacks, the paths it opens. A job (or a crafted recording)
can put terminal escape sequences in them (``\\x1b]0;title\\x07``, ``\\x1b[2J``, the 8-bit CSI
``\\x9b``), bidirectional overrides that make text read differently than it is, newlines that start
Markdown headings, HTML tags, NULs, invalid UTF-8 or words of megabytes.

Two layers, so a new output cannot forget the first:

- :func:`clean` at the boundary where a string enters gpuwatch (the collectors' parsers, the
  recording decoder): every control character (C0, DEL, C1), bidirectional control, line and
  paragraph separator, zero-width character and lone surrogate is written out visibly as an
  escape (``\\x1b``, ``\\n``, ``\\u202e``), and the string is cut at a length.
- one function per output for its own syntax: :func:`terminal` (Rich text: no markup, cleaned),
  :func:`markdown` and :func:`markdown_code`, :func:`html` and :func:`label` (Prometheus label
  values). Each calls :func:`clean` again, which is cheap on a clean string.
"""

from __future__ import annotations

import html as _html
import re

MAX_TEXT = 4096
"""Characters kept of one string from the job (a command line is cut shorter, gpuwatch/redact.py)."""
MAX_LABEL = 256
"""Characters kept of a Prometheus label value (label values are series identities: keep them short)."""

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"          # C0 controls (ESC, BEL, NUL, newline, tab...), DEL, C1 (incl. 8-bit CSI \x9b)
    "\xad\u034f"                    # soft hyphen, combining grapheme joiner (invisible)
    "\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"  # Arabic/Syriac format marks, Arabic letter mark
    "\u115f\u1160\u3164\uffa0"      # Hangul fillers: Rich measures them 0 cells, terminals 2 (a job's name
                                    # shifted the header over the replay badge, review 50)
    "\u17b4\u17b5\u180b-\u180f"     # Khmer inherent vowels, Mongolian variation selectors and vowel separator
    "\u200b-\u200f"                 # zero-width space/joiners; LRM, RLM
    "\u2028-\u202e"                 # line/paragraph separators; bidi embeddings and overrides
    "\u2060-\u206f"                 # word joiner, invisible operators, bidi isolates, deprecated format marks
    "\ufe00-\ufe0f\ufeff"           # variation selectors; zero-width no-break space (BOM)
    "\ufff0-\ufffb"                 # unassigned specials; interlinear annotations
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"  # other format marks
    "\U0001f3fb-\U0001f3ff"         # emoji skin-tone modifiers: 0 cells to Rich, 2 to a terminal when alone
    "\U000e0000-\U000e0fff"         # tag characters (they spell hidden ASCII text) and variation selectors
    "\ud800-\udfff]"                # lone surrogates (undecodable bytes kept by surrogateescape)
)
"""Every character of Unicode's Cf (format) category and every Default_Ignorable_Code_Point
(DerivedCoreProperties.txt): none is drawn, so each could hide text a reader of the report or the
screen does not see (tag characters spelled "IGNORE THE VERDICT" unseen in a report, review 50),
or be measured differently by Rich and the terminal. Listed rather than read from ``unicodedata``
at import: a scan of every code point costs a tenth of a second at start-up. The emoji modifiers are
drawn characters that Rich measures 0 cells wide and a terminal, alone, 2: tests/test_review50.py
checks that no drawn character kept is 0 cells to Rich unless it combines with the one before."""
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape: show the byte
        return f"\\x{o - 0xDC00:02x}"
    if o < 0x100:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut."""
    if len(text) <= limit:
        return text
    note = f"…[{len(text) - limit} more]"
    return text[:max(0, limit - len(note))] + note


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` with every control or invisible-direction character written out as an escape, cut
    to ``limit`` characters. Linear time; a clean short string comes back as it is."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) > limit:
        text = cut(text, limit)
    if _UNSAFE.search(text) is None:
        return text
    return cut(_UNSAFE.sub(_escape, text), limit)


def small_int(text: str) -> int | None:
    """A number the job's environment gives (RANK, LOCAL_RANK, a CUDA_VISIBLE_DEVICES index): ASCII
    digits, at most 9 of them, else None. ``str.isdigit`` also takes "²" and a 5000-digit string, on
    which ``int`` raises (past Python's 4300-digit limit): an error where the job's tree is read
    would stop the process and stack collectors."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


def is_clean(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`clean` would escape."""
    return _UNSAFE.search(text) is None


def terminal(text: str, limit: int = MAX_TEXT) -> str:
    """For the TUI: cleaned. Show it as ``rich.text.Text`` (or escape markup), never as markup."""
    return clean(text, limit)


_MD_SPECIAL = re.compile(r"[\\`*\[\]<&|~$@#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?i:(?<=www)\.)|:(?=//)|^[>+=-]")
"""What gives Markdown a meaning inside one line: code, emphasis (``_`` only at a word's edge:
``cpu_train`` stays readable), links and images (``[``), HTML tags and entities, table cells,
strikethrough, math (``$``, on GitHub and GitLab), a mention or a reference (``@``, ``#``: escaped
as CommonMark allows; whether a site still links an escaped one is the site's), and a heading,
quote or list marker at the start (``#`` anywhere). A bare ``www.`` or ``scheme://`` has its ``.``
or ``:`` escaped, which GFM's autolinker then does not see."""


_MD_INLINE = re.compile(r"[\\`*\[\]<&|~$@#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?i:(?<=www)\.)|:(?=//)")
"""_MD_SPECIAL less the line-start markers: for text placed after other text on its line, where a
leading "-" or "#" means nothing ("ended: \\--duration 4 s reached" showed the backslash in a terminal)."""


def markdown(text: str, limit: int = MAX_TEXT, inline: bool = False) -> str:
    """For Markdown running text or a table cell: cleaned (so on one line: no newline can start a
    heading), and every character that would make a link, tag, emphasis or cell backslash-escaped.
    ``inline``: the text follows other text on its line, so a marker at its start is plain."""
    return (_MD_INLINE if inline else _MD_SPECIAL).sub(lambda m: "\\" + m.group(0), clean(text, limit))


def markdown_code(text: str, limit: int = MAX_TEXT, in_table: bool = False) -> str:
    """A Markdown code span holding ``text`` literally: cleaned, fenced with one backtick more than
    the longest run inside it (CommonMark), padded when it starts or ends with a backtick.
    ``in_table``: pipes escaped, as a table row needs (GFM); outside a table the backslash would
    show."""
    s = clean(text, limit)
    s = s.replace("|", "\\|") if in_table else s
    longest = max((len(r) for r in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html(text: str, limit: int = MAX_TEXT) -> str:
    """For HTML text or a quoted attribute value: cleaned and entity-escaped (``<>&"'``)."""
    return _html.escape(clean(text, limit), quote=True)


def label(text: str, limit: int = MAX_LABEL) -> str:
    """For a Prometheus label value: cleaned and cut short. prometheus_client escapes ``\\``, ``"``
    and newline itself; cleaning leaves no raw control character for a scraper to trip on."""
    return clean(text, limit)
