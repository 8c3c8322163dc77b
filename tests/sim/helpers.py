"""Small builders shared by the simulator tests."""

from __future__ import annotations

from typing import Any

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, ReplayRun, Validation
from cbaudit.sim.metrics import summarize
from cbaudit.sim.workload import Workload, workload_from_data
from tests.conftest import EVIDENCE

BUNDLE = EVIDENCE / "m5-2-continuous-batching"


def manifest(
    requests: list[dict[str, Any]], budgets: dict[str, Any], hidden: dict[str, int] | None = None
) -> Workload:
    data: dict[str, Any] = {
        "schema_version": 1,
        "workload_id": "test",
        "clock": {"unit": "tick"},
        "budgets": budgets,
        "requests": requests,
    }
    if hidden is not None:
        data["fixture_only_hidden_truth"] = {"realized_output_tokens": hidden}
    return workload_from_data(data, "test.yaml")


def replay(
    workload: Workload,
    policy: str,
    options: dict[str, Any] | None = None,
    validation: Validation = Validation.CONTRACT,
    **kw: Any,
) -> tuple[ReplayRun, dict[str, Any]]:
    windows = kw.pop("windows", ())
    policy_obj = POLICIES.create(policy, options or {})
    run = Engine(workload, policy_obj, UnitCostModel(), validation=validation, **kw).run()
    return run, summarize(run, windows=windows)
