"""Frozen records: built from validated JSON, tuples not lists, round trip, projection."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    Phase,
    Queue,
    SchedulerState,
    WorkloadManifest,
)
from cbaudit.io.schemas import is_valid, list_schemas, load_schema


def test_schemas_are_registered_with_ids() -> None:
    """Every contract schema ships with its $id under the cbaudit base."""
    for name in (
        "workload-manifest",
        "scheduler-state",
        "iteration-plan",
        "iteration-result",
        "plan-case",
        "plan-case-patch",
        "trace-record",
    ):
        assert name in list_schemas()
        assert load_schema(name)["$id"] == f"https://cbaudit.invalid/schemas/{name}.schema.json"


def test_valid_case_matches_each_record_schema(valid_data: dict[str, Any]) -> None:
    """The valid case is valid as a whole and record by record."""
    assert is_valid(valid_data, "plan-case")
    assert is_valid(valid_data["workload"], "workload-manifest")
    assert is_valid(valid_data["state"], "scheduler-state")
    assert is_valid(valid_data["plan"], "iteration-plan")
    assert is_valid(valid_data["result"], "iteration-result")


def test_online_schemas_refuse_hidden_truth(valid_data: dict[str, Any]) -> None:
    """Online records may not carry realized output lengths, even at the schema level."""
    plan = dict(valid_data["plan"], realized_output_tokens={"req-A": 3})
    assert not is_valid(plan, "iteration-plan")


@pytest.mark.parametrize(
    ("cls", "part"),
    [
        (WorkloadManifest, "workload"),
        (SchedulerState, "state"),
        (IterationPlan, "plan"),
        (IterationResult, "result"),
    ],
)
def test_round_trip(cls: Any, part: str, valid_data: dict[str, Any]) -> None:
    """from_json then to_json gives back a schema-valid equal record."""
    record = cls.from_json(valid_data[part])
    again = cls.from_json(record.to_json())
    assert again == record
    schema = {
        "workload": "workload-manifest",
        "state": "scheduler-state",
        "plan": "iteration-plan",
        "result": "iteration-result",
    }[part]
    assert is_valid(record.to_json(), schema)


def test_records_are_frozen_tuples(valid_data: dict[str, Any]) -> None:
    """Sequences are tuples and fields cannot be assigned."""
    plan = IterationPlan.from_json(valid_data["plan"])
    assert isinstance(plan.selected, tuple)
    assert isinstance(plan.selected[0].positions, tuple)
    assert isinstance(plan.selected[0].tie_break_key, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.decision_id = 6  # type: ignore[misc]
    assert plan.selected[2].phase is Phase.PREFILL_CHUNK


def test_online_projection_drops_hidden_truth(valid_data: dict[str, Any]) -> None:
    """The policy's view of the workload has no realized output lengths."""
    workload = WorkloadManifest.from_json(valid_data["workload"])
    assert workload.hidden_truth is not None and workload.hidden_truth["req-B"] == 2
    online = workload.online_projection()
    assert online.hidden_truth is None
    assert "fixture_only_hidden_truth" not in online.to_json()
    assert online.by_id["req-A"].prompt_tokens == 4


def test_derived_phase_from_frontiers(valid_data: dict[str, Any]) -> None:
    """Frontiers derive prefill, decode, or nothing when they are inconsistent."""
    state = SchedulerState.from_json(valid_data["state"])
    assert state.by_id["req-A"].derived_phase() is Phase.PREFILL_CHUNK
    assert state.by_id["req-B"].derived_phase() is Phase.DECODE_ROW
    assert state.by_id["req-E"].queue is Queue.FINISHED
    broken = dataclasses.replace(state.by_id["req-C"], computed_tokens=4)
    assert broken.derived_phase() is None
