"""The README stays true: it documents every command the CLI has, and no command it lacks."""

from __future__ import annotations

import re

import typer.main
from repo_paths import REPO

from cbaudit.cli.app import app


def _cli_commands() -> set[str]:
    group = typer.main.get_command(app)
    return set(group.commands)  # type: ignore[attr-defined]


def test_readme_lists_every_command() -> None:
    """Each top-level command appears as `cbaudit NAME` in the README's command table."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `cbaudit ([a-z-]+)", text, flags=re.MULTILINE))
    assert _cli_commands() == documented


def test_readme_documents_exit_codes_and_formats() -> None:
    """The exit codes 0-3 and every --format choice are documented."""
    from cbaudit.report import REPORTERS

    text = (REPO / "README.md").read_text(encoding="utf-8")
    for code in range(4):
        assert re.search(rf"^\| {code} \|", text, flags=re.MULTILINE)
    for name in REPORTERS:
        assert f"| `{name}` |" in text
