"""Turn a results file into check results (one per point, plus the run as a whole).

Used by `cbaudit bench run` (after the runner process), `cbaudit bench check RESULTS` and the
gate kind. A point that failed its correctness check is FAILED with the check's code; one that
raised is FAILED with `BENCH.POINT.ERROR`; skipped points are NOT_RUN with their reason; a
noisy point carries a warning `BENCH.POINT.NOISY`. The run result carries sentinel drift
(`BENCH.SENTINEL.DRIFT`, a warning) and the fit figures.
"""

from __future__ import annotations

from typing import Any

from cbaudit.bench.results import BenchPoint, BenchResults, PointStatus
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, Location, Severity


def _loc(results: BenchResults, pointer: str) -> Location:
    return Location(file=results.path, pointer=pointer)


def point_result(results: BenchResults, p: BenchPoint) -> CheckResult:
    raw = results.data["points"][int(p.pointer.rsplit("/", 1)[1])]
    metrics: dict[str, Any] = {
        "spec": p.spec,
        "kind": p.kind,
        "tokens": p.tokens,
        "decode_rows": p.decode_rows,
        "prefill_tokens": p.prefill_tokens,
        "history_tokens": p.history_tokens,
        "backend": p.backend,
        "graph_mode": p.graph_mode,
        "median_ms": p.median_ms,
        "modeled_ms": p.roofline.get("modeled_ms_ceilings") or p.roofline.get("modeled_ms_spec"),
        "modeled_evidence_class": EvidenceClass.MODELED.value,
    }
    if p.stats:
        metrics.update(p90_ms=p.stats.get("p90_ms"), cv=p.stats.get("cv"), samples=p.stats.get("n"))
    corr = raw.get("correctness")
    if corr:
        metrics["rel_rms_err"] = corr.get("rel_rms_err")
    findings: list[Finding] = []
    status: CheckStatus | None = None
    if p.status is PointStatus.FAILED_CORRECTNESS:
        code = (corr or {}).get("code") or "BENCH.CORRECTNESS.MISMATCH"
        findings.append(
            Finding(
                code,
                raw.get("reason") or "correctness check failed",
                location=_loc(results, p.pointer + "/correctness"),
            )
        )
    elif p.status is PointStatus.ERROR:
        findings.append(
            Finding(
                "BENCH.POINT.ERROR",
                raw.get("reason") or "the backend raised",
                location=_loc(results, p.pointer),
            )
        )
    elif p.status in (PointStatus.SKIPPED_BUDGET, PointStatus.SKIPPED_MEMORY):
        status = CheckStatus.NOT_RUN
    if p.noisy:
        findings.append(
            Finding(
                "BENCH.POINT.NOISY",
                "IQR above 5% of the median after one re-measurement",
                Severity.WARNING,
                _loc(results, p.pointer + "/noisy"),
            )
        )
    return CheckResult(
        check="bench.point",
        subject=f"{p.id} {p.spec}",
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=p.evidence_class or results.evidence_class,
        status=status,
        reason=raw.get("reason") if status is CheckStatus.NOT_RUN else None,
    )


def run_result(results: BenchResults) -> CheckResult:
    """The run as a whole: label, counts, sentinel, ceilings, fits."""
    counts: dict[str, int] = {}
    for p in results.points:
        counts[p.status.value] = counts.get(p.status.value, 0) + 1
    findings: list[Finding] = []
    sent = results.sentinel or {}
    if sent.get("drift_flag"):
        findings.append(
            Finding(
                "BENCH.SENTINEL.DRIFT",
                f"sentinel {sent.get('spec')} drifted by {sent.get('drift'):.1%} over the run",
                Severity.WARNING,
                _loc(results, "/sentinel/drift"),
            )
        )
    fits = results.fits
    metrics: dict[str, Any] = {
        "label": results.label,
        "points": counts,
        "device": results.manifest["device"]["name"],
        "dtype": results.manifest["dtype"],
        "geometry": results.manifest["geometry"]["name"],
        "backend": results.manifest["backend"],
        "sentinel_drift": sent.get("drift"),
        "fits_status": fits["status"],
    }
    if fits.get("mixed"):
        metrics["mixed_mape"] = fits["mixed"]["mape"]
    if fits.get("roofline"):
        metrics["fit_mape"] = fits["roofline"]["mape_fit"]
    ceilings = results.ceilings or {}
    for name in ("copy", "gemm"):
        probe = ceilings.get(name) or {}
        if probe.get("status") == "ok":
            metrics[f"{name}_achieved"] = probe.get("achieved")
            metrics[f"{name}_fraction_of_spec"] = probe.get("fraction_of_spec")
    return CheckResult(
        check="bench.run",
        subject=results.path,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=results.evidence_class,
        reason=results.label,
    )


def results_checks(results: BenchResults) -> list[CheckResult]:
    return [run_result(results), *(point_result(results, p) for p in results.points)]


def summary_of(results: BenchResults) -> dict[str, Any]:
    return {
        "results": results.path,
        "sha256": results.sha256,
        "evidence_class": results.evidence_class.value,
        "measured_on_gpu": results.measured_on_gpu,
        "label": results.label,
        "usable_points": len(results.usable_points()),
        "points": len(results.points),
    }
