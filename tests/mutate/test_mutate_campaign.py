"""Campaigns: statuses, score, kill matrix, determinism under a seed, processes, reports."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from _mutate_paths import LOOP2_VALID, LOOP4, LOOP5, LOOP6

from cbaudit.checks.interface import Verdict
from cbaudit.checks.targets import schema_codes
from cbaudit.io import load_document
from cbaudit.io.schemas import validate
from cbaudit.kinds import TARGETS
from cbaudit.model import CheckStatus, Severity
from cbaudit.mutate.campaign import (
    CampaignResult,
    FixtureInput,
    MutantStatus,
    classify,
    run_campaign,
)
from cbaudit.mutate.operators import Edit, Operator, remove, replace
from cbaudit.mutate.registry import OPERATORS
from cbaudit.mutate.reporting import campaign_result, stryker_report
from cbaudit.mutate.targets import detect


def _fixture(path: Any, name: str | None = None) -> FixtureInput:
    doc = load_document(path)
    target = detect(doc.data, TARGETS)
    assert target is not None
    return FixtureInput(name or path.name, doc.data, target.name, doc.text, doc.locate)


LOOP2 = _fixture(LOOP2_VALID)
#: The only mutants of the shipped operators not rejected with their own code: a retyped
#: decision_id fails the schema's oneOf (integer or string), reported as killed_by_other.
KNOWN_OTHER = {("schema.type.retype", ("SCHEMA.ONE_OF",))}


def _op(name: str, expect: str, edits: list[Edit]) -> Operator:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        yield from edits

    return Operator(name, "2", "plan-case", "test", "/", "test operator", expect, gen)


@pytest.fixture(scope="module")
def loop2_campaign() -> CampaignResult:
    """The full registry on the Loop 2 iteration-5 case."""
    return run_campaign([LOOP2], OPERATORS, targets=TARGETS, seed=0)


def test_loop2_every_mutant_detected(loop2_campaign: CampaignResult) -> None:
    """All Loop 2 mutants are detected; all but the known retype cases by their own code."""
    assert loop2_campaign.score == 100.0
    assert loop2_campaign.survivors() == [] and loop2_campaign.errors() == []
    others = {
        (m.operator, m.codes) for m in loop2_campaign.mutants if m.status is not MutantStatus.KILLED
    }
    assert others == KNOWN_OTHER
    assert len(loop2_campaign.mutants) >= 150


@pytest.mark.parametrize("operator", [n for n, op in OPERATORS.items() if op.target == "plan-case"])
def test_each_loop2_operator_kills_with_its_code(
    loop2_campaign: CampaignResult, operator: str
) -> None:
    """Each Loop 2 operator's mutants produce its declared finding code."""
    mine = [m for m in loop2_campaign.mutants if m.operator == operator]
    assert mine
    killed = [m for m in mine if m.status is MutantStatus.KILLED]
    assert killed, [m.to_dict() for m in mine]
    assert all(OPERATORS[operator].expect in m.codes for m in killed)


@pytest.mark.parametrize("path", [LOOP4, LOOP5, LOOP6], ids=lambda p: p.parent.name)
def test_oracle_loops_every_mutant_killed_as_declared(path: Any) -> None:
    """Loop 4, 5 and 6 operators are all killed with their declared codes."""
    result = run_campaign([_fixture(path)], OPERATORS, targets=TARGETS, seed=3)
    assert result.mutants
    bad = [m.to_dict() for m in result.mutants if m.status is not MutantStatus.KILLED]
    assert bad == []


def test_survivor_is_reported_with_its_patch() -> None:
    """A mutant the oracle accepts survives; the result fails and prints the patch."""
    op = _op("test.weak", "PLAN.PHASE.FORGED", [((replace("/description", "x"),), "cosmetic")])
    result = run_campaign([LOOP2], [op], targets=TARGETS)
    assert [m.status for m in result.mutants] == [MutantStatus.SURVIVED]
    check = campaign_result(result, [LOOP2], subject="t")
    assert check.outcome is CheckStatus.FAILED
    [finding] = [f for f in check.findings if f.code == "MUTATE.MUTANT.SURVIVED"]
    assert '"path":"/description"' in finding.message
    assert finding.location.line is not None and finding.location.pointer == "/description"
    assert check.metrics["survivors"][0]["patch"] == [
        {"op": "replace", "path": "/description", "value": "x"}
    ]


