"""Deterministic JSON: sorted keys, fixed separators, trailing newline."""

from __future__ import annotations

import json
from typing import Any

from cbaudit.model import Report


def dumps_canonical(value: Any) -> str:
    """The one JSON spelling cbaudit writes: sorted keys, two-space indent, newline."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_json(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del verbosity, color
    return dumps_canonical(report.to_dict())
