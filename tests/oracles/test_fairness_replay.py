"""Client-fairness policies on the replay engine, and fairness beside SLO per identity."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import M52

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import InputError
from cbaudit.oracles.fairness.kinds import FAIRNESS_REPLAY
from cbaudit.oracles.fairness.replay import replay_fairness
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.workload import load_workload, workload_from_data

BUNDLE = M52
LOOP = BUNDLE / "loop8"
FAIR_POLICIES = (
    "fifo",
    "least-service",
    "vtc",
    "vtc-completion-reconciled",
    "fastserve-mlfq",
    "static-priority",
    "priority-aging",
    "reuse-greedy",
    "prefix-quota",
)


def _ctx() -> GateContext:
    return GateContext(
        base_dir=LOOP, manifest="loop8/checks.yaml", pointer="/checks/0", bundle_root=BUNDLE
    )


def test_registry_has_every_fairness_policy() -> None:
    """Each Part B policy id is registered and instantiable with defaults."""
    for pid in FAIR_POLICIES:
        assert pid in POLICIES
        assert POLICIES.create(pid).policy_id == pid


def test_flood_gaps_on_the_engine() -> None:
    """FIFO gap 16, least-service and VTC gap 2; both end A=16 B=8."""
    wl = load_workload(LOOP / "flood.workload.yaml")
    gaps = {}
    for pid in ("fifo", "least-service", "vtc", "vtc-completion-reconciled"):
        r = replay_fairness(wl, pid, {})
        assert r["contract_findings"] == []
        assert r["fairness"]["final_service"] == {"A": 16, "B": 8}
        gaps[pid] = r["fairness"]["max_backlogged_gap"]["A|B"]["gap"]
    assert gaps == {"fifo": 16, "least-service": 2, "vtc": 2, "vtc-completion-reconciled": 2}


def test_flood_slo_by_identity() -> None:
    """FIFO hides B's complete SLO failure in an aggregate of six on-time completions."""
    wl = load_workload(LOOP / "flood.workload.yaml")
    fifo = replay_fairness(wl, "fifo", {})["slo_by_identity"]
    fair = replay_fairness(wl, "least-service", {})["slo_by_identity"]
    assert (fifo["A"]["slo_valid"], fifo["B"]["slo_valid"]) == (6, 0)
    assert (fair["A"]["slo_valid"], fair["B"]["slo_valid"]) == (3, 3)


def test_aging_wins_at_tick_8() -> None:
    """Static priority starves `old` over 12 ticks; aging with q_age 2 serves it after 8."""
    wl = load_workload(LOOP / "priority.workload.yaml")
    static = replay_fairness(wl, "static-priority", {}, horizon=12)["fairness"]
    aging = replay_fairness(wl, "priority-aging", {"q_age": 2}, horizon=12)["fairness"]
    assert static["starved"] == ["old"] and static["completed_events"]["old"] == 0
    assert aging["starved"] == [] and aging["longest_eligible_wait_iterations"]["old"] == 8


def test_quota_counts() -> None:
    """Reuse-greedy: hot 9 / cold 0; the 2:1 quota: hot 8 / cold 1."""
    wl = load_workload(LOOP / "quota.workload.yaml")
    greedy = replay_fairness(wl, "reuse-greedy", {}, horizon=9)["fairness"]
    quota = replay_fairness(wl, "prefix-quota", {}, horizon=9)["fairness"]
    assert greedy["completed_events"] == {"cold": 0, "hot": 9}
    assert quota["completed_events"] == {"cold": 1, "hot": 8}


def test_replay_report_is_deterministic() -> None:
    """Two identical replays give byte-identical fairness JSON."""
    wl = load_workload(LOOP / "flood.workload.yaml")
    a = json.dumps(replay_fairness(wl, "vtc", {}), sort_keys=True)
    b = json.dumps(replay_fairness(wl, "vtc", {}), sort_keys=True)
    assert a == b


def _random_workload(seed: int) -> Any:
    rng = random.Random(seed)
    reqs = []
    for i in range(rng.randint(3, 9)):
        reqs.append(
            {
                "request_id": f"r{i}",
                "client": rng.choice(["A", "B", "hot", "cold"]),
                "priority": rng.randint(0, 3),
                "arrival": rng.randint(0, 6),
                "prompt_tokens": rng.randint(1, 9),
                "max_output_tokens": rng.randint(1, 5),
            }
        )
    reqs.sort(key=lambda r: r["arrival"])
    return workload_from_data(
        {
            "schema_version": 1,
            "workload_id": f"random-{seed}",
            "clock": {"unit": "tick"},
            "policy": {
                "policy_id": "x",
                "policy_version": "1",
                "tie_break": {
                    "key": ["arrival_order", "request_id", "request_generation"],
                    "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
                },
            },
            "budgets": {"token_budget": rng.randint(2, 8), "sequence_budget": rng.randint(1, 4)},
            "requests": reqs,
        }
    )


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), pid=st.sampled_from(FAIR_POLICIES))
def test_policies_keep_the_contract(seed: int, pid: str) -> None:
    """Every fairness policy's plans and results pass the contract validator and finish."""
    wl = _random_workload(seed)
    r = replay_fairness(wl, pid, {})
    assert r["contract_findings"] == []
    assert r["stop_reason"] == "completed"
    total = sum(r["fairness"]["final_service"].values())
    expected = sum(d.prompt_tokens + 2 * (d.max_output_tokens - 1) for d in wl.requests)
    assert total == expected  # every completed row counted once, at its weight


