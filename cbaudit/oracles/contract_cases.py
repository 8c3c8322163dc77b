"""Loop 2 (article 0x01A): the plan/result contract as check kinds `plan_case`,
`negative_case` and `trace`.

Spec fields (paths relative to the declaring file; schemas/check-<kind>.schema.json):

- `plan_case`: `case` (a plain or patch case file), optional `expected` (a JSON file holding
  the case's metrics and finding codes; drift is `GATE.EXPECTED.DRIFT`). Passes when the case
  has no error finding.
- `negative_case`: `case`, and `expect_code` here or in the patch file (they must agree).
  Passes when the case produces a finding with that code; fails with
  `CASE.EXPECT_CODE.NOT_PRODUCED` otherwise.
- `trace`: `trace` (a JSONL trace). Passes when every record satisfies the contract.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, FixtureFile, Mutation, Target, Verdict
from cbaudit.checks.spec import CheckSpec
from cbaudit.checks.targets import error_codes, schema_codes
from cbaudit.io.schemas import is_valid

if TYPE_CHECKING:
    from cbaudit.contract.issues import RecordKind
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, InputError, Location

_CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+$")
_EXTERNAL_PREFIXES = ("SCHEMA.", "LOAD.")


@dataclass(frozen=True, kw_only=True)
class PlanCaseSpec(CheckSpec):
    """Fields of `plan_case`."""

    case: str
    expected: str | None = None


@dataclass(frozen=True, kw_only=True)
class NegativeCaseSpec(CheckSpec):
    """Fields of `negative_case`."""

    case: str
    expect_code: str | None = None


@dataclass(frozen=True, kw_only=True)
class TraceSpec(CheckSpec):
    """Fields of `trace`."""

    trace: str


def run_plan_case(spec: PlanCaseSpec, ctx: GateContext) -> list[CheckResult]:
    """A case that must satisfy the whole contract."""
    from cbaudit.contract.validator import validate_case_file

    path = ctx.resolve(spec.case, field="case")
    display = ctx.display(path)
    result, _ = validate_case_file(path, display=display, root=ctx.read_root)
    findings = list(result.findings)
    if spec.expected is not None and result.outcome is not CheckStatus.ERROR:
        actual = {
            "metrics": dict(result.metrics),
            "codes": sorted({f.code for f in result.findings}),
        }
        findings += ctx.expect_json(spec.expected, actual, spec.id)
    return [
        CheckResult(
            check=spec.id,
            subject=display,
            findings=tuple(findings),
            metrics=result.metrics,
            evidence_class=EvidenceClass.DERIVED,
            status=result.status,
            reason=spec.claim,
        )
    ]


def _expect_code(spec: NegativeCaseSpec, ctx: GateContext, declared: str | None) -> str:
    from cbaudit.contract.codes import CODES

    given = spec.expect_code
    pointer = f"{ctx.pointer}/expect_code"
    if given is not None and declared is not None and given != declared:
        raise InputError.at(
            "CASE.EXPECT_CODE.CONFLICT",
            f"check expects {given!r} but the case file declares {declared!r}",
            ctx.manifest,
            pointer=pointer,
        )
    code = given if given is not None else declared
    if not isinstance(code, str) or not _CODE_RE.match(code):
        raise InputError.at(
            "CASE.EXPECT_CODE.MISSING",
            "a negative case needs an upper-case dotted expect_code",
            ctx.manifest,
            pointer=pointer,
        )
    if code not in CODES and not code.startswith(_EXTERNAL_PREFIXES):
        raise InputError.at(
            "CASE.EXPECT_CODE.UNKNOWN",
            f"{code!r} is not a contract finding code (see cbaudit/contract/codes.py)",
            ctx.manifest,
            pointer=pointer,
        )
    return code


def run_negative_case(spec: NegativeCaseSpec, ctx: GateContext) -> list[CheckResult]:
    """A case that must be rejected with one named finding code."""
    from cbaudit.contract.cases import load_case
    from cbaudit.contract.validator import check_case_data

    cid = spec.id
    path = ctx.resolve(spec.case, field="case")
    display = ctx.display(path)
    case = load_case(path, display=display, root=ctx.read_root)
    code = _expect_code(spec, ctx, case.expect_code)
    if case.error is not None:
        produced: list[Finding] = list(case.error)
    else:
        produced, _, _ = check_case_data(case.data, file=display, locate=case.locate)
    codes = sorted({f.code for f in produced})
    metrics = {"expect_code": code, "codes": codes}
    if code in codes:
        return [
            CheckResult(
                check=cid,
                subject=display,
                metrics=metrics,
                evidence_class=EvidenceClass.DERIVED,
                reason=case.why,
            )
        ]
    if case.error is not None:
        return [
            CheckResult(
                check=cid,
                subject=display,
                findings=case.error,
                metrics=metrics,
                evidence_class=EvidenceClass.DERIVED,
                status=CheckStatus.ERROR,
            )
        ]
    missing = Finding(
        "CASE.EXPECT_CODE.NOT_PRODUCED",
        f"expected {code} but the case produced {codes or 'no finding'}",
        location=Location(file=display, pointer="/expect_code"),
    )
    return [
        CheckResult(
            check=cid,
            subject=display,
            findings=(missing,),
            metrics=metrics,
            evidence_class=EvidenceClass.DERIVED,
        )
    ]


def run_trace(spec: TraceSpec, ctx: GateContext) -> list[CheckResult]:
    """A JSONL trace whose every record must satisfy the contract."""
    from cbaudit.contract.validator import validate_trace

    path = ctx.resolve(spec.trace, field="trace")
    display = ctx.display(path)
    result = validate_trace(path, display=display)
    return [
        CheckResult(
            check=spec.id,
            subject=display,
            findings=result.findings,
            metrics=result.metrics,
            evidence_class=EvidenceClass.DERIVED,
            status=result.status,
        )
    ]


# --- mutation: valid cases are fixtures a campaign mutates, judged by the contract validator

_ONLINE: tuple[RecordKind, ...] = ("state", "plan", "result")


def _plan_case_matches(data: Mapping[str, Any]) -> bool:
    return data.get("kind") == "plan_case" or (
        "workload" in data and "state" in data and "plan" in data and "patch" not in data
    )


def _plan_case_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    """`check_case_data`, with the detailed (slow) schema report replaced by its codes."""
    from cbaudit.contract.leaks import scan_leaks, strip_leaks
    from cbaudit.contract.validator import check_case_data

    if is_valid(data, "plan-case"):
        findings, unusable, _ = check_case_data(data)
        return Verdict(error_codes(findings), unusable)
    leaks = []
    for record in _ONLINE:
        part = data.get(record)
        if part is not None:
            leaks += scan_leaks(part, record)
    stripped = data
    if leaks:
        stripped = {k: (strip_leaks(v) if k in _ONLINE else v) for k, v in data.items()}
        if is_valid(stripped, "plan-case"):
            findings, unusable, _ = check_case_data(data)
            return Verdict(error_codes(findings), unusable)
    codes = frozenset(i.code for i in leaks) | schema_codes(stripped, "plan-case")
    return Verdict(codes, unusable=True)


PLAN_CASE_TARGET = Target(
    "plan-case",
    "2",
    "Loop 2 workload/state/plan/result case (the plan/result contract validator)",
    _plan_case_matches,
    _plan_case_evaluate,
)


def _case_fixture(spec: PlanCaseSpec, ctx: GateContext) -> list[FixtureFile]:
    """A valid case is a fixture a campaign mutates (judged by the contract validator)."""
    path = ctx.resolve(spec.case, field="case")
    return [FixtureFile(path, ctx.display(path))]


PLAN_CASE: CheckKind[PlanCaseSpec] = CheckKind(
    name="plan_case",
    spec_type=PlanCaseSpec,
    run=run_plan_case,
    summary="Loop 2: a workload/state/plan/result case that must satisfy the whole contract",
    mutation=Mutation(targets=(PLAN_CASE_TARGET,), fixtures=_case_fixture),
)
NEGATIVE_CASE: CheckKind[NegativeCaseSpec] = CheckKind(
    name="negative_case",
    spec_type=NegativeCaseSpec,
    run=run_negative_case,
    summary="Loop 2: a case that must be rejected with one named contract finding code",
)
TRACE: CheckKind[TraceSpec] = CheckKind(
    name="trace",
    spec_type=TraceSpec,
    run=run_trace,
    summary="Loop 2: a JSONL trace whose every record must satisfy the contract",
)
