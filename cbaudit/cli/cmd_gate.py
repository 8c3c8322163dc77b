"""`cbaudit gate DIR...`: run every check the evidence bundles declare."""

from __future__ import annotations

from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit


def gate(
    dirs: list[Path] = typer.Argument(..., help="Evidence directories (or bundle folders)."),
    jobs: int = typer.Option(None, "--jobs", "-j", help="Parallel processes (default: CPUs)."),
    update: bool = typer.Option(
        False, "--update", help="Rewrite expected outputs that no longer match (atomically)."
    ),
    select: str = typer.Option(None, "--select", "-k", help="Only checks whose id contains TEXT."),
    fmt: OutputFormat = FormatOpt,
    output: Path = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Run the checks declared by each bundle.yaml under DIR; exit 0 pass, 1 fail, 2 unusable."""
    from cbaudit.gate.runner import run_gate

    report = run_gate(dirs, jobs=jobs, update=update, select=select)
    return emit(report, fmt, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
