"""The rebuild (RECOMPUTE_CHUNK) rule: phase derivation, output clock and semantic service."""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from typing import Any

import pytest
from _contract_paths import LOOP2
from hypothesis import given
from hypothesis import strategies as st

from cbaudit.contract.plan_contract import phase_rank
from cbaudit.contract.records import Phase, derive_phase, rebuild_rows, semantic_rows
from cbaudit.contract.validator import check_case_data, validate_trace

VALID_RECOMPUTE = LOOP2 / "valid-recompute.case.json"
TRACE_RECOMPUTE = LOOP2 / "recompute-iterations-10-11.trace.jsonl"
R = 1  # req-R's position in the plan's selected list and the result's items


@pytest.fixture
def rc_data() -> dict[str, Any]:
    """A fresh copy of the valid recompute case as plain JSON data."""
    data: dict[str, Any] = json.loads(VALID_RECOMPUTE.read_text(encoding="utf-8"))
    return data


def _codes(data: dict[str, Any]) -> list[str]:
    findings, unusable, _ = check_case_data(data, file="case.json")
    assert not unusable
    return sorted({f.code for f in findings})


@pytest.mark.parametrize(
    ("p", "e", "c", "phase"),
    [
        (4, 0, 0, Phase.PREFILL_CHUNK),
        (4, 0, 3, Phase.PREFILL_CHUNK),
        (4, 0, 4, None),  # a finished prompt has emitted token 1
        (4, 0, 5, None),
        (4, 2, 5, Phase.DECODE_ROW),
        (4, 2, 0, Phase.RECOMPUTE_CHUNK),
        (4, 2, 4, Phase.RECOMPUTE_CHUNK),
        (4, 2, 6, None),  # computed ahead of the latest emitted token
        (4, 1, 4, Phase.DECODE_ROW),
        (4, 1, 3, Phase.RECOMPUTE_CHUNK),  # preempted after token 1: the prompt is rebuilt
    ],
)
def test_derive_phase_table(p: int, e: int, c: int, phase: Phase | None) -> None:
    """Frontiers derive prefill, decode, rebuild, or nothing, exactly as docs/contract.md says."""
    assert derive_phase(p, e, c) is phase


@pytest.mark.parametrize(
    ("p", "e", "start", "end", "service", "overhead"),
    [
        (4, 0, 0, 2, 2, 0),  # prompt rows of a first prefill are service
        (4, 2, 5, 6, 1, 0),  # ordinary decode row
        (4, 2, 0, 3, 0, 3),  # first rebuild chunk: overhead only
        (4, 2, 3, 6, 1, 2),  # second chunk reaches p + e: one semantic row
        (4, 2, 0, 6, 1, 5),  # whole rebuild in one interval: T_target - T_ready = 5 overhead
        (4, 2, 3, 3, 0, 0),  # nothing completed
    ],
)
def test_semantic_rows_table(
    p: int, e: int, start: int, end: int, service: int, overhead: int
) -> None:
    """Rows below p + e - 1 of an emitting request are overhead; the emitting row is service."""
    assert semantic_rows(p, e, start, end) == service
    assert rebuild_rows(p, e, start, end) == overhead


@given(
    p=st.integers(1, 50),
    e=st.integers(1, 50),
    cuts=st.lists(st.integers(0, 100), min_size=1, max_size=6),
)
def test_rebuild_split_into_chunks_debits_one_row(p: int, e: int, cuts: list[int]) -> None:
    """However a rebuild [0, p+e) is chunked, service totals 1 row and overhead p + e - 1."""
    stream = p + e
    bounds = sorted({0, stream, *(x % stream for x in cuts)})
    service = sum(semantic_rows(p, e, a, b) for a, b in pairwise(bounds))
    overhead = sum(rebuild_rows(p, e, a, b) for a, b in pairwise(bounds))
    assert (service, overhead) == (1, stream - 1)