def test_assert_mismatch_is_a_finding() -> None:
    """A wrong asserted gap gives REPLAY.ASSERT.MISMATCH."""
    spec = {
        "id": "t",
        "workload": "flood.workload.yaml",
        "runs": [{"policy": "fifo"}],
        "assert": {"runs.fifo.fairness.max_backlogged_gap.A|B.gap": 2},
    }
    [result] = run_entry(FAIRNESS_REPLAY, spec, _ctx())
    assert [f.code for f in result.findings] == ["REPLAY.ASSERT.MISMATCH"]


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"workload": "flood.workload.yaml"}, "GATE.SPEC.MISSING_FIELD"),
        ({"workload": "flood.workload.yaml", "runs": [{}]}, "GATE.SPEC.MISSING_FIELD"),
        (
            {
                "workload": "flood.workload.yaml",
                "runs": [{"policy": "fifo"}],
                "weights": {"w_p": -1},
            },
            "GATE.SPEC.INVALID",
        ),
        (
            {"workload": "flood.workload.yaml", "runs": [{"policy": "nope"}]},
            "REPLAY.POLICY.UNKNOWN",
        ),
        (
            {
                "workload": "flood.workload.yaml",
                "runs": [{"policy": "vtc", "policy_options": {"x": 1}}],
            },
            "REPLAY.POLICY.OPTION",
        ),
    ],
)
def test_bad_specs_are_located_input_errors(spec: dict[str, Any], code: str) -> None:
    """Unusable specs raise InputError with the named code and a location."""
    with pytest.raises(InputError) as info:
        run_entry(FAIRNESS_REPLAY, {"id": "t", **spec}, _ctx())
    assert info.value.findings[0].code == code
    assert info.value.findings[0].location.file is not None


@pytest.mark.parametrize(
    ("pid", "options"),
    [
        ("fastserve-mlfq", {"quanta": [4, 2]}),
        ("fastserve-mlfq", {"alpha": 0}),
        ("priority-aging", {"q_age": 0}),
        ("prefix-quota", {"quota": {"hot": 0}}),
        ("reuse-greedy", {"groups": []}),
        ("least-service", {"w_q": -2}),
        ("fifo", {"x": 1}),
    ],
)
def test_bad_policy_options_are_refused(pid: str, options: dict[str, Any]) -> None:
    """Invalid options raise ValueError naming the option."""
    with pytest.raises(ValueError):
        POLICIES.create(pid, options)


def test_reconciled_policy_rolls_back_uncompleted_work() -> None:
    """C_select reserves a selection's cost and rolls it back when nothing completed."""
    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.contract.records import Queue
    from cbaudit.policies.base import BudgetsView, PlanBuilder, key_function
    from cbaudit.policies.vtc import VtcCompletionReconciledPolicy
    from cbaudit.sim.engine import _View

    policy = VtcCompletionReconciledPolicy({})
    r = LiveRequest(0, "a0", 0, 4, 1, 0.0, 0, 0, "A")
    r.queue = Queue.WAITING
    budgets = BudgetsView(4, 1, None, None, None)
    key = key_function(policy.tie_break_key, policy.phase_order)

    def cut(version: int) -> PlanBuilder:
        view = _View.of(version, version, float(version), budgets, [], [r], None)
        plan = PlanBuilder(view, key)
        policy.choose(view, plan)
        return plan

    plan = cut(1)
    assert [(i.start, i.end) for i in plan.items] == [(0, 4)]
    assert policy.c_select == {"A": 4} and policy.w_done == {}
    cut(2)  # the attempt failed: rollback to 0, then the retry reserves 4 again (not 8)
    assert policy.c_select == {"A": 4} and policy.w_done.get("A", 0) == 0
    r.c = 4  # the retry completed four input rows
    r.e = 1
    r.queue = Queue.FINISHED
    empty = _View.of(3, 3, 3.0, budgets, [], [], None)
    policy.choose(empty, PlanBuilder(empty, key))
    assert policy.w_done == {"A": 4} and policy.c_select == {"A": 4}
