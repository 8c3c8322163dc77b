"""The paper-contract and source-reported-result registries and their audit."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from cbaudit.io.loader import load_document
from cbaudit.results.paths import shipped
from cbaudit.results.registries import CONTRACT_FIELDS, audit_registries


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
