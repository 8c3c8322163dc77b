"""Loop 8 (article 0x09A): fairness accounting and the tick-level starvation probes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import M52, loop_checks, run_declared

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.model import CheckStatus
from cbaudit.oracles.fairness.accounting import (
    ServiceSeries,
    aged_priority,
    backlogged_gap,
    completion_reconciled,
    starved,
    vtc_bound,
    vtc_lift,
    weighted_rows,
)
from cbaudit.oracles.fairness.oracle import CODES, Event, evaluate, run_flood
from cbaudit.oracles.fixtures import load_loop_fixture as load_fixture

BUNDLE = M52
LOOP = BUNDLE / "loop8"


SPECS = loop_checks("loop8")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    fx = load_fixture(LOOP / "fairness_starvation.yaml", display="loop8/f.yaml", root=BUNDLE)
    result = evaluate(fx)
    assert result.findings == ()
    return dict(result.metrics)


@pytest.mark.parametrize("spec", SPECS, ids=[s.check_id for s in SPECS])
def test_every_declared_check_passes(spec: DeclaredCheck) -> None:
    """Each Loop 8 check passes: the positive matches its report, each negative its codes."""
    results = run_declared(spec)
    assert [r.outcome for r in results] == [CheckStatus.PASSED], [
        f.render() for r in results for f in r.findings
    ]


def test_negatives_cover_the_article_list() -> None:
    """Every rejection family of the article's Loop 8 list has a negative fixture."""
    codes = {c for s in SPECS for c in s.entry.get("expect_code", [])}
    assert codes <= set(CODES)
    for needed in (
        "FAIR.IDENTITY.MISMATCH",
        "FAIR.ACCOUNTING.PUBLICATION",
        "FAIR.CLAIM.MLFQ_CLIENT_BOUND",
        "FAIR.VTC.LIFT",
        "FAIR.VTC.BOUND",
        "FAIR.VTC.ASSUMPTION",
        "FAIR.CLAIM.ADAPTATION_THEOREM",
        "FAIR.CLAIM.PREBLE",
        "FAIR.PROBE.MISSING_CLASS",
        "FAIR.PROBE.NO_PRESSURE",
        "FAIR.CLAIM.INFLATED",
    ):
        assert needed in codes, needed


def test_client_flood_numbers(report: dict[str, Any]) -> None:
    """FIFO gap 16, least-service gap 2, both final A=16 B=8; SLO split A6/B0 vs A3/B3."""
    flood = report["client_flood"]
    assert flood["fifo"]["max_backlogged_gap"] == 16
    assert flood["least-service"]["max_backlogged_gap"] == 2
    for policy in ("fifo", "least-service", "vtc"):
        assert flood[policy]["final_service"] == {"A": 16, "B": 8}
        assert flood[policy]["slo_valid_total"] == 6
        assert flood[policy]["starved_over_horizon"] == []
    assert flood["fifo"]["slo_by_identity"]["B"]["slo_valid"] == 0
    assert flood["fifo"]["slo_by_identity"]["A"]["slo_valid"] == 6
    assert flood["least-service"]["order"][:4] == ["A0", "B0", "A1", "B1"]


def test_vtc_lift_and_bound(report: dict[str, Any]) -> None:
    """c_B = max(0, 4) = 4; U = 8, 2U = 16 with all five assumptions stated."""
    assert report["vtc_lift"]["lifted_counter"] == 4
    bound = report["vtc_bound"]
    assert (bound["U"], bound["two_U"]) == (8, 16)
    assert bound["theorem_applies"] is True
    assert len(bound["assumptions"]) == 5
    assert bound["observed_within_two_U"] is True


