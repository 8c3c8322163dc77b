"""Renderers: each turns a Report into text. They import only the result model."""

from collections.abc import Callable

from cbaudit.model import Report
from cbaudit.report.html import render_html
from cbaudit.report.json_report import render_json
from cbaudit.report.junit import render_junit
from cbaudit.report.markdown import render_markdown
from cbaudit.report.sarif import render_sarif
from cbaudit.report.text import render_text

Renderer = Callable[[Report, int, bool], str]
"""(report, verbosity, color) -> text. verbosity: -1 quiet, 0 normal, 1+ verbose."""

REPORTERS: dict[str, Renderer] = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "sarif": render_sarif,
    "markdown": render_markdown,
    "html": render_html,
}


def register_reporter(name: str, renderer: Renderer) -> None:
    """Add a renderer; refuses duplicates."""
    if name in REPORTERS:
        raise ValueError(f"reporter {name!r} is already registered")
    REPORTERS[name] = renderer


__all__ = ["REPORTERS", "Renderer", "register_reporter"]
