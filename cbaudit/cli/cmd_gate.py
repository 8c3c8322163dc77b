"""`cbaudit gate DIR...`: run every check the evidence bundles declare."""

# No `from __future__ import annotations` here: Typer reads each option's annotation when
# the command is built, and a string annotation costs an eval (issue 13, start-up).

import os
import sys
from pathlib import Path

import typer

from cbaudit.cli.common import (
    ExecutorOpt,
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RayAddressOpt,
    VerboseOpt,
    atomic_write,
    emit,
)
from cbaudit.io.executor import ExecutorKind
from cbaudit.report.sarif import SarifLevel


def gate(
    dirs: list[Path] = typer.Argument(..., help="Evidence directories (or bundle folders)."),
    jobs: int = typer.Option(
        None, "--jobs", "-j", min=1, help="Parallel processes (default: CPUs, at most 8)."
    ),
    update: bool = typer.Option(
        False, "--update", help="Rewrite expected outputs that no longer match (atomically)."
    ),
    select: str = typer.Option(None, "--select", "-k", help="Only checks whose id contains TEXT."),
    check_timeout: float = typer.Option(
        600.0,
        "--check-timeout",
        min=0.001,
        help="Seconds one check may run before it is stopped (GATE.CHECK.TIMEOUT); a check's"
        " own timeout_s wins.",
    ),
    root: Path = typer.Option(
        None,
        "--root",
        help="Let checks also read in DIR, a folder holding the bundle (overrides a bundle's"
        " own `root:`); without either a check reads only inside its bundle.",
    ),
    executor_kind: ExecutorKind = ExecutorOpt,
    ray_address: str | None = RayAddressOpt,
    markdown: Path = typer.Option(None, "--markdown", help="Also write a Markdown report."),
    html: Path = typer.Option(None, "--html", help="Also write a self-contained HTML report."),
    junit: Path = typer.Option(None, "--junit", help="Also write JUnit XML."),
    sarif: Path = typer.Option(None, "--sarif", help="Also write SARIF 2.1.0."),
    sarif_level: SarifLevel = typer.Option(
        SarifLevel.ERROR,
        "--sarif-level",
        help="Least severe SARIF result: error (failed and errored checks' errors), warning"
        " (also their warnings, and not-run checks), note (also their notes).",
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Run the checks declared by each bundle.yaml under DIR; exit 0 pass, 1 fail, 2 unusable."""
    from cbaudit.cli.progress import progress_bar
    from cbaudit.gate.runner import default_jobs, run_gate
    from cbaudit.io.executor import make_executor
    from cbaudit.report import REPORTERS
    from cbaudit.report.sarif import render_sarif

    executor = make_executor(executor_kind, jobs or default_jobs(), ray_address)
    try:
        with progress_bar("gate", "checks", quiet=quiet) as progress:
            report = run_gate(
                dirs,
                jobs=jobs,
                update=update,
                select=select,
                check_timeout=check_timeout,
                root=root,
                progress=progress,
                executor=executor,
            )
    finally:
        executor.close()
    for path, name in ((markdown, "markdown"), (html, "html"), (junit, "junit")):
        if path is not None:
            atomic_write(path, REPORTERS[name](report, 1, False))
    if sarif is not None:
        atomic_write(sarif, render_sarif(report, level=sarif_level))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from cbaudit.checks.bundle import discover, load_bundle
        from cbaudit.gate.locations import repository_paths
        from cbaudit.kinds import KINDS
        from cbaudit.report.github import step_summary, workflow_annotations

        bundles = {load_bundle(b, KINDS, permit=root).name: b for b in discover(dirs)}
        workspace = Path(os.environ.get("GITHUB_WORKSPACE") or ".")
        relpath = repository_paths(bundles, workspace)
        sys.stderr.write(workflow_annotations(report, relpath=relpath))
        summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_path:
            with open(summary_path, "a", encoding="utf-8") as fh:
                fh.write(step_summary(report))
    if fmt is OutputFormat.sarif:  # --sarif-level applies to `-f sarif` as to `--sarif FILE`
        text = render_sarif(report, level=sarif_level)
        if output is not None:
            atomic_write(output, text)
        else:
            sys.stdout.write(text)
        return int(report.exit_code)
    return emit(report, fmt, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
