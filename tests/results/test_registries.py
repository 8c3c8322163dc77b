"""The paper-contract and source-reported-result registries and their audit."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from cbaudit.io.loader import load_document
from cbaudit.model import FindingSink, Location
from cbaudit.results.coordinates import COMPARISON_GROUPS, flatten
from cbaudit.results.paths import shipped
from cbaudit.results.registries import (
    CONTRACT_FIELDS,
    _check_comparison_claims,
    _check_compositions,
    _check_contract_claims,
    _check_contract_fields,
    _check_ranking_declarations,
    _check_result_claims,
    _check_result_fields,
    _check_theorem,
    _comparable_pairs,
    audit_registries,
)


@pytest.fixture(scope="module")
def registries() -> tuple[Any, Any]:
    """The shipped registries, parsed."""
    contracts = load_document(shipped("paper_contracts.yaml")).data
    results = load_document(shipped("source_reported_results.yaml")).data
    return contracts, results


def _audit(contracts: Any, results: Any) -> tuple[list[str], dict[str, Any]]:
    out = audit_registries(contracts, results, contracts_file="c.yaml", results_file="r.yaml")
    return [f.code for f in out.findings], dict(out.summary)


def test_shipped_registries_are_clean_with_zero_comparable_pairs(
    registries: tuple[Any, Any],
) -> None:
    """Eight contracts, nine results, 36 pairs checked, none comparable, no ranking allowed."""
    codes, summary = _audit(*registries)
    assert codes == []
    assert summary["contracts"] == 8 and summary["results"] == 9
    assert summary["pairs_checked"] == 36
    assert summary["comparable_pairs"] == []
    assert summary["generic_policy_ranking_allowed"] is False
    assert summary["theorems"] == {"vtc-service-difference": "vtc"}


def test_every_contract_carries_all_nine_fields(registries: tuple[Any, Any]) -> None:
    """Each contract has G, I, S, D, U, O, M, A, F, non-claims and a source version."""
    for contract in registries[0]["contracts"]:
        for _, name in CONTRACT_FIELDS:
            assert contract[name], (contract["id"], name)
        assert contract["non_claims"] and contract["source"]["version"]


@pytest.mark.parametrize(("letter", "name"), CONTRACT_FIELDS)
def test_removing_any_k_field_is_rejected(
    registries: tuple[Any, Any], letter: str, name: str
) -> None:
    """Removing one of the nine K fields from any contract gives RESULTS.CONTRACT.FIELD_MISSING."""
    contracts = copy.deepcopy(registries[0])
    del contracts["contracts"][2][name]
    codes, _ = _audit(contracts, registries[1])
    assert "RESULTS.CONTRACT.FIELD_MISSING" in codes, letter


def test_a_comparable_pair_is_found_when_coordinates_match(registries: tuple[Any, Any]) -> None:
    """Two results with identical reported coordinates form a comparable pair (no false zero)."""
    results = copy.deepcopy(registries[1])
    twin = copy.deepcopy(results["results"][6])  # the VTC bound has every coordinate reported
    twin["id"] = "vtc-twin"
    results["results"].append(twin)
    codes, summary = _audit(registries[0], results)
    assert codes == []
    assert summary["comparable_pairs"] == [["vtc-service-difference-bound", "vtc-twin"]]


def test_missing_contract_is_a_set_mismatch(registries: tuple[Any, Any]) -> None:
    """Dropping the Preble contract breaks the eight-method set (and orphans its result)."""
    contracts = copy.deepcopy(registries[0])
    contracts["contracts"] = [c for c in contracts["contracts"] if c["id"] != "preble"]
    codes, _ = _audit(contracts, registries[1])
    assert "RESULTS.CONTRACT.SET_MISMATCH" in codes
    assert "RESULTS.RESULT.UNKNOWN_METHOD" in codes


def test_declared_complete_with_unreported_coordinate(registries: tuple[Any, Any]) -> None:
    """coordinate_complete: true with an unreported coordinate is rejected."""
    results = copy.deepcopy(registries[1])
    results["results"][0]["coordinate_complete"] = True
    codes, _ = _audit(registries[0], results)
    assert codes == ["RESULTS.RESULT.COORDINATE_INCOMPLETE"]


def test_audit_registries_cli(cli: Callable[..., Any]) -> None:
    """`cbaudit audit-registries` passes on the shipped registries and reports the counts."""
    r = cli("audit-registries", "-f", "json")
    assert r.code == 0
    metrics = json.loads(r.out)["results"][0]["metrics"]
    assert metrics["comparable_pairs"] == [] and metrics["contracts"] == 8


def test_registry_pairs_cli_refuses_every_pair(cli: Callable[..., Any]) -> None:
    """`compare-results --registry` checks 36 pairs, ranks none, lists differing coordinates."""
    r = cli("compare-results", "--registry", "registry:source_reported_results.yaml", "-f", "json")
    assert r.code == 0
    rep = json.loads(r.out)
    assert rep["summary"]["pairs_checked"] == 36
    assert rep["summary"]["comparable_pairs"] == []
    assert rep["summary"]["generic_policy_ranking_allowed"] is False
    pairs = [res for res in rep["results"] if res["check"] == "compare-results"]
    assert len(pairs) == 36
    assert all(p["metrics"]["differing_coordinates"] for p in pairs)
    fail = cli(
        "compare-results",
        "--registry",
        "registry:source_reported_results.yaml",
        "--fail-on",
        "incomparable",
    )
    assert fail.code == 1


# The named steps of the two registry audits, one at a time.


def _sink() -> FindingSink:
    return FindingSink(lambda pointer: Location(file="r.yaml", pointer=pointer))


def _pairs(sink: FindingSink) -> list[tuple[str, str]]:
    return [(f.code, f.location.pointer) for f in sink.findings]


def test_contract_fields_step(registries: tuple[Any, Any]) -> None:
    """An empty metric denominator and a missing source version are FIELD_MISSING at their
    fields; a drifted source version is SOURCE.DRIFT; a complete contract is quiet."""
    contracts = registries[0]
    c = copy.deepcopy(contracts["contracts"][0])
    sink = _sink()
    _check_contract_fields(c, "orca", "/contracts/0", contracts["sources"], sink)
    assert sink.findings == []
    c["metric"]["denominator"] = " "
    del c["source"]["version"]
    _check_contract_fields(c, "orca", "/contracts/0", contracts["sources"], sink)
    c["source"]["version"] = "another version"
    _check_contract_fields(c, "orca", "/contracts/0", contracts["sources"], sink)
    assert _pairs(sink) == [
        ("RESULTS.CONTRACT.FIELD_MISSING", "/contracts/0/metric/denominator"),
        ("RESULTS.CONTRACT.FIELD_MISSING", "/contracts/0/source/version"),
        ("RESULTS.CONTRACT.FIELD_MISSING", "/contracts/0/metric/denominator"),
        ("RESULTS.SOURCE.DRIFT", "/contracts/0/source/version"),
    ]


def test_contract_claims_step(registries: tuple[Any, Any]) -> None:
    """A local reproduction, hidden truth in the visible state and a scheduler-owned foreign
    fact are each found at their own pointer."""
    c = copy.deepcopy(registries[0]["contracts"][0])
    c["locally_reproduced"] = True
    c["visible_state"] = ["queue lengths", "realized output length"]
    c["foreign_owners"] = [{"fact": "kv capacity", "owner": "the scheduler"}]
    sink = _sink()
    _check_contract_claims(c, "orca", "/contracts/0", sink)
    assert _pairs(sink) == [
        ("RESULTS.EVIDENCE.OVERCLAIM", "/contracts/0/evidence_class"),
        ("RESULTS.HIDDEN_TRUTH.LEAK", "/contracts/0/visible_state/1"),
        ("RESULTS.OWNER.COLLAPSE", "/contracts/0/foreign_owners/0/owner"),
    ]


def test_theorem_step() -> None:
    """A theorem owned by another contract transfers; one without premises is incomplete; its
    (id, owner) is returned either way, and no theorem gives None."""
    sink = _sink()
    own = {"id": "t1", "owner": "vtc", "premises": ["p"]}
    assert _check_theorem(own, "vtc", "/contracts/4", sink) == ("t1", "vtc")
    assert sink.findings == []
    borrowed = {"id": "t1", "owner": "vtc", "premises": []}
    assert _check_theorem(borrowed, "orca", "/contracts/0", sink) == ("t1", "vtc")
    assert _check_theorem(None, "orca", "/contracts/0", sink) is None
    assert _pairs(sink) == [
        ("RESULTS.THEOREM.TRANSFER", "/contracts/0/theorem/owner"),
        ("RESULTS.THEOREM.PREMISES_MISSING", "/contracts/0/theorem/premises"),
    ]


def test_compositions_step() -> None:
    """A composition that inherits theorems, keeps the old contract, or names an unknown
    component is refused; a proper one is quiet; a non-mapping is skipped."""
    sink = _sink()
    good = {"id": "ok", "new_contract_required": True, "components": ["orca", "vtc"]}
    bad = {"id": "bad", "inherits_theorems": ["t1"], "components": ["orca", "nope"]}
    _check_compositions([good, "not a mapping", bad], {"orca", "vtc"}, sink)
    assert _pairs(sink) == [
        ("RESULTS.THEOREM.TRANSFER", "/compositions/2/inherits_theorems"),
        ("RESULTS.THEOREM.TRANSFER", "/compositions/2/new_contract_required"),
        ("RESULTS.RESULT.UNKNOWN_METHOD", "/compositions/2/components/1"),
    ]


def test_result_fields_step(registries: tuple[Any, Any]) -> None:
    """A missing coordinate, source location and value, an unknown source and a method
    without a contract are each found at their own pointer."""
    contracts, results = registries
    r = copy.deepcopy(results["results"][0])
    sink = _sink()
    _check_result_fields(r, "x", "/results/0", contracts["sources"], {"orca"}, sink)
    assert sink.findings == []
    del r["coordinates"]["load"]
    del r["source"]["location"]
    r["source"]["id"] = "nowhere"
    r["value"] = {"text": ""}
    _check_result_fields(r, "x", "/results/0", contracts["sources"], {"vtc"}, sink)
    assert _pairs(sink) == [
        ("RESULTS.RESULT.COORDINATE_MISSING", "/results/0/coordinates/load"),
        ("RESULTS.RESULT.COORDINATE_MISSING", "/results/0/source/location"),
        ("RESULTS.RESULT.COORDINATE_MISSING", "/results/0/value"),
        ("RESULTS.SOURCE.UNKNOWN", "/results/0/source"),
        ("RESULTS.RESULT.UNKNOWN_METHOD", "/results/0/method"),
    ]


def test_result_claims_step(registries: tuple[Any, Any]) -> None:
    """A measured evidence class, a claimed reproduction and a false `complete` are found; the
    result's flat coordinates are returned."""
    r = copy.deepcopy(registries[1]["results"][0])
    sink = _sink()
    assert _check_result_claims(r, "x", "/results/0", sink) == flatten(r["coordinates"])
    assert sink.findings == []
    r["coordinates"]["evidence_class"] = "measured_gpu"
    r["local_reproduction"] = True
    r["coordinate_complete"] = True
    _check_result_claims(r, "x", "/results/0", sink)
    assert _pairs(sink) == [
        ("RESULTS.EVIDENCE.OVERCLAIM", "/results/0/coordinates/evidence_class"),
        ("RESULTS.EVIDENCE.OVERCLAIM", "/results/0/local_reproduction"),
        ("RESULTS.RESULT.COORDINATE_INCOMPLETE", "/results/0/coordinate_complete"),
    ]


