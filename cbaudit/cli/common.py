"""What every command shares: output options, rendering, atomic writes, error handling."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from enum import StrEnum
from pathlib import Path

import typer

from cbaudit.model import ExitCode, InputError, Report, UsageError


class OutputFormat(StrEnum):
    """Choices of --format; keys of the reporter registry."""

    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"


FormatOpt = typer.Option(OutputFormat.text, "--format", "-f", help="Output format.")
OutputOpt = typer.Option(
    None, "--output", "-o", help="Write the report to FILE (atomically) instead of stdout."
)
QuietOpt = typer.Option(False, "--quiet", "-q", help="Only failures and the verdict.")
VerboseOpt = typer.Option(0, "--verbose", "-v", count=True, help="More detail (metrics).")


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename over it."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{path}: output directory {parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        data = text.encode("utf-8") if isinstance(text, str) else text
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


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
