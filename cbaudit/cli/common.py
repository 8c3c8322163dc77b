"""What every command shares: output options, rendering, atomic writes, error handling."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path

import typer

from cbaudit.io.atomic import atomic_write
from cbaudit.io.executor import ExecutorKind
from cbaudit.model import ExitCode, InputError, Report

__all__ = ["atomic_write", "emit", "fail_input"]


class OutputFormat(StrEnum):
    """Choices of --format; keys of the reporter registry."""

    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    markdown = "markdown"
    html = "html"


FormatOpt = typer.Option(OutputFormat.text, "--format", "-f", help="Output format.")
OutputOpt = typer.Option(
    None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."
)
ExecutorOpt = typer.Option(
    ExecutorKind.local,
    "--executor",
    help="Where the independent units run: local processes, or a Ray cluster"
    " (pip install 'cbaudit[ray]').",
)
RayAddressOpt = typer.Option(
    None,
    "--ray-address",
    metavar="ADDR",
    help="The Ray cluster for --executor ray: HOST:PORT, ray://HOST:PORT or auto"
    " (default: $RAY_ADDRESS, else auto).",
)
QuietOpt = typer.Option(False, "--quiet", "-q", help="Only failures and the verdict.")
VerboseOpt = typer.Option(
    0, "--verbose", "-v", count=True, help="More detail: -v adds metrics, -vv every metric row."
)


def use_color() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def emit(
    report: Report,
    fmt: OutputFormat | str = OutputFormat.text,
    output: Path | None = None,
    quiet: bool = False,
    verbose: int = 0,
) -> int:
    """Render `report` in `fmt` to stdout or `output`; return the report's exit code."""
    from cbaudit.report import REPORTERS

    name = fmt.value if isinstance(fmt, OutputFormat) else str(fmt)
    verbosity = -1 if quiet else verbose
    color = output is None and use_color() and name == "text"
    text = REPORTERS[name](report, verbosity, color)
    if output is not None:
        atomic_write(output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return int(report.exit_code)


def fail_input(err: InputError) -> int:
    """Print located one-line messages for unusable input; exit code 2."""
    for finding in err.findings:
        sys.stderr.write(f"cbaudit: {finding.render()}\n")
    return int(ExitCode.UNUSABLE)
