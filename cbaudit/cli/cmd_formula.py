"""`cbaudit formula-audit REGISTRY --article FILE` and `--init --article FILE`."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

from cbaudit.cli.common import (
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    VerboseOpt,
    atomic_write,
    emit,
)
from cbaudit.formulas.audit import audit, read_article, skeleton
from cbaudit.formulas.registry import load_registry
from cbaudit.model import InputDigest, Report, UsageError


def formula_audit(
    registry: Path | None = typer.Argument(
        None, help="Formula registry (YAML or JSON); with --init, where to write the skeleton."
    ),
    article: Path | None = typer.Option(
        None, "--article", help="The article whose display equations the registry binds."
    ),
    init: bool = typer.Option(
        False, "--init", help="Write a registry skeleton from the article's display equations."
    ),
    force: bool = typer.Option(False, "--force", help="With --init, overwrite REGISTRY."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Check a formula registry: ids, plain forms, families, units, examples, article hashes."""
    if init:
        return _init(registry, article, force)
    if registry is None:
        raise UsageError("formula-audit needs a REGISTRY (or --init --article FILE)")
    reg = load_registry(registry)
    art = read_article(article) if article is not None else None
    results = audit(reg, art)
    inputs = [InputDigest(reg.document.path, reg.document.sha256)]
    if art is not None:
        inputs.append(InputDigest(art.path, art.sha256))
    summary = {
        "formulas": len(reg.formulas),
        "normalization": reg.normalization_id,
        "display_equations": len(art.equations) if art is not None else None,
    }
    report = Report.build("formula-audit", results, inputs=inputs, summary=summary)
    return emit(report, fmt, output, quiet, verbose)


def _init(target: Path | None, article: Path | None, force: bool) -> int:
    if article is None:
        raise UsageError("--init needs --article FILE")
    if target is not None and target.exists() and not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")
    data = skeleton(read_article(article))
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096)
    if target is None:
        typer.echo(text, nl=False)
    else:
        atomic_write(target, text)
        typer.echo(f"wrote {target}: {len(data['formulas'])} formulas to fill in", err=True)
    return 0


def register(app: typer.Typer) -> None:
    app.command("formula-audit")(formula_audit)
