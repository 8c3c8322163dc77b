"""Integers written as floats: the strict schema pass, the walk and the schema path rule."""

from __future__ import annotations

from cbaudit.io.integers import (
    _allows_float,
    float_integer_findings,
    integral_floats,
    strictly_valid,
)
from cbaudit.io.schemas import is_valid

PLAN = {
    "decision_id": 1,
    "input_state_version": 1,
    "policy_id": "p",
    "policy_version": "1",
    "selected": [],
    "budget_ledger": {
        "token_budget": 4,
        "tokens_used": 0,
        "sequence_budget": 2,
        "sequences_used": 0,
    },
}


def test_integral_floats_are_found_in_document_order() -> None:
    """The walk lists every float with a zero fraction, with its path, and nothing else."""
    doc = {"a": [1, 2.0, 2.5, {"b": -0.0}], "c": True, "d": 1e3, "e": "3.0"}
    assert integral_floats(doc) == [(("a", 1), 2.0), (("a", 3, "b"), -0.0), (("d",), 1000.0)]
    assert integral_floats(4.0) == [((), 4.0)] and integral_floats(4) == []


def test_the_strict_pass_refuses_what_jsonschema_accepts() -> None:
    """jsonschema reads 2.0 as an integer; the strict pass does not, and ints still pass."""
    doc = {**PLAN, "input_state_version": 2.0}
    assert is_valid(doc, "iteration-plan")
    assert not strictly_valid(doc, "iteration-plan")
    assert strictly_valid(PLAN, "iteration-plan")


def test_findings_name_each_integer_position() -> None:
    """Each float at an integer position is one located SCHEMA.INTEGER.FLOAT finding."""
    doc = {**PLAN, "decision_id": -0.0, "input_state_version": 1.0}
    found = float_integer_findings(doc, "iteration-plan", file="p.json", pointer_prefix="/data")
    assert [(f.code, f.location.pointer, f.location.file) for f in found] == [
        ("SCHEMA.INTEGER.FLOAT", "/data/decision_id", "p.json"),
        ("SCHEMA.INTEGER.FLOAT", "/data/input_state_version", "p.json"),
    ]


def test_the_schema_path_rule() -> None:
    """Number fields admit floats; integer fields, oneOf integer|string and unknown paths
    (fail closed) do not."""
    assert _allows_float("scheduler-state", ("monotonic_now",))
    assert _allows_float("workload-manifest", ("requests", None, "arrival"))
    assert not _allows_float("scheduler-state", ("requests", None, "request_generation"))
    assert not _allows_float("scheduler-state", ("decision_id",))
    assert not _allows_float("scheduler-state", ("completed_service", "client-a"))
    assert not _allows_float("iteration-plan", ("no_such_member",))