def test_phase_rank_of_an_unlisted_rebuild_is_the_prefill_rank() -> None:
    """Two-phase orders rank RECOMPUTE_CHUNK like PREFILL_CHUNK; a listed one keeps its index."""
    two = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    assert phase_rank(two, Phase.RECOMPUTE_CHUNK) == phase_rank(two, Phase.PREFILL_CHUNK) == 1
    assert phase_rank((Phase.PREFILL_CHUNK, Phase.DECODE_ROW), Phase.RECOMPUTE_CHUNK) == 0
    three = (Phase.RECOMPUTE_CHUNK, Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    assert phase_rank(three, Phase.RECOMPUTE_CHUNK) == 0
    assert phase_rank(three, Phase.DECODE_ROW) == 1


def test_valid_recompute_case_backs_its_numbers(rc_data: dict[str, Any]) -> None:
    """The second chunk emits output 3, debits client-alpha one row and reports 2 overhead rows."""
    findings, unusable, metrics = check_case_data(rc_data, file="case.json")
    assert findings == [] and not unusable
    assert metrics["phases"] == ["DECODE_ROW", "RECOMPUTE_CHUNK"]
    assert metrics["debits"] == {"client-alpha": 1, "client-beta": 1}
    assert metrics["recompute_overhead_tokens"] == 2
    assert metrics["after"]["req-R"] == {
        "emitted": 3,
        "computed": 6,
        "committed": 6,
        "logical_length": 7,
    }


def test_the_two_chunk_trace_is_clean() -> None:
    """Both iterations of the rebuild (no output, then output 3) satisfy the contract."""
    result = validate_trace(TRACE_RECOMPUTE)
    assert [f.code for f in result.findings] == []
    assert result.metrics["records"] == {"plan": 2, "result": 2, "state": 2, "workload": 1}


def test_ordinary_cases_report_no_overhead_metric() -> None:
    """Cases without a rebuilding request keep their metric set (existing expectations hold)."""
    data = json.loads((LOOP2 / "valid.case.json").read_text(encoding="utf-8"))
    _, _, metrics = check_case_data(data, file="valid.case.json")
    assert "recompute_overhead_tokens" not in metrics


def test_rebuild_reaching_the_stream_must_emit(rc_data: dict[str, Any]) -> None:
    """A rebuild that completes to p + e but publishes nothing breaks the output clock."""
    result = rc_data["result"]
    result["items"][R]["after"].update(emitted_tokens=2, logical_length=6)
    result["output_events"] = [o for o in result["output_events"] if o["request_id"] != "req-R"]
    assert _codes(rc_data) == ["RESULT.OUTPUT_CLOCK.WRONG"]


def test_rebuild_short_of_the_stream_emits_nothing(rc_data: dict[str, Any]) -> None:
    """A rebuild completing [3,5) without output and without debit is legal."""
    item = rc_data["result"]["items"][R]
    item["completed"]["end"] = 5
    item["after"].update(emitted_tokens=2, computed_tokens=5, committed_tokens=5, logical_length=6)
    rc_data["result"]["output_events"] = [
        o for o in rc_data["result"]["output_events"] if o["request_id"] != "req-R"
    ]
    rc_data["result"]["service_debits"][0]["tokens"] = 0
    assert _codes(rc_data) == []


def test_planned_rebuild_service_is_planned_service(rc_data: dict[str, Any]) -> None:
    """Debiting the planned emitting row of a rebuild that stopped short is PLANNED_SERVICE."""
    item = rc_data["result"]["items"][R]
    item["completed"]["end"] = 5
    item["after"].update(emitted_tokens=2, computed_tokens=5, committed_tokens=5, logical_length=6)
    rc_data["result"]["output_events"] = [
        o for o in rc_data["result"]["output_events"] if o["request_id"] != "req-R"
    ]
    assert _codes(rc_data) == ["RESULT.DEBIT.PLANNED_SERVICE"]


def test_rebuild_view_still_needs_k_equal_c(rc_data: dict[str, Any]) -> None:
    """A rebuilding view with committed != computed is STATE.COMMITTED.NOT_AT_COMPUTED."""
    del rc_data["result"]
    rc_data["state"]["requests"][0]["committed_tokens"] = 2
    assert _codes(rc_data) == ["STATE.COMMITTED.NOT_AT_COMPUTED"]


def test_rebuild_may_stop_at_the_decode_frontier(rc_data: dict[str, Any]) -> None:
    """A rebuild [3,5) ending at p + e - 1 is legal and leaves an ordinary decode view."""
    del rc_data["result"]
    work = rc_data["plan"]["selected"][R]
    work.update(end=5, positions=[3, 4])
    rc_data["plan"]["budget_ledger"]["tokens_used"] = 3
    assert _codes(rc_data) == []
    assert derive_phase(4, 2, 5) is Phase.DECODE_ROW


def test_a_listed_rebuild_phase_ranks_at_its_index(rc_data: dict[str, Any]) -> None:
    """phase_order [RECOMPUTE_CHUNK, DECODE_ROW, PREFILL_CHUNK] puts the rebuild first."""
    del rc_data["result"]
    tb = rc_data["workload"]["policy"]["tie_break"]
    tb["phase_order"] = ["RECOMPUTE_CHUNK", "DECODE_ROW", "PREFILL_CHUNK"]
    wrong_order = copy.deepcopy(rc_data)
    assert "PLAN.TIE_BREAK.FORGED" in _codes(wrong_order)
    decode, rebuild = rc_data["plan"]["selected"]
    decode["tie_break_key"][0] = 1
    rebuild["tie_break_key"][0] = 0
    rc_data["plan"]["selected"] = [rebuild, decode]
    assert _codes(rc_data) == []


def test_phase_order_must_list_both_ordinary_phases(rc_data: dict[str, Any]) -> None:
    """A phase_order naming the rebuild but not PREFILL_CHUNK is a schema error."""
    rc_data["workload"]["policy"]["tie_break"]["phase_order"] = ["DECODE_ROW", "RECOMPUTE_CHUNK"]
    findings, unusable, _ = check_case_data(rc_data, file="case.json")
    assert unusable
    assert "SCHEMA.CONTAINS" in {f.code for f in findings}
