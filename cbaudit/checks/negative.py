"""Kind `negative_check`: a check that must fail, for a declared reason.

Any check kind can be turned into a rejection case: `check` holds the inner check (its `kind`
and fields, as they would appear in a check list; the inner id defaults to the outer id), and
`expect_code` names the finding code(s) the inner check must produce. The inner check is parsed
when the bundle loads, like any other (an unknown key in it is `GATE.SPEC.UNKNOWN_FIELD`; a
negative check cannot wrap another: `GATE.NEGATIVE.SPEC`). The negative check passes only when
the inner check does not pass and every expected code appears; an inner check that passes,
fails for another reason, or could not run is reported as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.checks.context import GateContext
from cbaudit.checks.execute import execute
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.parse import parse_entry
from cbaudit.checks.spec import NOT_AN_ENTRY_KEY, CheckSpec, build_spec, converted
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, InputError

NAME = "negative_check"


def codes(value: Any) -> tuple[str, ...]:
    """`expect_code` as a tuple: one code or a list of codes."""
    return (value,) if isinstance(value, str) else tuple(str(c) for c in value)


@dataclass(frozen=True, kw_only=True)
class NegativeCheckSpec(CheckSpec):
    """Fields of `negative_check` (schemas/check-negative-check.schema.json)."""

    expect_code: tuple[str, ...] = field(metadata=converted(codes))
    check: Mapping[str, Any]
    # the inner check, parsed when the bundle loads (not an entry key)
    inner_kind: CheckKind[Any] | None = field(default=None, metadata=NOT_AN_ENTRY_KEY)
    inner_spec: CheckSpec | None = field(default=None, metadata=NOT_AN_ENTRY_KEY)


def build(entry: Mapping[str, Any], ctx: GateContext) -> NegativeCheckSpec:
    """Parse the inner check at `<pointer>/check`; refuse a negative wrapping a negative."""
    spec = build_spec(NegativeCheckSpec, entry)
    inner = {"id": spec.id, **spec.check}
    if inner.get("kind") == NAME:
        raise ctx.error(
            "GATE.NEGATIVE.SPEC",
            "a negative check cannot wrap another negative check",
            "check/kind",
        )
    parsed = parse_entry(inner, ctx.at(ctx.pointer + "/check"))
    if parsed.spec is None:
        raise InputError(parsed.findings)
    return NegativeCheckSpec(
        **{k: getattr(spec, k) for k in ("id", "kind", "title", "claim", "loop")},
        evidence_class=spec.evidence_class,
        requires=spec.requires,
        consumes=spec.consumes,
        timeout_s=spec.timeout_s,
        expect_code=spec.expect_code,
        check=spec.check,
        inner_kind=parsed.kind,
        inner_spec=parsed.spec,
    )


def run(spec: NegativeCheckSpec, ctx: GateContext) -> list[CheckResult]:
    """Run the inner check and require it to fail with the expected codes."""
    assert spec.inner_kind is not None and spec.inner_spec is not None  # set by `build`
    inner = DeclaredCheck(
        bundle="",
        check_id=spec.inner_spec.id,
        kind=spec.inner_kind.name,
        entry=spec.check,
        base_dir=ctx.base_dir,
        manifest=ctx.manifest,
        pointer=ctx.pointer + "/check",
        bundle_root=ctx.bundle_root,
        root=ctx.root,
        check_kind=spec.inner_kind,
        spec=spec.inner_spec,
    )
    results = execute(inner, ctx.kinds, timeout_s=None)
    return [_verdict(spec, results, ctx)]


def _verdict(spec: NegativeCheckSpec, results: list[CheckResult], ctx: GateContext) -> CheckResult:
    expected = list(spec.expect_code)
    produced = {f.code for r in results for f in r.findings}
    outcomes = {r.outcome for r in results}
    evidence = results[0].evidence_class if results else EvidenceClass.DERIVED
    findings: list[Finding] = []
    status: CheckStatus | None = None
    inner_kind = spec.check.get("kind")
    if CheckStatus.NOT_RUN in outcomes and not produced:
        status = CheckStatus.NOT_RUN
    elif outcomes == {CheckStatus.PASSED}:
        findings.append(
            Finding(
                "GATE.NEGATIVE.NOT_REJECTED",
                f"{spec.id}: the inner {inner_kind} check passed; it must fail with "
                f"{', '.join(expected)}",
                location=ctx.location("/check"),
            )
        )
    else:
        missing = [c for c in expected if c not in produced]
        if missing:
            findings.append(
                Finding(
                    "GATE.NEGATIVE.WRONG_REASON",
                    f"{spec.id}: rejected, but without {', '.join(missing)} "
                    f"(produced: {', '.join(sorted(produced)) or 'nothing'})",
                    location=ctx.location("/expect_code"),
                )
            )
    return CheckResult(
        check=NAME,
        subject=spec.id,
        findings=tuple(findings),
        metrics={"expected_codes": sorted(expected), "produced_codes": sorted(produced)},
        evidence_class=evidence,
        status=status,
        reason=f"inner {inner_kind} produced {', '.join(sorted(produced)) or 'nothing'}",
    )


NEGATIVE_CHECK: CheckKind[NegativeCheckSpec] = CheckKind(
    name=NAME,
    spec_type=NegativeCheckSpec,
    run=run,
    summary="any check turned into a rejection case: it must fail with the declared code(s)",
    build=build,
)
