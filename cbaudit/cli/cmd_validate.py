"""`cbaudit validate-plan [CASE...] [--trace FILE]`: the Loop 2 plan/result contract."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.contract.validator import validate_case_file, validate_trace
from cbaudit.model import CheckResult, InputDigest, Report, UsageError


def run_validate_plan(cases: list[Path], traces: list[Path]) -> Report:
    """Validate every case and trace; a broken file is an ERROR result, never an abort."""
    results: list[CheckResult] = []
    inputs: list[InputDigest] = []
    for path in cases:
        result, files = validate_case_file(path, display=str(path))
        results.append(result)
        inputs += [InputDigest.of(f, display=_display(f, path)) for f in files if f.is_file()]
    for path in traces:
        results.append(validate_trace(path, display=str(path)))
        if path.is_file():
            inputs.append(_streamed_digest(path))
    summary = {"cases": len(cases), "traces": len(traces)}
    return Report.build("validate-plan", results, inputs, summary)


def _streamed_digest(path: Path) -> InputDigest:
    """sha256 of a (possibly huge) trace in 1 MiB chunks, so memory stays flat."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return InputDigest(path=str(path), sha256=digest.hexdigest())


def _display(file: Path, given: Path) -> str:
    return str(given) if file == given else os.path.normpath(file)


def validate_plan_cmd(
    cases: list[Path] = typer.Argument(
        None, help="Plan-case files (JSON or YAML): plain cases or {base, patch} negatives."
    ),
    trace: list[Path] = typer.Option(
        [], "--trace", "-t", help="A JSONL trace of workload/state/plan/result records."
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Check plan cases and traces against the scheduler contract (article 0x01A).

    Exit codes: 0 every record satisfies the contract, 1 contract findings,
    2 an input is unusable (unreadable, malformed or of the wrong shape).
    """
    case_list = list(cases or [])
    if not case_list and not trace:
        raise UsageError("validate-plan needs at least one CASE or --trace FILE")
    report = run_validate_plan(case_list, list(trace))
    return emit(report, fmt, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    """Add `validate-plan` to the app."""
    app.command("validate-plan")(validate_plan_cmd)
