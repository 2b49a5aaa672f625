"""The report as JSON, for tools (docs/REPORT_SCHEMA.md)."""

from __future__ import annotations

import json
from typing import Any

from gpuwatch import __version__
from gpuwatch.model.codec import to_dict
from gpuwatch.report.model import REPORT_SCHEMA, Report


def report_dict(report: Report) -> dict[str, Any]:
    """``{"schema": 1, "type": "report", "gpuwatch": version, <the Report's fields>}``."""
    return {"schema": REPORT_SCHEMA, "type": "report", "gpuwatch": __version__, **to_dict(report)}


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, allow_nan=False) + "\n"