def test_completion_reconciled_trace(report: dict[str, Any]) -> None:
    """Failure: C_select[A] 0 -> 4 -> 0, W_done stays 0; retry: 4 and 4."""
    trace = report["completion_reconciled"]["trace"]
    assert trace[0]["C_select"] == [0, 4, 0] and trace[0]["W_done"] == [0, 0]
    assert trace[1]["C_select"] == [0, 4] and trace[1]["W_done"] == [0, 4]
    assert report["completion_reconciled"]["theorem_transfers"] is False


def test_priority_aging_and_quota(report: dict[str, Any]) -> None:
    """Static priority starves the old request; aging (q_age 2) wins at tick 8; quotas 9/0, 8/1."""
    assert report["priority"]["static"]["starved"] == ["old"]
    assert report["priority"]["aging"]["old_first_service_tick"] == 8
    assert report["prefix_quota"]["greedy"] == {"hot": 9, "cold": 0, "starved": ["cold"]}
    assert report["prefix_quota"]["quota"] == {"hot": 8, "cold": 1, "starved": []}


def test_mlfq_promotion(report: dict[str, Any]) -> None:
    """The cost-4 job skip-joins queue 2; it starves without promotion and runs with alpha 3."""
    mlfq = report["mlfq"]
    assert mlfq["long_join_queue"] == 2
    assert mlfq["no_promotion"]["starved"] == ["long"]
    assert mlfq["promotion"]["long_first_service_tick"] == 3


# ---------------------------------------------------------------- accounting units


def test_weighted_rows_splits_input_and_output() -> None:
    """A row below the prompt length costs w_p, later rows cost w_q."""
    assert weighted_rows(0, 4, 4, 1, 2) == 4
    assert weighted_rows(4, 5, 4, 1, 2) == 2
    assert weighted_rows(2, 6, 4, 1, 2) == 2 + 4
    assert weighted_rows(3, 3, 4, 1, 2) == 0


def test_vtc_lift_uses_last_counter_when_no_one_is_active() -> None:
    """With no other active client the lift uses the last leaving client's counter."""
    assert vtc_lift({"B": 1}, "B", ["B"], last_counter=7) == 7
    assert vtc_lift({"B": 9}, "B", [], last_counter=7) == 9


def test_reconcile_settles_actual_cost() -> None:
    """A completion with actual != predicted settles C_select by the difference."""
    steps, c_sel, w_done = completion_reconciled(
        [{"tick": 0, "client": "A", "predicted": 4, "completes": True, "actual": 3}]
    )
    assert steps[0].c_select == (0, 4, 3) and c_sel == {"A": 3} and w_done == {"A": 3}


def test_starvation_needs_continued_eligibility() -> None:
    """A client with no offered work in part of the interval is not starved."""
    s = ServiceSeries(("a", "b"))
    s.tick({"a", "b"}, {"a": 1}, {"a": 1})
    s.tick({"a"}, {"a": 1}, {"a": 1})
    assert not starved(s, "b")
    assert starved(s, "b", 0, 1)
    assert aged_priority(4, 8, 0, 2) == 0


@given(
    a=st.integers(1, 10),
    b=st.integers(1, 10),
    rows=st.integers(1, 4),
)
def test_least_service_gap_never_exceeds_one_event(a: int, b: int, rows: int) -> None:
    """Least-service keeps the co-backlogged gap within one event cost; FIFO reaches cost*min."""
    events = [Event(f"A{k}", "A", k, rows) for k in range(a)]
    events += [Event(f"B{k}", "B", a + k, rows) for k in range(b)]
    gap, _ = backlogged_gap(run_flood(events, ["A", "B"], "least-service", 1).series, "A", "B")
    assert gap <= rows
    fifo_gap, _ = backlogged_gap(run_flood(events, ["A", "B"], "fifo", 1).series, "A", "B")
    assert fifo_gap == rows * a


def test_vtc_bound_arithmetic() -> None:
    """U = max(w_p L_input, w_q M)."""
    assert vtc_bound(1, 2, 8, 4).u == 8
    assert vtc_bound(1, 2, 8, 5).two_u == 20
