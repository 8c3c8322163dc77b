"""Enormous numbers in a case are findings, computed in time linear in the input.

A plan interval [0, 10**15) or an output index near 10**15 once made the validator build a
range of that length (a MemoryError, or minutes of work). These cases pin the arithmetic.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _contract_paths import VALID

from cbaudit.contract.validator import check_case_data

HUGE = 10**15


def _case() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VALID.read_text(encoding="utf-8"))
    return data


def _codes(data: dict[str, Any]) -> set[str]:
    findings, _, _ = check_case_data(data, file="hostile.json")
    return {f.code for f in findings}


def test_a_huge_interval_end_is_a_finding() -> None:
    data = _case()
    data["plan"]["selected"][2]["end"] = HUGE
    codes = _codes(data)
    assert "PLAN.POSITIONS.FORGED" in codes


def test_a_huge_emitted_frontier_is_a_finding() -> None:
    """An emitted frontier near 10**15 is judged without enumerating its output indices."""
    data = _case()
    data["result"]["items"][0]["after"]["emitted_tokens"] = HUGE
    codes = _codes(data)
    assert {"RESULT.OUTPUT_EVENT.MISMATCH", "RESULT.OUTPUT.EXCEEDS_MAX"} <= codes


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("start", -HUGE, "SCHEMA.MINIMUM"),
        ("start", HUGE, "PLAN.INTERVAL.AFTER_FRONTIER"),
        ("end", -HUGE, "SCHEMA.MINIMUM"),
        ("end", HUGE, "PLAN.DECODE.MULTI_ROW"),
    ],
)
def test_huge_interval_bounds_are_their_findings(field: str, value: int, code: str) -> None:
    """A decode row's bound at -/+10**15 is the schema's or the interval rule's finding."""
    data = _case()
    data["plan"]["selected"][0][field] = value
    assert code in _codes(data)
