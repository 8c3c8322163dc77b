"""Gate kinds that run a fixture oracle: `oracle`, `fairness_starvation`, `preemption_resume`.

Spec fields (besides the gate's own `id`, `kind`, `title`, `claim`, `evidence_class`):

`oracle`       (kind `oracle` only) name in `cbaudit.oracles.registry.ORACLES` (required)
`fixture`      path of the fixture, relative to the declaring file (required)
`expected`     path of the expected report (the result's metrics, canonical JSON); compared
               with `ctx.expect_json`, rewritten by `cbaudit gate --update`
`expect_code`  a finding code, or a list of codes, that the fixture must produce: the check
               is then a negative case and passes only when every named code appears (an
               unusable fixture counts when its `InputError` carries the code). A negative
               fixture file may declare `expect_code` itself; the spec's value wins.

All three kinds share `run_fixture_check`; they differ only in how a fixture is loaded and
evaluated (the Loop 8 and Loop 9 oracles live in `cbaudit.sim` with their own fixture loader)
and in the codes they report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.oracles.fixtures import load_fixture
from cbaudit.oracles.registry import get_oracle, run_fixture

if TYPE_CHECKING:  # the gate imports this module; a runtime import would point upwards
    from cbaudit.checks.context import GateContext

# (fixture path, display name, read root: nothing the fixture names may lie outside it)
#   -> (evaluate it, codes the fixture file declares)
Loader = Callable[[Path, str, Path], tuple[Callable[[], CheckResult], tuple[str, ...]]]


@dataclass(frozen=True)
class FixtureKind:
    """How one kind loads and judges its fixtures, and the codes it reports."""

    name: str
    load: Loader
    spec_code: str  # unusable spec fields
    missing_code: str  # a negative fixture that did not produce a declared code
    unusable_class: EvidenceClass = EvidenceClass.DERIVED  # a negative rejected as unusable


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


def _expected_codes(spec: Mapping[str, Any], ctx: GateContext, code: str) -> list[str] | None:
    raw = spec.get("expect_code")
    if raw is None:
        return None
    codes = [raw] if isinstance(raw, str) else raw
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise InputError.at(
            code,
            "`expect_code` must be a finding code or a non-empty list of codes",
            ctx.manifest,
            pointer=f"{ctx.pointer}/expect_code",
        )
    return list(codes)


def run_fixture_check(
    spec: Mapping[str, Any], ctx: GateContext, kind: FixtureKind
) -> list[CheckResult]:
    """One fixture check: positive (report vs expected) or negative (declared codes appear)."""
    check_id = str(spec.get("id", kind.name))
    rel = _spec_str(spec, "fixture", ctx, kind.spec_code)
    expected = _spec_str(spec, "expected", ctx, kind.spec_code) if "expected" in spec else None
    codes = _expected_codes(spec, ctx, kind.spec_code)
    path = ctx.resolve(rel, field="fixture")
    display = ctx.display(path)
    try:
        evaluate, declared_codes = kind.load(path, display, ctx.read_root)
        if codes is None and declared_codes:
            codes = list(declared_codes)
        result = evaluate()
    except InputError as err:
        if codes is None:
            raise
        observed = sorted({f.code for f in err.findings})
        declared = spec.get("evidence_class")
        cls = kind.unusable_class
        if isinstance(declared, str) and declared in {e.value for e in EvidenceClass}:
            cls = EvidenceClass(declared)
        negative = _negative(check_id, kind, display, codes, observed, ctx, unusable=True)
        return [replace(negative, evidence_class=cls)]
    extra = ctx.expect_json(expected, dict(result.metrics), check_id) if expected else []
    if codes is not None:
        observed = sorted({f.code for f in result.findings})
        negative = _negative(check_id, kind, display, codes, observed, ctx, unusable=False)
        return [
            replace(
                negative,
                findings=(*negative.findings, *extra),
                evidence_class=result.evidence_class,
            )
        ]
    return [
        CheckResult(
            check=kind.name,
            subject=check_id,
            findings=(*result.findings, *extra),
            metrics=result.metrics,
            evidence_class=result.evidence_class,
            reason=result.reason,
            artifacts={"fixture": display, **dict(result.artifacts)},
            charts=result.charts,
        )
    ]


def _negative(
    check_id: str,
    kind: FixtureKind,
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
            kind.missing_code,
            f"{check_id}: negative fixture {display} did not produce {code}"
            f" (observed: {', '.join(observed) or 'no findings'})",
            location=ctx.location("/expect_code"),
        )
        for code in missing
    )
    return CheckResult(
        check=kind.name,
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


def run_oracle(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Run `spec["oracle"]` on `spec["fixture"]`; see the module docstring for the fields."""
    name = _spec_str(spec, "oracle", ctx, "ORACLE.SPEC.INVALID")
    get_oracle(name, file=ctx.manifest, pointer=f"{ctx.pointer}/oracle")

    def load(
        path: Path, display: str, root: Path
    ) -> tuple[Callable[[], CheckResult], tuple[str, ...]]:
        fixture = load_fixture(path, display=display, root=root)
        declared = (fixture.expect_code,) if fixture.expect_code is not None else ()
        return (lambda: run_fixture(name, fixture)), declared

    kind = FixtureKind(name, load, "ORACLE.SPEC.INVALID", "ORACLE.EXPECT_CODE.MISSING")
    return run_fixture_check(spec, ctx, kind)


def _sim_kind(name: str, evaluate: Callable[[Any], CheckResult], spec_code: str) -> FixtureKind:
    from cbaudit.sim import fairness_fixture

    def load(
        path: Path, display: str, root: Path
    ) -> tuple[Callable[[], CheckResult], tuple[str, ...]]:
        fixture = fairness_fixture.load_fixture(path, display=display, root=root)
        return (lambda: evaluate(fixture)), fixture.expect_code

    return FixtureKind(
        name, load, spec_code, "FIXTURE.EXPECT_CODE.MISSING", EvidenceClass.SYNTHETIC
    )


def run_fairness_starvation(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Gate kind `fairness_starvation` (Loop 8): fields `fixture`, `expected`, `expect_code`."""
    from cbaudit.sim import fairness_oracle

    kind = _sim_kind(fairness_oracle.NAME, fairness_oracle.evaluate, "FAIR.SPEC.INVALID")
    return run_fixture_check(spec, ctx, kind)


def run_preemption_resume(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Gate kind `preemption_resume` (Loop 9): fields `fixture`, `expected`, `expect_code`."""
    from cbaudit.sim import preemption_oracle

    kind = _sim_kind(preemption_oracle.NAME, preemption_oracle.evaluate, "PREEMPT.SPEC.INVALID")
    return run_fixture_check(spec, ctx, kind)