def test_ranking_declarations_step() -> None:
    """A weakened comparison set, an allowed generic ranking and a declared ranking are each
    refused; the honest declarations are quiet."""
    sink = _sink()
    honest = {"comparison_set": list(COMPARISON_GROUPS), "generic_policy_ranking_allowed": False}
    _check_ranking_declarations(honest, sink)
    assert sink.findings == []
    weak = {"comparison_set": list(COMPARISON_GROUPS)[1:], "ranking": ["a", "b"]}
    _check_ranking_declarations(weak, sink)
    assert _pairs(sink) == [
        ("RESULTS.COMPARISON_SET.WEAKENED", "/comparison_set"),
        ("RESULTS.RANKING.UNIVERSAL", "/generic_policy_ranking_allowed"),
        ("RESULTS.RANKING.UNIVERSAL", "/ranking"),
    ]


def test_comparable_pairs_step(registries: tuple[Any, Any]) -> None:
    """Equal coordinates pair up; a pair that differs lists the coordinates it differs on."""
    base = flatten(registries[1]["results"][6]["coordinates"])
    other = {**base, "load": "another load"}
    pairs, diffs = _comparable_pairs({"b": base, "a": base, "c": other})
    assert pairs == [["a", "b"]]
    assert diffs == {"a | c": ["load"], "b | c": ["load"]}


