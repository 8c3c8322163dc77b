"""Gate kinds of the Loop 2 contract: `plan_case`, `negative_case` and `trace`.

Spec fields (paths relative to the declaring file):

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.contract.cases import load_case
from cbaudit.contract.codes import CODES
from cbaudit.contract.validator import check_case_data, validate_case_file, validate_trace
from cbaudit.model import CheckResult, CheckStatus, EvidenceClass, Finding, InputError, Location

if TYPE_CHECKING:
    from cbaudit.gate.context import GateContext

_CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)+$")
_EXTERNAL_PREFIXES = ("SCHEMA.", "LOAD.")


def _check_id(spec: Mapping[str, Any], ctx: GateContext) -> str:
    cid = spec.get("id")
    if not isinstance(cid, str) or not cid:
        raise InputError.at(
            "GATE.CHECK.ID", "a check needs a string id", ctx.manifest, pointer=ctx.pointer + "/id"
        )
    return cid


def _path(spec: Mapping[str, Any], ctx: GateContext, field: str) -> tuple[Path, str]:
    rel = spec.get(field)
    if not isinstance(rel, str) or not rel:
        raise InputError.at(
            "GATE.CHECK.FIELD",
            f"field {field!r} must be a relative path",
            ctx.manifest,
            pointer=f"{ctx.pointer}/{field}",
        )
    path = ctx.resolve(rel, field=field)
    return path, ctx.display(path)


def run_plan_case(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """A case that must satisfy the whole contract."""
    cid = _check_id(spec, ctx)
    path, display = _path(spec, ctx, "case")
    result, _ = validate_case_file(path, display=display, root=ctx.read_root)
    findings = list(result.findings)
    expected = spec.get("expected")
    if expected is not None and result.outcome is not CheckStatus.ERROR:
        actual = {
            "metrics": dict(result.metrics),
            "codes": sorted({f.code for f in result.findings}),
        }
        findings += ctx.expect_json(str(expected), actual, cid)
    return [
        CheckResult(
            check=cid,
            subject=display,
            findings=tuple(findings),
            metrics=result.metrics,
            evidence_class=EvidenceClass.DERIVED,
            status=result.status,
            reason=spec.get("claim") if isinstance(spec.get("claim"), str) else None,
        )
    ]


def _expect_code(spec: Mapping[str, Any], ctx: GateContext, declared: str | None) -> str:
    given = spec.get("expect_code")
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


def run_negative_case(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """A case that must be rejected with one named finding code."""
    cid = _check_id(spec, ctx)
    path, display = _path(spec, ctx, "case")
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


def run_trace(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """A JSONL trace whose every record must satisfy the contract."""
    cid = _check_id(spec, ctx)
    path, display = _path(spec, ctx, "trace")
    result = validate_trace(path, display=display)
    return [
        CheckResult(
            check=cid,
            subject=display,
            findings=result.findings,
            metrics=result.metrics,
            evidence_class=EvidenceClass.DERIVED,
            status=result.status,
        )
    ]
