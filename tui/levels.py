"""Verdict levels to words, glyphs and TCSS classes (colours live in gpuwatch.tcss only)."""

from __future__ import annotations

from gpuwatch.model.verdict import LEVEL_BOTTLENECK, LEVEL_OK, LEVEL_WARNING

LEVEL_CLASSES = {LEVEL_OK: "-ok", LEVEL_WARNING: "-warning", LEVEL_BOTTLENECK: "-bottleneck"}
"""The class a widget carries for each level."""

LEVEL_GLYPHS = {LEVEL_OK: "✓", LEVEL_WARNING: "▲", LEVEL_BOTTLENECK: "■"}
"""A shape per level, so the level reads without colour (NO_COLOR, colour-blind users)."""

LEVEL_WORDS = {LEVEL_OK: "ok", LEVEL_WARNING: "warning", LEVEL_BOTTLENECK: "BOTTLENECK"}


def set_level(widget, level: str) -> None:
    """Give ``widget`` exactly one of the level classes."""
    for lv, cls in LEVEL_CLASSES.items():
        widget.set_class(lv == level, cls)