def test_equivalent_mutant_is_excluded_from_the_score() -> None:
    """A patch that leaves the canonical form unchanged is equivalent, not valid."""
    same = [((replace("/plan/decision_id", 5),), "no-op")]
    real = [((replace("/plan/decision_id", 6),), "real")]
    result = run_campaign(
        [LOOP2], [_op("test.eq", "PLAN.DECISION.MISMATCH", same + real)], targets=TARGETS
    )
    assert [m.status for m in result.mutants] == [MutantStatus.EQUIVALENT, MutantStatus.KILLED]
    assert (result.valid, result.detected, result.score) == (1, 1, 100.0)


def test_unappliable_patch_is_an_oracle_error() -> None:
    """A patch that does not apply is an oracle error (never a crash), and fails the check."""
    op = _op("test.broken", "PLAN.DECISION.MISMATCH", [((remove("/plan/nope"),), "broken")])
    result = run_campaign([LOOP2], [op], targets=TARGETS)
    [mutant] = result.mutants
    assert mutant.status is MutantStatus.ORACLE_ERROR and "does not apply" in mutant.detail
    codes = {f.code for f in campaign_result(result, [LOOP2], subject="t").findings}
    assert "MUTATE.MUTANT.ORACLE_ERROR" in codes


def test_generator_crash_is_an_oracle_error() -> None:
    """A generator that raises becomes one oracle-error mutant of its cell."""

    def boom(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        raise KeyError("missing")
        yield  # pragma: no cover

    op = Operator("test.boom", "2", "plan-case", "t", "/", "t", "PLAN.DECISION.MISMATCH", boom)
    [mutant] = run_campaign([LOOP2], [op], targets=TARGETS).mutants
    assert mutant.status is MutantStatus.ORACLE_ERROR and "KeyError" in mutant.detail


def test_schema_rejection_of_a_semantic_operator() -> None:
    """Breaking the shape when a contract code was expected is killed_by_schema."""
    op = _op("test.shape", "PLAN.INTERVAL.EMPTY", [((remove("/plan/selected"),), "no selection")])
    [mutant] = run_campaign([LOOP2], [op], targets=TARGETS).mutants
    assert mutant.status is MutantStatus.KILLED_BY_SCHEMA
    assert "SCHEMA.REQUIRED" in mutant.codes


def test_classify_rules() -> None:
    """Expected code -> killed; other codes -> killed_by_other; baseline codes never count."""
    base = frozenset({"PLAN.DECISION.MISMATCH"})
    assert (
        classify("A.B", Verdict(frozenset({"A.B", "C.D"})), frozenset())[0] is MutantStatus.KILLED
    )
    assert (
        classify("A.B", Verdict(frozenset({"C.D"})), frozenset())[0] is MutantStatus.KILLED_BY_OTHER
    )
    assert (
        classify("A.B", Verdict(frozenset(), True), frozenset())[0] is MutantStatus.KILLED_BY_SCHEMA
    )
    assert classify("SCHEMA.TYPE", Verdict(frozenset({"SCHEMA.REQUIRED"}), True), frozenset())[
        0
    ] is (MutantStatus.KILLED_BY_OTHER)
    assert classify("PLAN.DECISION.MISMATCH", Verdict(base), base)[0] is MutantStatus.SURVIVED


def test_score_below_break_fails() -> None:
    """A survivor below --break gives MUTATE.SCORE.BELOW_BREAK; survivors can be warnings."""
    weak = _op("test.weak", "PLAN.PHASE.FORGED", [((replace("/description", "x"),), "cosmetic")])
    strong = OPERATORS["plan.decision.bump"]
    result = run_campaign([LOOP2], [weak, strong], targets=TARGETS)
    assert result.score == 50.0
    lenient = campaign_result(result, [LOOP2], subject="t", min_score=40, survivors_fail=False)
    assert lenient.outcome is CheckStatus.PASSED
    assert {f.severity for f in lenient.findings if f.code == "MUTATE.MUTANT.SURVIVED"} == {
        Severity.WARNING
    }
    strict = campaign_result(result, [LOOP2], subject="t", min_score=60, survivors_fail=False)
    assert "MUTATE.SCORE.BELOW_BREAK" in {f.code for f in strict.findings}
    assert strict.outcome is CheckStatus.FAILED


def test_same_seed_same_campaign_and_jobs_do_not_matter(loop2_campaign: CampaignResult) -> None:
    """A seed fixes every mutant; two worker processes give the identical campaign."""
    again = run_campaign([LOOP2], OPERATORS, targets=TARGETS, seed=0, jobs=2)
    assert [m.to_dict() for m in again.mutants] == [m.to_dict() for m in loop2_campaign.mutants]
    forge = OPERATORS.select(["plan.positions.forge", "plan.tie-break.forge"])
    other = run_campaign([LOOP2], forge, targets=TARGETS, seed=11)
    same = run_campaign([LOOP2], forge, targets=TARGETS, seed=0)
    assert [m.patch for m in other.mutants] != [m.patch for m in same.mutants]


def test_limit_samples_mutants_deterministically() -> None:
    """--limit keeps a seeded sample of each cell, the same for the same seed."""
    ops = OPERATORS.select(["leak.hidden-truth"])
    one = run_campaign([LOOP2], ops, targets=TARGETS, seed=5, limit=2)
    two = run_campaign([LOOP2], ops, targets=TARGETS, seed=5, limit=2)
    assert len(one.mutants) == 2
    assert [m.patch for m in one.mutants] == [m.patch for m in two.mutants]


def test_kill_matrix_and_chart(loop2_campaign: CampaignResult) -> None:
    """The kill matrix has one row per operator and one column per fixture; a matrix chart."""
    check = campaign_result(loop2_campaign, [LOOP2], subject="t")
    matrix = check.metrics["matrix"]
    assert matrix["cols"] == ["valid.case.json"]
    assert len(matrix["rows"]) == len(matrix["cells"]) == len(loop2_campaign.operators)
    [chart] = check.charts
    assert chart["type"] == "matrix"
    assert {c for row in chart["cells"] for c in row} <= {"killed", "killed_by_other"}


def test_stryker_report_fits_the_public_shape(loop2_campaign: CampaignResult) -> None:
    """--format stryker output validates against the mutation-testing report schema subset."""
    report = stryker_report(loop2_campaign, [LOOP2], break_at=90)
    assert validate(report, "mutation-report") == []
    mutants = report["files"]["valid.case.json"]["mutants"]
    assert len(mutants) == len(loop2_campaign.mutants)
    assert {m["status"] for m in mutants} == {"Killed"}
    assert report["schemaVersion"] == "1" and report["thresholds"]["break"] == 90
    first = mutants[0]
    assert json.loads(first["replacement"])[0]["path"].startswith("/plan/selected/")
    assert first["location"]["start"]["line"] > 1


def test_fast_schema_codes_agree_with_the_detailed_validator() -> None:
    """The jsonschema-rs codes used for speed are the detailed validator's codes."""
    result = run_campaign([LOOP2], OPERATORS.select(["schema.required.drop"]), targets=TARGETS)
    from cbaudit.mutate.patch import apply_shared

    for m in result.mutants:
        mutant = apply_shared(LOOP2.data, m.patch)
        detailed = {f.code for f in validate(mutant, "plan-case")}
        assert schema_codes(mutant, "plan-case") == detailed, m.description


def test_timeout_is_detected_but_reported() -> None:
    """A call slower than the per-mutant limit is a timeout: detected, and a warning finding."""
    result = run_campaign(
        [LOOP2], OPERATORS.select(["plan.decision.bump"]), targets=TARGETS, timeout_s=0.0
    )
    assert [m.status for m in result.mutants] == [MutantStatus.TIMEOUT]
    assert result.score == 100.0
    check = campaign_result(result, [LOOP2], subject="t")
    assert [(f.code, f.severity) for f in check.findings] == [
        ("MUTATE.MUTANT.TIMEOUT", Severity.WARNING)
    ]
