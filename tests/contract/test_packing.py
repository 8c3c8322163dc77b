"""PackedIteration: derivation from a plan, schema round trip, and every PACK.* code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cbaudit.contract.packing import (
    PACK_CODES,
    PackedIteration,
    derive_packed_iteration,
    token_labels,
    validate_packed_iteration,
)
from cbaudit.contract.records import (
    BudgetLedger,
    IterationPlan,
    Phase,
    Queue,
    RequestView,
    SchedulerState,
    WorkItem,
)
from cbaudit.io.schemas import validate
from cbaudit.model import InputError

# (request_id, snapshot, prompt, emitted, start, end, phase): the article's Loop 4 selection.
_SELECTION = (
    ("A", 6, 4, 2, 5, 6, Phase.DECODE_ROW),
    ("B", 2, 3, 0, 0, 3, Phase.PREFILL_CHUNK),
    ("C", 4, 3, 0, 2, 3, Phase.PREFILL_CHUNK),
)


def _records() -> tuple[SchedulerState, IterationPlan]:
    views = tuple(
        RequestView(rid, 0, snap, p, e, s, s, True, False, Queue.RUNNING)
        for rid, snap, p, e, s, _end, _ph in _SELECTION
    )
    items = tuple(
        WorkItem(rid, 0, snap, s, end, ph, tuple(range(s, end)), (i,))
        for i, (rid, snap, _p, _e, s, end, ph) in enumerate(_SELECTION)
    )
    state = SchedulerState("w", 41, 7, views)
    plan = IterationPlan(41, 7, "pol", "1", items, BudgetLedger(5, 5, 3, 3))
    return state, plan


@pytest.fixture
def derived() -> PackedIteration:
    state, plan = _records()
    return derive_packed_iteration(plan, state)


def test_derivation_matches_the_article_fixture(derived: PackedIteration) -> None:
    """q = [1,3,1], Q_tot = 5, offsets [0,1,4,5], labels A5 B0 B1 B2 C2, handle v6 for A."""
    assert [s.width for s in derived.segments] == [1, 3, 1]
    assert derived.q_tot == 5
    assert derived.request_offsets == (0, 1, 4, 5)
    assert token_labels(derived) == ["A5", "B0", "B1", "B2", "C2"]
    assert derived.request_local_position == (5, 0, 1, 2, 2)
    assert derived.logical_cache_handle[0] == "logical-kv:A:0:v6"
    assert derived.phase_by_row[0] is Phase.DECODE_ROW
    assert [s.to_json() for s in derived.visible_keys_by_row[0]] == [
        {"request_key": "A:0", "start": 0, "end": 6}
    ]


def test_derived_record_is_valid_and_round_trips(derived: PackedIteration) -> None:
    """A faithful packing has no findings, fits its schema and survives to_json/from_json."""
    _, plan = _records()
    assert validate_packed_iteration(derived, plan=plan) == []
    data = derived.to_json()
    assert validate(data, "packed-iteration") == []
    assert PackedIteration.from_json(data) == derived


def test_derive_refuses_an_unbound_item() -> None:
    """Packing a plan item with no request view is unusable input (PACK.DERIVE.UNBOUND)."""
    state, plan = _records()
    bare = SchedulerState("w", 41, 7, state.requests[:2])
    with pytest.raises(InputError) as err:
        derive_packed_iteration(plan, bare)
    assert err.value.findings[0].code == "PACK.DERIVE.UNBOUND"


Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = path.strip("/").split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _append_span(row: int, span: dict[str, Any]) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        doc["visible_keys_by_row"][row].append(span)

    return edit


def _swap_segments(doc: dict[str, Any]) -> None:
    doc["segments"][1], doc["segments"][2] = doc["segments"][2], doc["segments"][1]


def _drop_last_segment(doc: dict[str, Any]) -> None:
    doc["segments"].pop()


def _duplicate_segment(doc: dict[str, Any]) -> None:
    doc["segments"][2] = dict(doc["segments"][1], start=2, end=3)


CASES: list[tuple[str, Edit, str]] = [
    ("offsets length", _set("/request_offsets", [0, 1, 4]), "PACK.OFFSETS.LENGTH"),
    ("offsets origin", _set("/request_offsets/0", 1), "PACK.OFFSETS.ORIGIN"),
    ("offsets width", _set("/request_offsets/2", 3), "PACK.OFFSETS.WIDTH"),
    ("offsets total", _set("/request_offsets/3", 6), "PACK.OFFSETS.TOTAL"),
    ("rows length", _set("/request_local_position", [5, 0, 1, 2]), "PACK.ROWS.LENGTH"),
    ("route", _set("/request_key_by_row/4", "B:0"), "PACK.ROUTE.MISMATCH"),
    ("position", _set("/request_local_position/2", 2), "PACK.POSITION.MISMATCH"),
    ("row phase", _set("/phase_by_row/1", "DECODE_ROW"), "PACK.PHASE.ROW_MISMATCH"),
    ("decode after prompt", _set("/segments/0/prompt_tokens", 6), "PACK.PHASE.INTERVAL"),
    ("prefill past prompt", _set("/segments/1/prompt_tokens", 2), "PACK.PHASE.INTERVAL"),
    ("empty segment", _set("/segments/2/end", 2), "PACK.SEGMENT.EMPTY"),
    ("duplicate segment", _duplicate_segment, "PACK.SEGMENT.DUPLICATE"),
    ("handle count", _set("/logical_cache_handle", ["logical-kv:A:0:v6"]), "PACK.HANDLE.LENGTH"),
    ("handle dup", _set("/logical_cache_handle/2", "logical-kv:A:0:v6"), "PACK.HANDLE.DUPLICATE"),
    ("handle binding", _set("/logical_cache_handle/1", "logical-kv:B:0:v1"), "PACK.HANDLE.BINDING"),
    (
        "cross request",
        _append_span(4, {"request_key": "A:0", "start": 0, "end": 1}),
        "PACK.VISIBILITY.CROSS_REQUEST",
    ),
    ("future", _set("/visible_keys_by_row/1/0/end", 2), "PACK.VISIBILITY.FUTURE"),
    ("missing", _set("/visible_keys_by_row/3/0/start", 1), "PACK.VISIBILITY.MISSING"),
    (
        "seen twice",
        _append_span(2, {"request_key": "B:0", "start": 0, "end": 1}),
        "PACK.VISIBILITY.MISSING",
    ),
    ("decision", _set("/decision_id", 42), "PACK.BINDING.DECISION"),
    ("state version", _set("/input_state_version", 8), "PACK.BINDING.STATE_VERSION"),
    ("policy", _set("/policy_version", "2"), "PACK.BINDING.POLICY"),
    ("interval", _set("/segments/2/snapshot_version", 5), "PACK.INTERVAL.CHANGED"),
    ("unplanned", _set("/segments/2/request_id", "Z"), "PACK.SEGMENT.UNPLANNED"),
    ("missing segment", _drop_last_segment, "PACK.SEGMENT.MISSING"),
    ("order", _swap_segments, "PACK.SEGMENT.ORDER"),
]


@pytest.mark.parametrize(("label", "edit", "code"), CASES, ids=[c[0] for c in CASES])
def test_each_corruption_yields_its_code(
    derived: PackedIteration, label: str, edit: Edit, code: str
) -> None:
    """One corrupted field of a faithful packing produces the named PACK.* code."""
    _, plan = _records()
    data = derived.to_json()
    edit(data)
    assert validate(data, "packed-iteration") == [], label
    findings = validate_packed_iteration(PackedIteration.from_json(data), plan=plan, file="p.json")
    codes = {f.code for f in findings}
    assert code in codes, (label, codes)
    assert all(f.location.file == "p.json" and f.location.pointer for f in findings)


def test_catalog_covers_the_cases() -> None:
    """Every PACK code the tests name is in the catalog, and every catalog code is exercised."""
    named = {code for _, _, code in CASES} | {"PACK.DERIVE.UNBOUND"}
    assert named == set(PACK_CODES)


def test_unusable_offsets_skip_row_checks(derived: PackedIteration) -> None:
    """With offsets that cannot slice the rows, row checks are skipped instead of crashing."""
    data = derived.to_json()
    data["request_offsets"] = [0, 4, 1, 5]
    codes = {f.code for f in validate_packed_iteration(PackedIteration.from_json(data))}
    assert "PACK.OFFSETS.WIDTH" in codes
    assert not any(c.startswith(("PACK.ROUTE", "PACK.VISIBILITY")) for c in codes)


def test_rebuild_after_recompute_packs_cleanly() -> None:
    """A plan with a RECOMPUTE_CHUNK item packs and validates with no findings."""
    from repo_paths import EVIDENCE

    from cbaudit.contract.cases import load_case
    from cbaudit.contract.packing import derive_packed_iteration, validate_packed_iteration
    from cbaudit.contract.records import IterationPlan, Phase, SchedulerState
    from cbaudit.io.schemas import is_valid

    case = load_case(EVIDENCE / "m5-2-continuous-batching/loop2/valid-recompute.case.json")
    state = SchedulerState.from_json(case.data["state"])
    plan = IterationPlan.from_json(case.data["plan"])
    assert Phase.RECOMPUTE_CHUNK in {item.phase for item in plan.selected}
    packed = derive_packed_iteration(plan, state)
    assert is_valid(packed.to_json(), "packed-iteration")
    assert validate_packed_iteration(packed, plan=plan) == []


HUGE = 10**15


@pytest.mark.parametrize(
    ("label", "edit", "code"),
    [
        ("huge position", _set("/request_local_position/1", HUGE), "PACK.POSITION.MISMATCH"),
        ("huge span", _set("/visible_keys_by_row/1/0/end", HUGE), "PACK.VISIBILITY.FUTURE"),
    ],
)
def test_hostile_sizes_are_findings_not_memory_errors(
    derived: PackedIteration, label: str, edit: Edit, code: str
) -> None:
    """Positions and spans near 10**15 are judged by arithmetic, never enumerated."""
    _, plan = _records()
    data = derived.to_json()
    edit(data)
    findings = validate_packed_iteration(PackedIteration.from_json(data), plan=plan)
    assert code in {f.code for f in findings}, label