def test_comparison_claims_step(registries: tuple[Any, Any]) -> None:
    """A claim naming an unknown result, or ranking results that differ, is INCOMPARABLE; a
    claim between comparable results is allowed."""
    base = flatten(registries[1]["results"][6]["coordinates"])
    seen = {"a": base, "b": base, "c": {**base, "load": "another load"}}
    claims = [{"a": "a", "b": "b"}, {"a": "a", "b": "zz"}, {"a": "a", "b": "c", "claim": "x"}]
    sink = _sink()
    _check_comparison_claims(claims, seen, sink)
    assert _pairs(sink) == [
        ("RESULTS.RANKING.INCOMPARABLE", "/comparison_claims/1"),
        ("RESULTS.RANKING.INCOMPARABLE", "/comparison_claims/2"),
    ]
    assert "load ('" in sink.findings[1].message


@pytest.mark.parametrize(
    ("which", "edit"),
    [
        ("results", lambda c, r: r.update(comparison_set=[["workload"]])),
        ("contracts", lambda c, r: c["compositions"][0].update(components=[["ORCA"]])),
    ],
    ids=["list-in-comparison-set", "list-in-components"],
)
def test_a_shape_the_schema_refused_ends_the_audit(
    registries: tuple[Any, Any], which: str, edit: Callable[[Any, Any], None]
) -> None:
    """Where a shape the schema refused stops the meaning checks (a list where a name belongs
    used to raise TypeError, unhashable, and crash the gate's check), the schema findings are
    the audit."""
    contracts, results = copy.deepcopy(registries)
    edit(contracts, results)
    codes, summary = _audit(contracts, results)
    assert codes and all(c.startswith("SCHEMA.") for c in codes), codes
    assert summary == {"valid": False}
