"""Gate kind `negative_check`: a check that must fail, for a declared reason.

Any check kind can be turned into a rejection case: `check` holds the inner check (its `kind`
and fields, as they would appear in a check list; the inner id defaults to the outer id), and
`expect_code` names the finding code(s) the inner check must produce. The negative check passes
only when the inner check does not pass and every expected code appears; an inner check that
passes, fails for another reason, or could not run is reported as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.gate.context import GateContext
from cbaudit.gate.manifest import CheckSpec
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, InputError


def run_negative_check(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Run the inner check and require it to fail with the expected codes."""
    from cbaudit.gate.runner import run_check

    inner = spec.get("check")
    if not isinstance(inner, Mapping) or not isinstance(inner.get("kind"), str):
        raise InputError(
            Finding(
                "GATE.NEGATIVE.SPEC",
                "`check` must be a mapping with the inner check's `kind` and fields",
                location=ctx.location("/check"),
            )
        )
    if inner["kind"] == "negative_check":
        raise InputError(
            Finding(
                "GATE.NEGATIVE.SPEC",
                "a negative check cannot wrap another negative check",
                location=ctx.location("/check/kind"),
            )
        )
    raw = spec.get("expect_code")
    expected = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else []
    if not expected or not all(isinstance(c, str) for c in expected):
        raise InputError(
            Finding(
                "GATE.NEGATIVE.SPEC",
                "`expect_code` must name the finding code (or codes) the inner check must produce",
                location=ctx.location("/expect_code"),
            )
        )
    check_id = str(spec.get("id", "negative"))
    inner_spec = CheckSpec(
        bundle="",
        check_id=str(inner.get("id", check_id)),
        kind=str(inner["kind"]),
        spec={"id": check_id, **inner},
        base_dir=ctx.base_dir,
        manifest=ctx.manifest,
        pointer=ctx.pointer + "/check",
        bundle_root=ctx.bundle_root,
        root=ctx.root,
    )
    results = run_check(inner_spec)
    produced = {f.code for r in results for f in r.findings}
    outcomes = {r.outcome for r in results}
    evidence = results[0].evidence_class if results else EvidenceClass.DERIVED
    findings: list[Finding] = []
    status: CheckStatus | None = None
    if CheckStatus.NOT_RUN in outcomes and not produced:
        status = CheckStatus.NOT_RUN
    elif outcomes == {CheckStatus.PASSED}:
        findings.append(
            Finding(
                "GATE.NEGATIVE.NOT_REJECTED",
                f"{check_id}: the inner {inner['kind']} check passed; it must fail with "
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
                    f"{check_id}: rejected, but without {', '.join(missing)} "
                    f"(produced: {', '.join(sorted(produced)) or 'nothing'})",
                    location=ctx.location("/expect_code"),
                )
            )
    return [
        CheckResult(
            check="negative_check",
            subject=check_id,
            findings=tuple(findings),
            metrics={"expected_codes": sorted(expected), "produced_codes": sorted(produced)},
            evidence_class=evidence,
            status=status,
            reason=f"inner {inner['kind']} produced {', '.join(sorted(produced)) or 'nothing'}",
        )
    ]
