"""The one-control sensitivity oracle on the article's base fixture."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cbaudit.io.loader import load_document
from cbaudit.model import FindingSink, Location
from cbaudit.results.sensitivity import (
    LEDGER_CONTROLS,
    _Case,
    _case_row,
    _check_base_expectation,
    _check_declarations,
    _check_hidden_case,
    _Fixture,
    _one_control,
    _varied_controls,
    ledger,
    run_sensitivity,
)
from tests.conftest import EVIDENCE

FIXTURE = EVIDENCE / "m5-2-continuous-batching" / "loop11" / "paper_sensitivity_fixture.yaml"


@pytest.fixture(scope="module")
def fixture() -> Any:
    """The Loop 11 sensitivity fixture."""
    return load_document(FIXTURE).data


def _codes(data: Any) -> list[str]:
    return [f.code for f in run_sensitivity(data, file="fx.yaml").findings]


class _Reads(dict[str, Any]):
    """A control set that remembers which controls were read."""

    def __init__(self, data: Any) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)


def test_the_ledger_reads_exactly_the_declared_ledger_controls(fixture: Any) -> None:
    """LEDGER_CONTROLS is what `ledger` reads, so the projection check below cannot miss one."""
    controls = _Reads(fixture["controls"])
    ledger(controls)
    assert controls.read == set(LEDGER_CONTROLS)


@pytest.mark.parametrize("control", ["chunk_tokens", "foreign_ready"])
def test_a_ledger_control_left_out_of_the_projection_is_a_finding(
    fixture: Any, control: str
) -> None:
    """A control the ledger reads but the online projection omits is located at the projection
    (it was an internal KeyError that crashed the gate's check)."""
    data = copy.deepcopy(fixture)
    data["online_projection"].remove(control)
    report = run_sensitivity(data, file="fx.yaml")
    assert [(f.code, f.location.pointer) for f in report.findings] == [
        ("RESULTS.SENSITIVITY.PROJECTION_INCOMPLETE", "/online_projection")
    ]
    assert control in report.findings[0].message


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


# The named steps of run_sensitivity, one at a time.


def _sink() -> FindingSink:
    return FindingSink(lambda pointer: Location(file="fx.yaml", pointer=pointer))


def _case(change: dict[str, Any], axis: str = "chunk_size", **expect: Any) -> _Case:
    return _Case.of(0, {"id": "c", "axis": axis, "change": change, "expect_changed": expect})


def test_declarations_refuse_hidden_in_projection_and_unknown_controls(fixture: Any) -> None:
    """A hidden control in the online projection leaks; a projection or axis name without a
    control is unknown; an impossible base control is invalid."""
    data = copy.deepcopy(fixture)
    data["online_projection"] += ["hidden_output_lengths", "no_such_control"]
    data["axes"]["extra_axis"] = "no_such_control"
    data["controls"]["reserved_rows"] = 99
    sink = _sink()
    _check_declarations(data, sink)
    assert [(f.code, f.location.pointer) for f in sink.findings] == [
        ("RESULTS.HIDDEN_TRUTH.LEAK", "/online_projection/16"),
        ("RESULTS.SENSITIVITY.UNKNOWN_CONTROL", "/online_projection/17"),
        ("RESULTS.SENSITIVITY.UNKNOWN_CONTROL", "/axes/extra_axis"),
        ("RESULTS.SENSITIVITY.INVALID_CONTROL", "/controls/reserved_rows"),
    ]


def test_base_expectation_reports_each_drifting_entry(fixture: Any) -> None:
    """A wrong value and an entry the ledger does not derive each drift, at their own key."""
    fx = _Fixture.of(fixture)
    expected = {**fixture["expected_base"], "chunks": 5, "not_derived": 1}
    sink = _sink()
    _check_base_expectation(expected, fx.base_ledger, sink)
    assert [f.location.pointer for f in sink.findings] == [
        "/expected_base/chunks",
        "/expected_base/not_derived",
    ]
    assert {f.code for f in sink.findings} == {"RESULTS.SENSITIVITY.EXPECTATION_DRIFT"}


@pytest.mark.parametrize(
    ("change", "axis", "code"),
    [
        ({"chunk_tokens": 2, "token_budget": 6}, "chunk_size", "RESULTS.SENSITIVITY.COMPOUND"),
        ({}, "chunk_size", "RESULTS.SENSITIVITY.NO_CHANGE"),
        ({"no_such_control": 2}, "chunk_size", "RESULTS.SENSITIVITY.UNKNOWN_CONTROL"),
        ({"chunk_tokens": 2}, "no_such_axis", "RESULTS.SENSITIVITY.UNKNOWN_AXIS"),
        ({"chunk_tokens": 2}, "token_budget", "RESULTS.SENSITIVITY.AXIS_MISMATCH"),
        ({"chunk_tokens": 4}, "chunk_size", "RESULTS.SENSITIVITY.NO_CHANGE"),
    ],
)
def test_one_control_refuses_each_malformed_change(
    fixture: Any, change: dict[str, Any], axis: str, code: str
) -> None:
    """Anything but one known control, on its own axis, set to a new value: one finding, no
    control."""
    sink = _sink()
    assert _one_control(_Fixture.of(fixture), _case(change, axis), sink) is None
    assert [f.code for f in sink.findings] == [code]


def test_one_control_names_the_changed_control(fixture: Any) -> None:
    """A well-formed case yields its control and no finding."""
    sink = _sink()
    assert _one_control(_Fixture.of(fixture), _case({"chunk_tokens": 2}), sink) == "chunk_tokens"
    assert sink.findings == []


def test_varied_controls_applies_a_valid_change(fixture: Any) -> None:
    """The base controls with the one change applied, and nothing else changed."""
    fx = _Fixture.of(fixture)
    varied = _varied_controls(fx, _case({"chunk_tokens": 2}), "chunk_tokens", _sink())
    assert varied == {**fx.base, "chunk_tokens": 2}


@pytest.mark.parametrize(
    ("control", "value", "pointer"),
    [
        ("chunk_tokens", "eight", "/cases/0/change/chunk_tokens"),  # not valid for the schema
        ("prefix_hit_tokens", 17, "/cases/0/change/prefix_hit_tokens"),  # past the prompt
        ("reservation_ceiling_rows", 7, "/cases/0/change/reserved_rows"),  # below reserved rows
    ],
)
def test_varied_controls_refuses_values_that_break_the_ledger(
    fixture: Any, control: str, value: Any, pointer: str
) -> None:
    """A value the schema refuses, or one that makes the ledger meaningless, is INVALID_CONTROL
    at the control it breaks, and the case is dropped."""
    sink = _sink()
    assert _varied_controls(_Fixture.of(fixture), _case({control: value}), control, sink) is None
    assert [(f.code, f.location.pointer) for f in sink.findings] == [
        ("RESULTS.SENSITIVITY.INVALID_CONTROL", pointer)
    ]


def test_case_row_reports_only_the_entries_that_changed(fixture: Any) -> None:
    """A token-budget case changes the piggyback entries only; as expected, no finding."""
    fx = _Fixture.of(fixture)
    case = _case({"token_budget": 6}, "token_budget", piggyback_room=2, piggyback_decodes=2)
    sink = _sink()
    row = _case_row(fx, case, "token_budget", {**fx.base, "token_budget": 6}, sink)
    assert row["online_changed"] == {"piggyback_room": 2, "piggyback_decodes": 2}
    assert row["offline_changed"] == {} and row["online_projection_unchanged"] is False
    assert (row["from"], row["to"]) == (8, 6)
    assert sink.findings == []


def test_case_row_flags_a_hidden_control_in_the_online_view(fixture: Any) -> None:
    """When a hidden control reaches the online projection, its case leaks."""
    data = copy.deepcopy(fixture)
    data["online_projection"].append("hidden_output_lengths")
    fx = _Fixture.of(data)
    case = _case({"hidden_output_lengths": [9]}, "output_distribution")
    sink = _sink()
    row = _case_row(
        fx, case, "hidden_output_lengths", {**fx.base, "hidden_output_lengths": [9]}, sink
    )
    assert row["online_projection_unchanged"] is False
    assert [f.code for f in sink.findings] == ["RESULTS.HIDDEN_TRUTH.LEAK"]


def test_hidden_case_may_not_expect_online_changes() -> None:
    """A hidden-truth case that expects an online change leaks, even when nothing changed."""
    sink = _sink()
    _check_hidden_case(_case({}, chunks=1), "hidden_output_lengths", True, sink)
    assert [(f.code, f.location.pointer) for f in sink.findings] == [
        ("RESULTS.HIDDEN_TRUTH.LEAK", "/cases/0/expect_changed")
    ]
    quiet = _sink()
    _check_hidden_case(_case({}), "hidden_output_lengths", True, quiet)
    assert quiet.findings == []
