"""A campaign as check results (text/json/... via the normal reporters) and as a Stryker report.

The Stryker form follows the public mutation-testing report schema (schemaVersion "1"), so
mutation-testing-elements viewers (the Stryker dashboard, `<mutation-test-report-app>`) can
show a campaign: one file entry per fixture, one mutant per patch, the patch as replacement.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from cbaudit.model import CheckResult, EvidenceClass, Finding, Location, Severity
from cbaudit.mutate.campaign import CampaignResult, FixtureInput, MutantResult, MutantStatus

STRYKER_STATUS: Mapping[MutantStatus, str] = {
    MutantStatus.KILLED: "Killed",
    MutantStatus.KILLED_BY_OTHER: "Killed",
    MutantStatus.KILLED_BY_SCHEMA: "Killed",
    MutantStatus.SURVIVED: "Survived",
    MutantStatus.TIMEOUT: "Timeout",
    MutantStatus.ORACLE_ERROR: "RuntimeError",
    MutantStatus.EQUIVALENT: "Ignored",
}
HIGH, LOW = 100, 90  # Stryker colour thresholds: a data fixture should kill every mutant


def compact(patch: Sequence[Mapping[str, Any]]) -> str:
    """A patch in one deterministic line."""
    return json.dumps([dict(op) for op in patch], sort_keys=True, separators=(",", ":"))


def _pointer(m: MutantResult) -> str:
    return str(m.patch[0].get("path", "")) if m.patch else ""


def _locate(fixture: FixtureInput | None, m: MutantResult) -> Location:
    pointer = _pointer(m)
    if fixture is not None and fixture.locate is not None:
        loc = fixture.locate(pointer)
        return Location(file=fixture.name, pointer=pointer, line=loc.line, column=loc.column)
    return Location(file=m.fixture, pointer=pointer)


def _finding(
    m: MutantResult, fixture: FixtureInput | None, survivors_fail: bool = True
) -> Finding | None:
    where = _locate(fixture, m)
    patch = compact(m.patch)
    if m.status is MutantStatus.SURVIVED:
        return Finding(
            "MUTATE.MUTANT.SURVIVED",
            f"{m.operator}: {m.description}; the oracle accepted it (expected {m.expect})."
            f" patch: {patch}",
            severity=Severity.ERROR if survivors_fail else Severity.WARNING,
            location=where,
        )
    if m.status is MutantStatus.ORACLE_ERROR:
        return Finding(
            "MUTATE.MUTANT.ORACLE_ERROR",
            f"{m.operator}: {m.description}: {m.detail}. patch: {patch}",
            location=where,
        )
    if m.status is MutantStatus.TIMEOUT:
        return Finding(
            "MUTATE.MUTANT.TIMEOUT",
            f"{m.operator}: {m.description}: the oracle exceeded its time limit",
            severity=Severity.WARNING,
            location=where,
        )
    if m.status is MutantStatus.KILLED_BY_OTHER:
        return Finding(
            "MUTATE.MUTANT.KILLED_BY_OTHER",
            f"{m.operator}: {m.description}: rejected with {', '.join(m.codes)},"
            f" not {m.expect}. patch: {patch}",
            severity=Severity.NOTE,
            location=where,
        )
    return None


def matrix_chart(campaign: CampaignResult) -> dict[str, Any]:
    """The kill matrix as a `matrix` chart spec (cells are status names)."""
    m = campaign.matrix()
    return {
        "type": "matrix",
        "title": "Kill matrix (operator x fixture)",
        "rows": m["rows"],
        "cols": m["cols"],
        "cells": [[cell["status"] for cell in row] for row in m["cells"]],
    }


def by_operator(campaign: CampaignResult) -> dict[str, dict[str, int]]:
    """Operator -> status counts."""
    out: dict[str, dict[str, int]] = {}
    for m in campaign.mutants:
        row = out.setdefault(m.operator, {})
        row[m.status.value] = row.get(m.status.value, 0) + 1
    return {op: dict(sorted(v.items())) for op, v in out.items()}


def campaign_result(
    campaign: CampaignResult,
    fixtures: Sequence[FixtureInput],
    *,
    subject: str,
    min_score: float | None = None,
    survivors_fail: bool = True,
    check: str = "mutation",
) -> CheckResult:
    """One result for a campaign: score, counts, kill matrix, and a finding per survivor."""
    by_name = {f.name: f for f in fixtures}
    findings: list[Finding] = []
    for fixture, codes in sorted(campaign.baseline.items()):
        findings.append(
            Finding(
                "MUTATE.BASELINE.NOT_CLEAN",
                f"the unmutated fixture already produces {', '.join(codes)};"
                " only new codes count against its mutants",
                location=Location(file=fixture, pointer=""),
            )
        )
    for m in campaign.mutants:
        f = _finding(m, by_name.get(m.fixture), survivors_fail)
        if f is not None:
            findings.append(f)
    score = campaign.score
    if min_score is not None and score is not None and score < min_score:
        findings.append(
            Finding(
                "MUTATE.SCORE.BELOW_BREAK",
                f"mutation score {score}% is below the required {min_score}%",
                location=Location(file=subject),
            )
        )
    if not campaign.mutants:
        findings.append(
            Finding(
                "MUTATE.NO_MUTANTS",
                "no operator applies to the fixtures: nothing was tested",
                location=Location(file=subject),
            )
        )
    counts = campaign.counts()
    metrics = {
        "seed": campaign.seed,
        "fixtures": list(campaign.fixtures),
        "operators": len(campaign.operators),
        "mutants": len(campaign.mutants),
        "counts": counts,
        "valid": campaign.valid,
        "detected": campaign.detected,
        "score": score,
        "min_score": min_score,
        "by_operator": by_operator(campaign),
        "matrix": campaign.matrix(),
        "survivors": [m.to_dict() for m in campaign.survivors()],
        "oracle_errors": [m.to_dict() for m in campaign.errors()],
    }
    reason = (
        f"score {score}% ({campaign.detected}/{campaign.valid} detected;"
        f" {counts['killed']} killed as declared, {counts['killed_by_other']} by another code,"
        f" {counts['killed_by_schema']} by the schema, {counts['survived']} survived,"
        f" {counts['equivalent']} equivalent)"
    )
    return CheckResult(
        check=check,
        subject=subject,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        reason=reason,
        charts=(matrix_chart(campaign),),
    )


def stryker_report(
    campaign: CampaignResult,
    fixtures: Sequence[FixtureInput],
    *,
    break_at: float | None = None,
) -> dict[str, Any]:
    """The campaign in the public mutation-testing report schema (schemaVersion "1")."""
    by_name = {f.name: f for f in fixtures}
    files: dict[str, Any] = {}
    for n, m in enumerate(campaign.mutants, start=1):
        fixture = by_name.get(m.fixture)
        entry = files.setdefault(
            m.fixture,
            {
                "language": "yaml" if m.fixture.endswith((".yaml", ".yml")) else "json",
                "source": fixture.source if fixture is not None else "",
                "mutants": [],
            },
        )
        loc = _locate(fixture, m)
        line, column = loc.line or 1, loc.column or 1
        reason = m.detail or (", ".join(m.codes) if m.codes else "no finding")
        entry["mutants"].append(
            {
                "id": str(n),
                "mutatorName": m.operator,
                "description": f"{m.description} (expects {m.expect})",
                "replacement": compact(m.patch),
                "location": {
                    "start": {"line": line, "column": column},
                    "end": {"line": line, "column": column + 1},
                },
                "status": STRYKER_STATUS[m.status],
                "statusReason": f"{m.status.value}: {reason}",
            }
        )
    return {
        "schemaVersion": "1",
        "thresholds": {
            "high": HIGH,
            "low": LOW,
            **({"break": break_at} if break_at is not None else {}),
        },
        "projectRoot": ".",
        "config": {"seed": campaign.seed, "tool": "cbaudit mutate"},
        "files": files,
    }
