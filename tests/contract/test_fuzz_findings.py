"""The three cases fuzzing found `validate-plan` accepting, each refused with its own code."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from _contract_paths import LOOP2, TRACE, VALID

from cbaudit.contract.trace import validate_trace
from cbaudit.contract.validator import check_case_data
from cbaudit.model import CheckStatus

RECOMPUTE = LOOP2 / "valid-recompute.case.json"


def _case(path: Path = RECOMPUTE) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _codes(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    findings, _, _ = check_case_data(data)
    return [(f.code, f.location.pointer) for f in findings]


def test_the_valid_cases_stay_clean() -> None:
    """The cases the fuzzer started from still pass: the new rules refuse only the broken."""
    assert _codes(_case()) == [] and _codes(_case(VALID)) == []


def test_a_state_without_its_service_ledger_is_refused() -> None:
    """`state/completed_service` removed while the workload names clients:
    STATE.COMPLETED_SERVICE.MISSING at the missing member."""
    data = _case()
    del data["state"]["completed_service"]
    assert _codes(data) == [("STATE.COMPLETED_SERVICE.MISSING", "/state/completed_service")]


def test_a_state_without_clients_needs_no_ledger() -> None:
    """No request or view names a client: a state without completed_service is complete."""
    data = _case()
    del data["state"]["completed_service"]
    for record in (data["workload"]["requests"], data["state"]["requests"]):
        for r in record:
            r.pop("client", None)
    data["result"]["service_debits"] = []
    assert _codes(data) == []


def test_an_empty_ledger_is_a_ledger() -> None:
    """Before any service the ledger is empty, and that is enough."""
    data = _case()
    data["state"]["completed_service"] = {}
    assert _codes(data) == []


@pytest.mark.parametrize(
    ("client", "token"), [("client-gamma", "client-gamma"), ("a/b~c", "a~1b~0c")]
)
def test_a_ledger_entry_for_an_unknown_client_is_refused(client: str, token: str) -> None:
    """An extra client key in completed_service: STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT, with
    the member's pointer escaped."""
    data = _case()
    data["state"]["completed_service"][client] = 2
    assert _codes(data) == [
        ("STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT", f"/state/completed_service/{token}")
    ]


def test_a_client_named_only_by_a_view_is_known() -> None:
    """A client the state's view names (not its declaration) may have a ledger entry."""
    data = _case()
    data["state"]["requests"][2]["client"] = "client-gamma"
    data["state"]["completed_service"]["client-gamma"] = 0
    assert (
        "STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT",
        "/state/completed_service/client-gamma",
    ) not in _codes(data)


@pytest.mark.parametrize(
    ("pointer", "value"),
    [
        ("/plan/selected/0/request_generation", -0.0),
        ("/plan/selected/0/request_generation", 0.0),
        ("/state/requests/0/snapshot_version", 6.0),
        ("/state/state_version", 21.0),
        ("/plan/decision_id", 11.0),
        ("/plan/selected/1/tie_break_key/0", 1.0),
        ("/plan/selected/1/positions/0", 3.0),
        ("/state/completed_service/client-beta", 4.0),
        ("/result/service_debits/0/tokens", 1e0),
        ("/workload/budgets/token_budget", 4.0),
    ],
)
def test_an_integer_written_as_a_float_is_refused(pointer: str, value: float) -> None:
    """-0.0 (and any float) where the schema requires an integer is SCHEMA.INTEGER.FLOAT:
    the case is unreadable, never read as the integer it equals."""
    data = _case()
    *parents, last = pointer.strip("/").split("/")
    node: Any = data
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    findings, unusable, metrics = check_case_data(data)
    assert unusable and metrics == {}
    assert [(f.code, f.location.pointer) for f in findings] == [("SCHEMA.INTEGER.FLOAT", pointer)]
    assert repr(value) in findings[0].message


def test_floats_where_numbers_belong_pass() -> None:
    """A float in a `number` field (times, tick length) is no integer written as a float."""
    data = _case()
    data["state"]["monotonic_now"] = 11.0
    data["workload"]["requests"][0]["arrival"] = 0.0
    data["workload"]["clock"]["tick_ms"] = 1.0
    assert _codes(data) == []


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_trace_record_with_a_float_generation_is_refused(tmp_path: Path) -> None:
    """In a trace, the record holding -0.0 is refused with its line; the rest is still read."""
    records = [json.loads(line) for line in TRACE.read_text().splitlines()]
    plan = next(i for i, r in enumerate(records) if r["record"] == "plan")
    bad = copy.deepcopy(records)
    bad[plan]["data"]["selected"][0]["request_generation"] = -0.0
    result = validate_trace(_write(tmp_path / "t.jsonl", bad))
    assert result.status is CheckStatus.ERROR
    hits = [f for f in result.findings if f.code == "SCHEMA.INTEGER.FLOAT"]
    assert [(f.location.line, f.location.pointer) for f in hits] == [
        (plan + 1, "/data/selected/0/request_generation")
    ]


def test_a_trace_with_float_times_passes(tmp_path: Path) -> None:
    """Integral float times (a tick clock's `monotonic_now`) are numbers, not integers."""
    records = [json.loads(line) for line in TRACE.read_text().splitlines()]
    for r in records:
        if r["record"] == "state":
            r["data"]["monotonic_now"] = float(r["data"].get("monotonic_now", 0))
    result = validate_trace(_write(tmp_path / "t.jsonl", records))
    assert result.findings == () and result.status is not CheckStatus.ERROR


def test_the_missing_ledger_message_stays_short() -> None:
    """Many named clients (ten declared, two more by views): the first five, then a count."""
    data = _case()
    del data["state"]["completed_service"]
    for i, r in enumerate(data["workload"]["requests"]):
        r["client"] = f"client-{i}"
    for i in range(7):
        extra = dict(data["workload"]["requests"][0], request_id=f"extra-{i}", client=f"c{i}")
        extra.pop("arrival_order", None)
        data["workload"]["requests"].append(extra)
    findings, _, _ = check_case_data(data)
    [missing] = [f for f in findings if f.code == "STATE.COMPLETED_SERVICE.MISSING"]
    assert "(c0, c1, c2, c3, c4, ... (12 in all))" in missing.message
