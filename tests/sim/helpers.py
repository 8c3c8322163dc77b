"""Small builders shared by the simulator tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fields import slot_names

from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, ReplayRun, Validation
from cbaudit.sim.metrics import summarize
from cbaudit.sim.workload import Workload, _from_expanded, _from_trace, workload_from_data
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


def assert_same_workload(fast: Workload | None, slow: Workload) -> None:
    """The direct trace reader's workload equals the manifest path's, field for field and type
    for type (hidden truth in the same order)."""
    assert fast is not None, "a plain trace must take the direct path"
    assert fast == slow
    for a, b in zip(fast.requests, slow.requests, strict=True):
        for name in slot_names(type(a)):
            va, vb = getattr(a, name), getattr(b, name)
            assert va == vb and type(va) is type(vb), (name, va, vb)
    assert fast.hidden_realized is not None and slow.hidden_realized is not None
    assert list(fast.hidden_realized.items()) == list(slow.hidden_realized.items())


def check_plain_trace(path: Path) -> Workload:
    """The trace at `path` read both ways (`assert_same_workload`); the direct path's."""
    fast = _from_trace(path, str(path))
    assert_same_workload(fast, _from_expanded(path, str(path), None))
    assert fast is not None
    return fast
