"""The gate kind `oracle`: run one registered oracle on one fixture.

Spec fields (besides the gate's own `id`, `kind`, `title`, `claim`, `evidence_class`):

`oracle`       name in `cbaudit.oracles.registry.ORACLES` (required)
`fixture`      path of the fixture, relative to the declaring file (required)
`expected`     path of the expected report (the result's metrics, canonical JSON); compared
               with `ctx.expect_json`, rewritten by `cbaudit gate --update`
`expect_code`  a finding code, or a list of codes, that the fixture must produce: the check
               is then a negative case and passes only when every named code appears (an
               unusable fixture counts when its `InputError` carries the code). A negative
               fixture file may declare `expect_code` itself; the spec's value wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.oracles.fixtures import load_fixture
from cbaudit.oracles.registry import get_oracle, run_fixture

if TYPE_CHECKING:  # the gate imports this module; a runtime import would point upwards
    from cbaudit.gate.context import GateContext


def _spec_path(spec: Mapping[str, Any], key: str, ctx: GateContext) -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value:
        raise InputError.at(
            "ORACLE.SPEC.INVALID",
            f"`{key}` must be a non-empty string",
            ctx.manifest,
            pointer=f"{ctx.pointer}/{key}",
        )
    return value


def _expected_codes(spec: Mapping[str, Any], ctx: GateContext) -> list[str] | None:
    raw = spec.get("expect_code")
    if raw is None:
        return None
    codes = [raw] if isinstance(raw, str) else raw
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise InputError.at(
            "ORACLE.SPEC.INVALID",
            "`expect_code` must be a finding code or a non-empty list of codes",
            ctx.manifest,
            pointer=f"{ctx.pointer}/expect_code",
        )
    return list(codes)


def run_oracle(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Run `spec["oracle"]` on `spec["fixture"]`; see the module docstring for the fields."""
    check_id = str(spec.get("id", "oracle"))
    name = _spec_path(spec, "oracle", ctx)
    rel = _spec_path(spec, "fixture", ctx)
    expected = _spec_path(spec, "expected", ctx) if "expected" in spec else None
    get_oracle(name, file=ctx.manifest, pointer=f"{ctx.pointer}/oracle")
    codes = _expected_codes(spec, ctx)
    path = ctx.resolve(rel, field="fixture")
    display = str(path.relative_to(ctx.bundle_root.resolve()))
    try:
        fixture = load_fixture(path, display=display, root=ctx.bundle_root)
        if codes is None and fixture.expect_code is not None:
            codes = [fixture.expect_code]
        result = run_fixture(name, fixture)
    except InputError as err:
        if codes is None:
            raise
        observed = sorted({f.code for f in err.findings})
        declared = spec.get("evidence_class")
        negative = _negative(check_id, name, display, codes, observed, ctx, unusable=True)
        if isinstance(declared, str) and declared in {e.value for e in EvidenceClass}:
            negative = replace(negative, evidence_class=EvidenceClass(declared))
        return [negative]
    if codes is not None:
        observed = sorted({f.code for f in result.findings})
        negative = _negative(check_id, name, display, codes, observed, ctx, unusable=False)
        extra: list[Finding] = []
        if expected is not None:
            extra = ctx.expect_json(expected, dict(result.metrics), check_id)
        return [
            replace(
                negative,
                findings=(*negative.findings, *extra),
                evidence_class=result.evidence_class,
            )
        ]
    findings = list(result.findings)
    if expected is not None:
        findings.extend(ctx.expect_json(expected, dict(result.metrics), check_id))
    return [
        CheckResult(
            check=name,
            subject=check_id,
            findings=tuple(findings),
            metrics=result.metrics,
            evidence_class=result.evidence_class,
            reason=result.reason,
            artifacts={"fixture": display, **dict(result.artifacts)},
            charts=result.charts,
        )
    ]


def _negative(
    check_id: str,
    name: str,
    display: str,
    codes: list[str],
    observed: list[str],
    ctx: GateContext,
    *,
    unusable: bool,
) -> CheckResult:
    missing = [c for c in codes if c not in observed]
    findings = tuple(
        Finding(
            "ORACLE.EXPECT_CODE.MISSING",
            f"{check_id}: negative fixture {display} did not produce {code}"
            f" (observed: {', '.join(observed) or 'no findings'})",
            location=ctx.location("/expect_code"),
        )
        for code in missing
    )
    return CheckResult(
        check=name,
        subject=check_id,
        findings=findings,
        metrics={
            "negative": True,
            "expect_code": codes,
            "observed_codes": observed,
            "unusable_input": unusable,
        },
        reason=None if missing else f"rejected as declared: {', '.join(codes)}",
        artifacts={"fixture": display},
    )
