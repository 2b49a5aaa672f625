"""``gpuwatch compare --format json``: the comparison for tools (docs/COMPARE.md describes it)."""

from __future__ import annotations

import json
from typing import Any

from gpuwatch import __version__
from gpuwatch.compare.diff import Comparison
from gpuwatch.model.codec import to_dict

COMPARE_SCHEMA = 1


def compare_dict(c: Comparison) -> dict[str, Any]:
    return {
        "schema": COMPARE_SCHEMA,
        "type": "compare",
        "gpuwatch": __version__,
        "before": {"path": c.before_path, **to_dict(c.before)},
        "after": {"path": c.after_path, **to_dict(c.after)},
        "notes": list(c.notes),
        "rows": [{**to_dict(r), "change": r.change, "verdict": r.verdict} for r in c.rows],
    }


def render_json(c: Comparison) -> str:
    return json.dumps(compare_dict(c), indent=2, allow_nan=False) + "\n"
