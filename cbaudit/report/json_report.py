"""Deterministic JSON: sorted keys, fixed separators, trailing newline."""

from __future__ import annotations

from cbaudit.model import Report
from cbaudit.model.canonical import dumps_canonical

__all__ = ["dumps_canonical", "render_json"]


def render_json(report: Report, verbosity: int = 0, color: bool = False) -> str:
    del verbosity, color
    return dumps_canonical(report.to_dict())
