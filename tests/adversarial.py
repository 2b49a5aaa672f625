"""An adversarial corpus: strings a hostile (or just unlucky) job can put in its argv, process and
thread names, function and file names, and paths. Shared by the tests of every output.

The issue's own example comes first: an OSC window title, a clear-screen CSI and newlines that
would start a Markdown heading.
"""

from __future__ import annotations

ISSUE_22 = "x\x1b]0;PWNED\x07\x1b[2J\n\n# INJECTED"

CORPUS: tuple[str, ...] = (
    ISSUE_22,
    "csi\x1b[31mred\x1b[0m\x1b[1;1H\x1b[?1049l",          # CSI: colour, cursor move, leave alt screen
    "osc8\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink, ST-terminated
    "dcs\x1bP+q544e\x1b\\",                                # DCS (XTGETTCAP query)
    "c1csi\x9b2J\x9d0;title\x9c",                          # 8-bit C1: CSI, OSC, ST
    "bidi\u202egnp.exe\u202c \u2066iso\u2069 \u200f",     # RLO/PDF, isolates, RLM
    "nl\ntwo\r\nthree\u2028four\u2029five",               # newlines of every kind
    "nul\x00bel\x07bs\x08del\x7f",                         # NUL, BEL, BS, DEL
    "[link](http://evil.example) <script>alert(1)</script> **bold** `code` | cell",
    "# heading",
    "w" * 70000,                                           # a very long word
    "surrogate\udcff\udcfe",                               # bytes that were not UTF-8 (surrogateescape)
    "\ufffd replacement and \ufeff BOM",
)
"""Each string once. Tests put them wherever the job controls a string."""

ESC_BYTES = ("\x1b", "\x9b", "\x9d", "\x90", "\x07", "\x00", "\u202e", "\u2066", "\u2028")
"""Characters none of which may reach an output raw."""


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` that would act on a terminal or reorder text (none is allowed
    in anything gpuwatch shows)."""
    from gpuwatch.untrusted import is_clean

    return [c for c in text if not is_clean(c)]
