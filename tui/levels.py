"""Verdict levels to words, glyphs and TCSS classes (colours live in gpuwatch.tcss only)."""

from __future__ import annotations

from gpuwatch.model.verdict import LEVEL_BOTTLENECK, LEVEL_NA, LEVEL_OK, LEVEL_WARNING

LEVEL_CLASSES = {LEVEL_OK: "-ok", LEVEL_WARNING: "-warning", LEVEL_BOTTLENECK: "-bottleneck", LEVEL_NA: "-na"}
"""The class a widget carries for each level."""

LEVEL_WAITING = "waiting"
"""No verdict yet (before the first frame): not "ok", which would claim a judgement."""

LEVEL_GLYPHS = {LEVEL_OK: "✓", LEVEL_WARNING: "▲", LEVEL_BOTTLENECK: "■", LEVEL_NA: "–", LEVEL_WAITING: "·"}
"""A shape per level, so the level reads without colour (NO_COLOR, colour-blind users). Evidence
items have marks of their own (diagnosis.evidence.EVIDENCE_MARKS): a met cut is not an ok stage.
n/a's dash is the mark of an evidence item that does not apply, which is what all of its items are."""

LEVEL_WORDS = {LEVEL_OK: "ok", LEVEL_WARNING: "warning", LEVEL_BOTTLENECK: "BOTTLENECK", LEVEL_NA: "n/a",
               LEVEL_WAITING: "no data yet"}


def set_level(widget, level: str) -> None:
    """Give ``widget`` exactly one of the level classes."""
    for lv, cls in LEVEL_CLASSES.items():
        widget.set_class(lv == level, cls)
