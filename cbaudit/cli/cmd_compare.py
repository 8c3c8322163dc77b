"""`cbaudit compare-results`, `cbaudit audit-registries`, `cbaudit failure-closure`."""

from __future__ import annotations

from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.io.atomic import atomic_write
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, InputDigest, Report, UsageError
from cbaudit.results.paths import resolve_input, split_selector


def _csv(value: str | None) -> frozenset[str]:
    return frozenset(x.strip() for x in (value or "").split(",") if x.strip())


def _digest(path: Path, display: str) -> InputDigest:
    return InputDigest.of(path, display=display)


def compare_results(
    a: str | None = typer.Argument(
        None, help="Result A: FILE or FILE#ID (registry:NAME#ID for shipped)."
    ),
    b: str | None = typer.Argument(None, help="Result B, compared against A."),
    registry: str | None = typer.Option(
        None, "--registry", help="Check every pair of a result registry instead of A and B."
    ),
    alpha: float = typer.Option(0.05, "--alpha", help="Significance level of the U test."),
    min_change: float = typer.Option(
        0.0, "--min-change", metavar="PCT", help="Changes smaller than PCT percent count as ~."
    ),
    fail_on: str | None = typer.Option(
        None, "--fail-on", help="Comma list of regression,incomparable: exit 1 when found."
    ),
    allow: list[str] = typer.Option(
        [], "--allow", metavar="FIELD", help="Manifest field allowed to differ (repeatable)."
    ),
    metrics_file: Path | None = typer.Option(None, "--metrics", help="Metric registry file."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Compare two results, or every pair of a registry: comparability first, then statistics.

    Exit 0 unless --fail-on names what was found (then 1); unusable input exits 2.
    """
    from cbaudit.results.compare import CompareOptions, compare_all_pairs, compare_pair
    from cbaudit.results.metrics import load_metrics
    from cbaudit.results.samples import adapt, select

    opts = CompareOptions(
        alpha=alpha, min_change=min_change / 100.0, fail_on=_csv(fail_on), allow=frozenset(allow)
    )
    metrics = load_metrics(metrics_file)
    if registry is not None:
        if a is not None or b is not None:
            raise UsageError("give either A and B or --registry, not both")
        path = resolve_input(registry)
        results, summary = compare_all_pairs(
            adapt(load_document(path, display=registry)), metrics, opts
        )
        report = Report.build("compare-results", results, [_digest(path, registry)], summary)
        return emit(report, fmt, output, quiet, verbose)
    if a is None or b is None:
        raise UsageError("compare-results needs A and B (or --registry FILE)")
    sides = []
    digests = []
    for arg in (a, b):
        raw, sel = split_selector(arg)
        path = resolve_input(raw)
        sides.append(select(adapt(load_document(path, display=raw)), sel, raw))
        digests.append(_digest(path, raw))
    results = compare_pair(sides[0], sides[1], metrics, opts)
    summary = {
        "comparable": results[0].metrics["comparable"],
        "ranking_produced": results[0].metrics["ranking_produced"],
    }
    return emit(
        Report.build("compare-results", results, digests, summary), fmt, output, quiet, verbose
    )


def audit_registries_cmd(
    contracts: str = typer.Option(
        "registry:paper_contracts.yaml", "--contracts", help="Paper-contract registry."
    ),
    results: str = typer.Option(
        "registry:source_reported_results.yaml", "--results", help="Source-reported results."
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Audit the paper-contract and source-reported-result registries (article 0x0E)."""
    from cbaudit.results.registries import audit_registries

    c_path, r_path = resolve_input(contracts), resolve_input(results)
    # a registry of the wrong shape is unusable (exit 2), not an audit failure
    c_doc = load_document(c_path, display=contracts, schema="paper-contracts")
    r_doc = load_document(r_path, display=results, schema="source-reported-results")
    audit = audit_registries(
        c_doc.data,
        r_doc.data,
        contracts_file=c_doc.path,
        results_file=r_doc.path,
        locate_contracts=c_doc.locate,
        locate_results=r_doc.locate,
    )
    result = CheckResult(
        check="audit-registries",
        subject=f"{contracts} + {results}",
        findings=audit.findings,
        metrics=dict(audit.summary),
        evidence_class=EvidenceClass.SOURCE_REPORTED,
        reason=f"{len(audit.summary['comparable_pairs'])} comparable pairs of"
        f" {audit.summary['pairs_checked']}; generic ranking allowed:"
        f" {str(audit.summary['generic_policy_ranking_allowed']).lower()}",
    )
    inputs = [_digest(c_path, contracts), _digest(r_path, results)]
    return emit(Report.build("audit-registries", [result], inputs), fmt, output, quiet, verbose)


def failure_closure_cmd(
    registry: Path = typer.Argument(..., help="The failure-closure registry (JSON)."),
    update: bool = typer.Option(False, "--update", help="Recompute the sha256 of bound files."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Check the failure-closure bindings; --update rewrites their hashes (atomically)."""
    from cbaudit.report.json_report import dumps_canonical
    from cbaudit.results.closure import audit_closure

    doc = load_document(registry, schema="failure-closure")  # wrong shape: exit 2
    base = registry.parent

    def resolve(rel: str) -> Path:
        if Path(rel).is_absolute():
            raise UsageError(f"binding path {rel!r} must be relative")
        return (base / rel).resolve()

    audit = audit_closure(
        doc.data, file=doc.path, resolve=resolve, locate=doc.locate, update=update
    )
    if update and audit.updated is not None and audit.updated != doc.data:
        atomic_write(registry, dumps_canonical(audit.updated))
    s = audit.summary
    result = CheckResult(
        check="failure-closure",
        subject=str(registry),
        findings=audit.findings,
        metrics=dict(s),
        evidence_class=EvidenceClass.DERIVED,
        reason=f"{s.get('classes')} classes, {s.get('bindings')} bindings, pending:"
        f" {s.get('pending_bindings') or 'none'}",
    )
    return emit(
        Report.build("failure-closure", [result], [_digest(registry, str(registry))]),
        fmt,
        output,
        quiet,
        verbose,
    )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("compare-results")(compare_results)
    app.command("audit-registries")(audit_registries_cmd)
    app.command("failure-closure")(failure_closure_cmd)
