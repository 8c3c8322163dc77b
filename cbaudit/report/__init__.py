"""Renderers: each turns a Report into text. They import only the result model.

Each entry of `REPORTERS` imports its renderer's module when it first renders, so a command
that prints text does not load the HTML, SARIF or JUnit writers (issue 13, fast start).
"""

from collections.abc import Callable

from cbaudit.model import Report

Renderer = Callable[[Report, int, bool], str]
"""(report, verbosity, color) -> text. verbosity: -1 quiet, 0 normal, 1+ verbose."""


def _text(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.text import render_text

    return render_text(report, verbosity, color)


def _json(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.json_report import render_json

    return render_json(report, verbosity, color)


def _junit(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.junit import render_junit

    return render_junit(report, verbosity, color)


def _sarif(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.sarif import render_sarif

    return render_sarif(report, verbosity, color)


def _markdown(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.markdown import render_markdown

    return render_markdown(report, verbosity, color)


def _html(report: Report, verbosity: int = 0, color: bool = False) -> str:
    from cbaudit.report.html import render_html

    return render_html(report, verbosity, color)


REPORTERS: dict[str, Renderer] = {
    "text": _text,
    "json": _json,
    "junit": _junit,
    "sarif": _sarif,
    "markdown": _markdown,
    "html": _html,
}


def register_reporter(name: str, renderer: Renderer) -> None:
    """Add a renderer; refuses duplicates."""
    if name in REPORTERS:
        raise ValueError(f"reporter {name!r} is already registered")
    REPORTERS[name] = renderer


__all__ = ["REPORTERS", "Renderer", "register_reporter"]
