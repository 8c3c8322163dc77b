"""One policy decision on one scheduler snapshot, summarized (Loop 10 snapshots, policy tests).

A snapshot is a workload and a SchedulerState-shaped initial state; the policy decides once
through the engine (unit cost, contract validation on) and the decision is summarized as the
selected intervals, the tokens used, what was not selected and why, and the preempted requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.sim import replay as core
from cbaudit.sim.engine import Engine, Validation


class _Capture:
    """A trace sink keeping the last plan (one-decision snapshot runs)."""

    def __init__(self) -> None:
        self.plans: list[Mapping[str, Any]] = []

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "plan":
            self.plans.append(data)


def decide_snapshot(
    workload: Any,
    initial: Mapping[str, Any],
    policy: str,
    policy_options: Mapping[str, Any],
    *,
    source: str,
) -> dict[str, Any]:
    """One policy decision on one scheduler snapshot, summarized."""
    pol = core.make_policy(policy, policy_options, file=source)
    cap = _Capture()
    engine = Engine(
        workload,
        pol,
        core.make_cost_model("unit", {}),
        horizon=1,
        max_decisions=1,
        validation=Validation.CONTRACT,
        trace=cap,
        initial=initial,
    )
    run = engine.run()
    plan = cap.plans[0] if cap.plans else None
    decision: dict[str, Any] = {
        "policy": policy,
        "policy_options": dict(policy_options),
        "findings": [f.code for f in run.findings if f.code != "REPLAY.NO_PROGRESS"],
        "exact_runtime_reproduction": False,
    }
    if plan is None:
        decision.update({"selected": [], "not_selected": [], "preempted": []})
        return decision
    decision["selected"] = [
        f"{w['request_id']}[{w['start']},{w['end']}) {w['phase']}" for w in plan["selected"]
    ]
    decision["tokens_used"] = plan["budget_ledger"]["tokens_used"]
    decision["not_selected"] = [f"{n['request_id']}: {n['reason']}" for n in plan["not_selected"]]
    decision["preempted"] = [
        q["request_id"] for q in plan.get("queue_intent", []) if q["action"] == "preempt"
    ]
    return decision
