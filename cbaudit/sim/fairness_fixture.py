"""Fixture loading and negative-case handling shared by the Loop 8 and Loop 9 gate kinds.

A fixture is a JSON or YAML mapping. A negative fixture may instead be a patch over a base:

    base: ../preemption_resume.yaml     # relative to this file, inside the bundle
    patch: [ {op: replace, path: /cases/0/declared/outcome, value: pending} ]   # RFC 6902
    expect_code: RESUME.TICKET.MISSING  # or a list; the gate check may declare it instead
    why: one line

Findings about a patched fixture point at the negative file with the pointer into the patched
document. The gate-kind helper `run_fixture_check` turns an evaluator into a kind function:
spec fields `fixture` (required), `expected` (the expected report, compared canonically) and
`expect_code` (a code or list of codes that must all appear: the check is then negative).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location

if TYPE_CHECKING:  # the gate imports these modules; a runtime import would point upwards
    from cbaudit.gate.context import GateContext

Locator = Callable[[str], Location]


@dataclass(frozen=True)
class LoadedFixture:
    data: Mapping[str, Any]
    path: str
    sha256: str
    locate: Locator
    expect_code: tuple[str, ...] = ()


def _codes(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(c, str) for c in raw):
        return tuple(raw)
    return ()


def load_fixture(path: Path, *, display: str, root: Path) -> LoadedFixture:
    """Load `path`, resolving a `base` + `patch` negative fixture (the base stays in `root`)."""
    doc = load_document(path, display=display)
    data = doc.data
    if not (isinstance(data, Mapping) and "base" in data and "patch" in data):
        return LoadedFixture(data, display, doc.sha256, doc.locate)
    base_rel = data["base"]
    if not isinstance(base_rel, str) or not isinstance(data["patch"], list):
        raise InputError.at(
            "FIXTURE.PATCH.INVALID", "base must be a path and patch a list", display, pointer=""
        )
    base_path = (path.parent / base_rel).resolve()
    if root.resolve() not in base_path.parents:
        raise InputError.at(
            "FIXTURE.BASE.ESCAPE",
            f"base {base_rel!r} lies outside {root}",
            display,
            pointer="/base",
        )
    base_doc = load_document(base_path, display=str(Path(display).parent / base_rel))
    if isinstance(base_doc.data, Mapping) and "patch" in base_doc.data:
        raise InputError.at(
            "FIXTURE.BASE.NESTED", "a base must be a plain fixture", display, pointer="/base"
        )
    try:
        patched = apply_patch(base_doc.data, data["patch"])
    except PatchError as err:
        raise InputError(
            Finding("FIXTURE.PATCH.INVALID", str(err), location=doc.locate(f"/patch/{err.index}"))
        ) from err
    if not isinstance(patched, Mapping):
        raise InputError.at(
            "FIXTURE.PATCH.INVALID", "the patched fixture is not a mapping", display
        )

    def locate(pointer: str) -> Location:
        return Location(file=display, pointer=pointer)

    return LoadedFixture(patched, display, doc.sha256, locate, _codes(data.get("expect_code")))


Evaluator = Callable[[LoadedFixture], CheckResult]


def _spec_str(spec: Mapping[str, Any], key: str, ctx: GateContext, code: str) -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value:
        raise InputError.at(
            code,
            f"`{key}` must be a non-empty string",
            ctx.manifest,
            pointer=f"{ctx.pointer}/{key}",
        )
    return value


def run_fixture_check(
    spec: Mapping[str, Any],
    ctx: GateContext,
    *,
    check_name: str,
    evaluate: Evaluator,
    spec_code: str,
) -> list[CheckResult]:
    """One fixture check: positive (report vs expected) or negative (declared codes appear)."""
    check_id = str(spec.get("id", check_name))
    rel = _spec_str(spec, "fixture", ctx, spec_code)
    expected = _spec_str(spec, "expected", ctx, spec_code) if "expected" in spec else None
    raw_codes = spec.get("expect_code")
    codes = _codes(raw_codes)
    if raw_codes is not None and not codes:
        raise InputError.at(
            spec_code,
            "`expect_code` must be a finding code or a list of codes",
            ctx.manifest,
            pointer=f"{ctx.pointer}/expect_code",
        )
    path = ctx.resolve(rel, field="fixture")
    display = str(path.relative_to(ctx.bundle_root.resolve()))
    try:
        fixture = load_fixture(path, display=display, root=ctx.bundle_root)
        codes = codes or fixture.expect_code
        result = evaluate(fixture)
    except InputError as err:
        if not codes:
            raise
        observed = sorted({f.code for f in err.findings})
        return [_negative(check_name, check_id, display, codes, observed, ctx, unusable=True)]
    if codes:
        observed = sorted({f.code for f in result.findings})
        neg = _negative(check_name, check_id, display, codes, observed, ctx, unusable=False)
        return [
            CheckResult(
                check=neg.check,
                subject=neg.subject,
                findings=neg.findings,
                metrics=neg.metrics,
                evidence_class=result.evidence_class,
                reason=neg.reason,
                artifacts=neg.artifacts,
            )
        ]
    findings = list(result.findings)
    if expected is not None:
        findings.extend(ctx.expect_json(expected, dict(result.metrics), check_id))
    return [
        CheckResult(
            check=check_name,
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
    check_name: str,
    check_id: str,
    display: str,
    codes: tuple[str, ...],
    observed: list[str],
    ctx: GateContext,
    *,
    unusable: bool,
) -> CheckResult:
    missing = [c for c in codes if c not in observed]
    findings = tuple(
        Finding(
            "FIXTURE.EXPECT_CODE.MISSING",
            f"{check_id}: negative fixture {display} did not produce {code}"
            f" (observed: {', '.join(observed) or 'no findings'})",
            location=ctx.location("/expect_code"),
        )
        for code in missing
    )
    return CheckResult(
        check=check_name,
        subject=check_id,
        findings=findings,
        metrics={
            "negative": True,
            "expect_code": list(codes),
            "observed_codes": observed,
            "unusable_input": unusable,
        },
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=None if missing else f"rejected as declared: {', '.join(codes)}",
        artifacts={"fixture": display},
    )
