"""The one-control sensitivity oracle on the article's base fixture."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cbaudit.io.loader import load_document
from cbaudit.results.sensitivity import ledger, run_sensitivity
from tests.conftest import EVIDENCE

FIXTURE = EVIDENCE / "m5-2-continuous-batching" / "loop11" / "paper_sensitivity_fixture.yaml"


@pytest.fixture(scope="module")
def fixture() -> Any:
    """The Loop 11 sensitivity fixture."""
    return load_document(FIXTURE).data


def _codes(data: Any) -> list[str]:
    return [f.code for f in run_sensitivity(data, file="fx.yaml").findings]


def test_base_ledger_matches_the_article(fixture: Any) -> None:
    """4 chunks, 136 pairs, 24 rows, 3 MiB, 4 piggyback rows, 4 intents, crossover at tick 8."""
    out = run_sensitivity(fixture, file="fx.yaml")
    assert out.findings == ()
    base = out.report["base_ledger"]
    assert (base["chunks"], base["causal_pairs"], base["history_rows"]) == (4, 136, 24)
    assert base["history_bytes"] == 3 * 1024 * 1024 and base["history_mib"] == "3"
    assert (base["piggyback_decodes"], base["reservation_intents"]) == (4, 4)
    assert base["aging_crossover_tick"] == 8
    assert out.report["case_count"] == 10 and out.report["axes_varied"] == 9


def test_chunk_rows_are_the_design_counterexample(fixture: Any) -> None:
    """Smaller chunks: more piggyback room but more invocations and exposure; no best chunk."""
    rows = {r["id"]: r for r in run_sensitivity(fixture, file="fx.yaml").report["cases"]}
    small, large = rows["chunk-2"]["online_changed"], rows["chunk-8"]["online_changed"]
    assert small["piggyback_room"] > 4 > large["piggyback_room"]
    assert small["chunks"] > 4 > large["chunks"]
    assert small["history_rows"] > 24 > large["history_rows"]


def test_causal_pairs_invariant_over_chunk_sizes() -> None:
    """Every chunk size keeps S(S+1)/2 pairs (the ledger checks the telescoping sum)."""
    base = load_document(FIXTURE).data["controls"]
    for c in range(1, 17):
        assert ledger({**base, "chunk_tokens": c})["causal_pairs"] == 136


def test_hidden_sweep_leaves_online_projection_unchanged(fixture: Any) -> None:
    """Changing hidden output lengths changes only the offline ledger."""
    rows = {r["id"]: r for r in run_sensitivity(fixture, file="fx.yaml").report["cases"]}
    hidden = rows["hidden-output-sweep"]
    assert hidden["online_changed"] == {} and hidden["online_projection_unchanged"] is True
    assert hidden["offline_changed"] == {"realized_output_total": 27}


def test_two_controls_at_once_is_compound(fixture: Any) -> None:
    """A case that changes two controls is rejected as compound."""
    data = copy.deepcopy(fixture)
    data["cases"][3]["change"] = {"sequence_budget": 3, "ready_decodes": 2}
    assert "RESULTS.SENSITIVITY.COMPOUND" in _codes(data)


def test_axis_mismatch_and_no_change(fixture: Any) -> None:
    """A case varying another axis's control, or changing nothing, is rejected."""
    data = copy.deepcopy(fixture)
    data["cases"][2]["change"] = {"sequence_budget": 3}
    data["cases"][4]["change"] = {"forecast_rows_per_request": 5}
    codes = _codes(data)
    assert "RESULTS.SENSITIVITY.AXIS_MISMATCH" in codes
    assert "RESULTS.SENSITIVITY.NO_CHANGE" in codes


def test_invalid_control_value_is_a_finding(fixture: Any) -> None:
    """A zero chunk size or a wrongly typed value is a located finding, not a crash."""
    data = copy.deepcopy(fixture)
    data["cases"][0]["change"] = {"chunk_tokens": 0}
    data["cases"][1]["change"] = {"chunk_tokens": "eight"}
    codes = _codes(data)
    assert codes.count("RESULTS.SENSITIVITY.INVALID_CONTROL") == 2


def test_expectation_drift_is_reported(fixture: Any) -> None:
    """A wrong declared change is expectation drift."""
    data = copy.deepcopy(fixture)
    data["cases"][5]["expect_changed"] = {"aging_crossover_tick": 5}
    assert _codes(data) == ["RESULTS.SENSITIVITY.EXPECTATION_DRIFT"]
