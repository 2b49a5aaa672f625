"""gpuwatch/untrusted.py: strings from the job, neutralised once and escaped per output."""

from __future__ import annotations

import html.parser
import re

from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.untrusted import MAX_LABEL, MAX_TEXT, clean, html as to_html, is_clean, label, markdown, markdown_code
from tests.adversarial import CORPUS, ESC_BYTES, ISSUE_22, raw_controls


def test_the_issue_example_is_written_out_visibly():
    out = clean(ISSUE_22)
    assert out == "x\\x1b]0;PWNED\\x07\\x1b[2J\\n\\n# INJECTED"
    assert is_clean(out)


def test_every_corpus_string_comes_out_clean_in_every_output():
    for s in CORPUS:
        for f in (clean, markdown, markdown_code, to_html, label):
            out = f(s)
            assert raw_controls(out) == [], (f.__name__, s[:40], out[:80])
            assert not any(c in out for c in ESC_BYTES)
            assert "\n" not in out and "\r" not in out


def test_long_words_are_cut_with_a_count():
    out = clean("w" * 70000)
    assert len(out) == MAX_TEXT and out.endswith("more]")
    assert len(label("w" * 1000)) == MAX_LABEL


def test_markdown_leaves_no_link_heading_tag_or_cell():
    out = markdown("[link](http://evil.example) <b>x</b> a|b # h")
    assert "\\[link\\]" in out and "\\<b>" in out and "a\\|b" in out
    assert markdown("# heading").startswith("\\#")
    # A code span holds backticks literally: the fence is longer than any run inside.
    assert markdown_code("a `b` c") == "``a `b` c``"
    assert markdown_code("``x") == "``` ``x ```"


def test_html_has_no_tag_or_attribute_break_out():
    out = to_html('<script>alert(1)</script>" onmouseover="x')

    class Tags(html.parser.HTMLParser):
        tags: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

    p = Tags()
    p.feed(f'<p title="{out}">{out}</p>')
    assert p.tags == ["p"]


def test_surrogates_show_as_the_bytes_they_stand_for():
    assert clean("a\udcff") == "a\\xff"
    clean("a\udcff").encode("utf-8")  # encodable: no lone surrogate left


@given(st.text(alphabet=st.characters(codec=None), max_size=300))
def test_clean_leaves_nothing_unsafe_and_keeps_clean_text(s):
    out = clean(s)
    assert is_clean(out)
    out.encode("utf-8")
    if is_clean(s) and len(s) <= MAX_TEXT:
        assert out == s


@given(st.text(max_size=200))
def test_markdown_never_opens_a_link_or_tag(s):
    out = markdown(s)
    # every [ ] < ` that survives is escaped by a backslash
    for m in re.finditer(r"[\[\]<`|]", out):
        i = m.start()
        n = 0
        while i - n - 1 >= 0 and out[i - n - 1] == "\\":
            n += 1
        assert n % 2 == 1, (s, out)


def test_inline_markdown_leaves_a_leading_marker_plain_and_still_escapes_the_rest():
    """Review 36: "ended: \\--duration 4 s reached" showed a backslash in a terminal; text that
    follows other text on its line cannot start a list or heading, so its leading "-" stays plain.
    Links, tags, code and emphasis are escaped as before."""
    from gpuwatch.untrusted import markdown

    assert markdown("--duration 4 s reached", inline=True) == "--duration 4 s reached"
    assert markdown("--duration 4 s reached") == "\\--duration 4 s reached"  # at a line's start
    # "#" is escaped anywhere (a GitHub reference, review 50), "://" too (an autolink)
    assert markdown("- [x](http://e) <b> `c` *e* #", inline=True) == "- \\[x\\](http\\://e) \\<b> \\`c\\` \\*e\\* \\#"
    assert "\n" not in markdown("a\n# heading", inline=True)
