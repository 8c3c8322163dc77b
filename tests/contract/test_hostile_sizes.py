"""Enormous numbers in a case are findings, computed in time linear in the input.

A plan interval [0, 10**15) or an output index near 10**15 once made the validator build a
range of that length (a MemoryError, or minutes of work). These cases pin the arithmetic.
"""

from __future__ import annotations

import copy
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
    data = _case()
    item = data["result"]["items"][0]
    item["after"]["emitted_tokens"] = HUGE
    codes = _codes(copy.deepcopy(data))
    assert codes and any(c.startswith("RESULT.") for c in codes)


@pytest.mark.parametrize("field", ["start", "end"])
def test_huge_negative_and_positive_bounds_never_raise(field: str) -> None:
    for value in (-HUGE, HUGE):
        data = _case()
        data["plan"]["selected"][0][field] = value
        assert _codes(data)  # a finding, not an exception
