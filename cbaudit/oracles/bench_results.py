"""Measured evidence (`cbaudit bench`) as check kind `bench_results`: a results file.

Spec fields (schemas/check-bench-results.schema.json; besides the common ones):

* `results` (required): path of a results file, relative to the declaring file;
* `require_measured_gpu` (bool, default false): the claim needs GPU measurements; a file
  without them makes the check NOT_RUN (never passed);
* `min_ok_points` (int, default 1): at least this many points must be measured and checked
  (`BENCH.GATE.TOO_FEW_POINTS`);
* `max_mixed_mape` (number, optional): the roofline fitted on pure points must predict the
  mixed points within this mean absolute percentage error, as a fraction
  (`BENCH.GATE.MIXED_MAPE`); needs GPU results, else NOT_RUN.

Any point that failed its correctness check fails the check with that point's code. The
result's evidence class is the file's (`measured_cpu` or `measured_gpu`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec
from cbaudit.model import CheckResult, CheckStatus, Finding

if TYPE_CHECKING:
    from cbaudit.bench.results import BenchResults


@dataclass(frozen=True, kw_only=True)
class BenchResultsSpec(CheckSpec):
    """Fields of `bench_results`."""

    results: str
    require_measured_gpu: bool = False
    min_ok_points: int = 1
    max_mixed_mape: float | None = None


def run_bench_attached(spec: BenchResultsSpec, ctx: GateContext) -> list[CheckResult]:
    """Validate a results file and report what it is worth (see the module docstring)."""
    from cbaudit.bench.checks import point_result, summary_of
    from cbaudit.bench.results import load_results

    rel, max_mape, min_ok = spec.results, spec.max_mixed_mape, spec.min_ok_points
    path = ctx.resolve(rel, field="results")
    results = load_results(path, display=rel)
    subject = spec.id
    summary = summary_of(results)
    if (spec.require_measured_gpu or max_mape is not None) and not results.measured_on_gpu:
        return [
            CheckResult(
                check="bench_results",
                subject=subject,
                metrics=summary,
                evidence_class=spec.evidence_class or results.evidence_class,
                status=CheckStatus.NOT_RUN,
                reason=f"needs GPU measurements; {rel} is {results.label}",
                artifacts={"results": rel, "results_sha256": results.sha256},
            )
        ]
    findings: list[Finding] = []
    for p in results.points:
        res = point_result(results, p)
        if res.outcome is CheckStatus.FAILED:
            findings.extend(f for f in res.findings if f.severity.value == "error")
    usable = len(results.usable_points())
    if usable < min_ok:
        findings.append(
            Finding(
                "BENCH.GATE.TOO_FEW_POINTS",
                f"{usable} measured and checked points, the check needs {min_ok}",
                location=ctx.location("/min_ok_points"),
            )
        )
    metrics: dict[str, Any] = dict(summary)
    if max_mape is not None:
        mixed = results.fits.get("mixed") or {}
        got = mixed.get("mape")
        metrics["mixed_mape"] = got
        if results.fits["status"] != "ok" or got is None:
            findings.append(
                Finding(
                    "BENCH.GATE.MIXED_MAPE",
                    f"no mixed-point MAPE in the fits ({results.fits.get('reason')})",
                    location=ctx.location("/max_mixed_mape"),
                )
            )
        elif got > max_mape:
            findings.append(
                Finding(
                    "BENCH.GATE.MIXED_MAPE",
                    f"roofline fitted on pure points misses mixed points by {got:.1%}"
                    f" (limit {max_mape:.1%})",
                    location=ctx.location("/max_mixed_mape"),
                )
            )
    return [
        CheckResult(
            check="bench_results",
            subject=subject,
            findings=tuple(findings),
            metrics=metrics,
            evidence_class=results.evidence_class,
            reason=results.label,
            artifacts={"results": rel, "results_sha256": results.sha256},
            charts=(step_time_chart(results, subject),),
        )
    ]


def step_time_chart(results: BenchResults, subject: str) -> dict[str, Any]:
    """Measured step time against tokens in the step, with the roofline fit where it ran."""
    points = [[p.tokens, p.median_ms] for p in results.usable_points() if p.median_ms is not None]
    chart: dict[str, Any] = {
        "type": "scatter",
        "title": f"{subject}: step time vs tokens ({results.evidence_class.value})",
        "x_label": "tokens in the step",
        "y_label": "median step time (ms)",
        "points": sorted(points),
    }
    mixed = (results.fits.get("mixed") or {}) if results.fits.get("status") == "ok" else {}
    by_id = {p.id: p for p in results.usable_points()}
    line = sorted(
        [by_id[e["id"]].tokens, e["predicted_ms"]]
        for e in mixed.get("per_point", [])
        if e.get("id") in by_id
    )
    if line:
        chart["line"] = line
        chart["line_label"] = "roofline prediction"
    return chart


BENCH_RESULTS: CheckKind[BenchResultsSpec] = CheckKind(
    name="bench_results",
    spec_type=BenchResultsSpec,
    run=run_bench_attached,
    summary="a results file of the mixed-step runner as measured evidence",
)
