"""docs/THRESHOLDS.md holds one row per cut of gpuwatch/diagnosis/thresholds.py, with its value.

The cuts have one home (the module) and one table of what each is based on (the doc); this keeps
the two in step, and keeps the report and the TUI from growing cuts of their own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import gpuwatch.diagnosis.thresholds as T

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "THRESHOLDS.md"
ROW = re.compile(r"^\| `([A-Z0-9_]+)` \| ([^|]+) \| (.+) \|$")


def _cuts() -> dict[str, object]:
    return {k: v for k, v in vars(T).items() if k.isupper() and isinstance(v, (int, float, tuple))}


def _rows() -> dict[str, tuple[str, str]]:
    return {m[1]: (m[2].strip(), m[3].strip()) for line in DOC.read_text().splitlines() if (m := ROW.match(line))}


def _value(text: str) -> object:
    if text.startswith("0x"):
        return int(text, 16)
    try:
        return float(text)
    except ValueError:
        return tuple(x.strip() for x in text.split(","))


def test_every_cut_has_a_row_with_its_value_and_a_reason():
    rows = _rows()
    missing = sorted(set(_cuts()) - set(rows))
    assert not missing, f"cuts without a row in docs/THRESHOLDS.md: {missing}"
    for name, value in _cuts().items():
        shown, why = rows[name]
        got = _value(shown)
        if isinstance(value, tuple):
            assert got == value, (name, shown)
        else:
            assert got == float(value), f"{name}: the doc says {shown}, the code {value}"
        assert len(why) > 20, f"{name}: no reason given"


def test_no_row_for_a_cut_that_is_gone():
    assert not sorted(set(_rows()) - set(_cuts()))


def test_every_cut_in_the_module_has_a_docstring():
    tree = ast.parse(Path(T.__file__).read_text())
    body = tree.body
    for i, node in enumerate(body):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            nxt = body[i + 1] if i + 1 < len(body) else None
            assert isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant), node.targets[0].id


def test_no_cut_of_its_own_in_the_report_or_the_verdicts_words():
    """The report and the sentences import their cuts: no module-level number that compares a
    share or a rate outside thresholds.py (sizes, widths and counts of rows are not cuts)."""
    cut_like = re.compile(r"^([A-Z_]+(SHARE|FRAC|FRACTION|RATIO|UTIL|BPS|THROTTLE|FAIL))\s*=\s*[0-9]", re.M)
    for path in [*(ROOT / "gpuwatch" / "report").glob("*.py"), ROOT / "gpuwatch" / "diagnosis" / "sentence.py",
                 ROOT / "gpuwatch" / "diagnosis" / "remedies.py", ROOT / "tui" / "stage_signals.py"]:
        found = cut_like.findall(path.read_text())
        assert not found, f"{path.relative_to(ROOT)} defines its own cut(s): {[f[0] for f in found]}"


def test_no_internal_section_marks_in_the_code_that_says_things():
    """Comments and strings of the diagnosis and report cite docs/THRESHOLDS.md, not a section of a
    document outside the repository."""
    for path in [*(ROOT / "gpuwatch" / "diagnosis").glob("*.py"), *(ROOT / "gpuwatch" / "report").glob("*.py")]:
        text = path.read_text()
        assert "§" not in text and "signals.md" not in text and "h200-signatures" not in text, path.name
