"""`cbaudit new bundle NAME [--article FILE] [--dir PARENT]`: scaffold an evidence bundle.

Parses the options, builds the files (`cbaudit.gate.scaffold.bundle_files`), writes them
atomically and says what it wrote. The bundle passes `cbaudit gate` as generated.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cbaudit.model import UsageError

new_app = typer.Typer(
    help="Scaffold new evidence: `new bundle NAME` writes a bundle that passes the gate.",
    no_args_is_help=True,
)


@new_app.command("bundle")
def bundle(
    name: str = typer.Argument(..., help="The bundle's name (lower case: a-z 0-9 . _ -)."),
    article: Path | None = typer.Option(
        None, "--article", help="The document the bundle checks: its sha256 is recorded."
    ),
    parent: Path = typer.Option(
        Path("."), "--dir", help="The folder to create the bundle in (default: here)."
    ),
) -> int:
    """Write NAME/ (bundle.yaml, claims/checks.yaml, a README); refuse an existing folder."""
    from cbaudit.gate.scaffold import bundle_files, write_bundle
    from cbaudit.io.limits import resolve_max_bytes
    from cbaudit.io.loader import read_bounded

    try:
        files = bundle_files(name)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if article is not None:  # a located exit 2 for a missing, unreadable or huge article
        raw = read_bounded(article, str(article), resolve_max_bytes())
        files = bundle_files(name, article, raw)
    target = write_bundle(parent, name, files)
    typer.echo(f"wrote {target}/: {', '.join(sorted(files))}", err=True)
    typer.echo(f"next: cbaudit gate {target}", err=True)
    return 0


def register(app: typer.Typer) -> None:
    """Add `new` and its subcommands to the app."""
    app.add_typer(new_app, name="new")
