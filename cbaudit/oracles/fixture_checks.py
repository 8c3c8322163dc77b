"""What every fixture-oracle kind shares: `oracle` (Loops 4-7, 10), `fairness_starvation`
(Loop 8) and `preemption_resume` (Loop 9) each run one fixture per check.

Spec fields (besides the common ones):

`fixture`      path of the fixture, relative to the declaring file (required)
`expected`     path of the expected report (the result's metrics, canonical JSON); compared
               with `ctx.expect_json`, rewritten by `cbaudit gate --update`
`expect_code`  a finding code, or a list of codes, that the fixture must produce: the check
               is then a negative case and passes only when every named code appears (an
               unusable fixture counts when its `InputError` carries the code). A negative
               fixture file may declare `expect_code` itself; the spec's value wins.

The kinds differ only in how a fixture is loaded and judged (`FixtureKind`) and in the code
a negative that did not produce its declared code reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import FixtureFile, Verdict
from cbaudit.checks.spec import CheckSpec, converted
from cbaudit.checks.targets import error_codes, no_locate
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError
from cbaudit.oracles.fixtures import LoadedFixture, load_loop_fixture


def codes(value: Any) -> tuple[str, ...]:
    """`expect_code` as a tuple: one code or a list of codes."""
    return (value,) if isinstance(value, str) else tuple(str(c) for c in value)


@dataclass(frozen=True, kw_only=True)
class FixtureSpec(CheckSpec):
    """The fields of a fixture-oracle check (see the module docstring)."""

    fixture: str
    expected: str | None = None
    expect_code: tuple[str, ...] | None = field(default=None, metadata=converted(codes))


# (fixture path, display name, read root: nothing the fixture names may lie outside it)
#   -> (evaluate it, codes the fixture file declares)
Loader = Callable[[Path, str, Path], tuple[Callable[[], CheckResult], tuple[str, ...]]]


@dataclass(frozen=True)
class FixtureKind:
    """How one kind loads and judges its fixtures, and the codes it reports."""

    name: str
    load: Loader
    missing_code: str  # a negative fixture that did not produce a declared code
    unusable_class: EvidenceClass = EvidenceClass.DERIVED  # a negative rejected as unusable


def run_fixture_check(spec: FixtureSpec, ctx: GateContext, kind: FixtureKind) -> list[CheckResult]:
    """One fixture check: positive (report vs expected) or negative (declared codes appear)."""
    wanted = list(spec.expect_code) if spec.expect_code is not None else None
    path = ctx.resolve(spec.fixture, field="fixture")
    display = ctx.display(path)
    try:
        evaluate, declared_codes = kind.load(path, display, ctx.read_root)
        if wanted is None and declared_codes:
            wanted = list(declared_codes)
        result = evaluate()
    except InputError as err:
        if wanted is None:
            raise
        observed = sorted({f.code for f in err.findings})
        negative = _negative(spec.id, kind, display, wanted, observed, ctx, unusable=True)
        return [replace(negative, evidence_class=spec.evidence_class or kind.unusable_class)]
    extra = ctx.expect_json(spec.expected, dict(result.metrics), spec.id) if spec.expected else []
    if wanted is not None:
        observed = sorted({f.code for f in result.findings})
        negative = _negative(spec.id, kind, display, wanted, observed, ctx, unusable=False)
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
            subject=spec.id,
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


def plain_fixture(spec: FixtureSpec, ctx: GateContext) -> list[FixtureFile]:
    """The fixture of a positive check, unless it is a patch file (a negative, not a base)."""
    if spec.expect_code is not None:
        return []
    path = ctx.resolve(spec.fixture, field="fixture")
    raw = load_document(path).data if path.is_file() else None
    if isinstance(raw, Mapping) and "patch" in raw:
        return []
    return [FixtureFile(path, ctx.display(path))]  # a missing file fails when it loads


# --- Loops 8 and 9: fixtures judged by an `evaluate(LoadedFixture)` oracle ------------------

LoopOracle = Callable[[LoadedFixture], CheckResult]


@dataclass(frozen=True)
class LoopFixtureLoad:
    """A `Loader` for the Loop 8 and 9 kinds (picklable)."""

    evaluate: LoopOracle

    def __call__(
        self, path: Path, display: str, root: Path
    ) -> tuple[Callable[[], CheckResult], tuple[str, ...]]:
        fixture = load_loop_fixture(path, display=display, root=root)
        return (lambda: self.evaluate(fixture)), fixture.expect_code


@dataclass(frozen=True)
class LoopFixtureEvaluate:
    """A mutation target's `evaluate` for the Loop 8 and 9 oracles (picklable)."""

    evaluate: LoopOracle

    def __call__(self, data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
        try:
            result = self.evaluate(LoadedFixture(data, "<mutant>", "", no_locate))
        except InputError as err:
            return Verdict(error_codes(err.findings), unusable=True)
        return Verdict(error_codes(result.findings))


def loop_fixture_kind(name: str, evaluate: LoopOracle) -> FixtureKind:
    """The `FixtureKind` of a Loop 8 or 9 oracle (synthetic evidence)."""
    return FixtureKind(
        name, LoopFixtureLoad(evaluate), "FIXTURE.EXPECT_CODE.MISSING", EvidenceClass.SYNTHETIC
    )
