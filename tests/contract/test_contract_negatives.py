"""Every Loop 2 negative fixture produces the finding code it declares; the catalog is closed."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _contract_paths import LOOP2, NEGATIVE, VALID

from cbaudit.contract.cases import load_case
from cbaudit.contract.codes import CODES
from cbaudit.contract.validator import check_case_data

NEGATIVES = sorted(NEGATIVE.glob("*.case.json"))
CONTRACT_SRC = Path(__file__).resolve().parents[2] / "cbaudit" / "contract"
_CODE = re.compile(r"^(WORKLOAD|STATE|PLAN|RESULT|CASE|TRACE)\.[A-Z0-9_.]+$")


def test_there_are_enough_negatives() -> None:
    """The article's negative classes are covered by at least 30 fixtures."""
    assert len(NEGATIVES) >= 30


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.name)
def test_negative_produces_its_code(path: Path) -> None:
    """The patched case yields a located finding with the declared code."""
    case = load_case(path)
    assert case.error is None
    assert case.expect_code is not None
    findings, unusable, _ = check_case_data(case.data, file=str(path), locate=case.locate)
    if case.expect_code.startswith("SCHEMA."):  # a shape the contract refuses to read at all
        assert unusable
    else:
        assert case.expect_code in CODES
        assert not unusable
    hits = [f for f in findings if f.code == case.expect_code]
    assert hits, f"{path.name}: expected {case.expect_code}, got {[f.code for f in findings]}"
    for f in hits:
        assert f.location.pointer is not None and f.location.pointer.startswith("/")
        assert f.location.line is not None
        assert f.location.file is not None


@pytest.mark.parametrize("path", NEGATIVES[:3], ids=lambda p: p.name)
def test_negative_through_cli_exits_one(path: Path, cli: Callable[..., Any]) -> None:
    """`validate-plan` on a negative fixture exits 1 and names the code."""
    expect = json.loads(path.read_text())["expect_code"]
    r = cli("validate-plan", path, "--format", "json")
    assert r.code == 1
    codes = {f["code"] for res in json.loads(r.out)["results"] for f in res["findings"]}
    assert expect in codes


def test_every_emitted_code_is_catalogued() -> None:
    """Every code literal in the contract checks is in the catalog (no undocumented codes)."""
    missing: list[str] = []
    for src in CONTRACT_SRC.glob("*.py"):
        if src.name in ("packing.py", "codes.py"):
            continue
        for node in ast.walk(ast.parse(src.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and _CODE.match(node.value)
                and node.value not in CODES
            ):
                missing.append(f"{src.name}: {node.value}")
    assert missing == []


def test_the_valid_case_backs_the_article_numbers() -> None:
    """Ready order B:2, C:1, A:0; K_token 4 of 4 and K_seq 3 of 3; debits alpha 3, beta 1."""
    case = load_case(VALID)
    findings, unusable, metrics = check_case_data(case.data, file=str(VALID))
    assert findings == [] and not unusable
    assert metrics["selected_order"] == ["req-B:2", "req-C:1", "req-A:0"]
    assert (metrics["tokens_used"], metrics["token_budget"]) == (4, 4)
    assert (metrics["sequences_used"], metrics["sequence_budget"]) == (3, 3)
    assert metrics["debits"] == {"client-alpha": 3, "client-beta": 1}
    assert metrics["after"]["req-B"]["logical_length"] == 5
    assert metrics["after"]["req-B"]["committed"] == 4
    assert metrics["after"]["req-A"]["emitted"] == 0
    assert metrics["not_selected"]["req-D"] == "foreign readiness is false"


def test_checks_yaml_lists_every_negative() -> None:
    """checks.yaml declares one negative_case per fixture, with the fixture's code."""
    import yaml

    checks = yaml.safe_load((LOOP2 / "checks.yaml").read_text())["checks"]
    declared = {c["case"]: c.get("expect_code") for c in checks if c["kind"] == "negative_case"}
    for path in NEGATIVES:
        rel = f"negative/{path.name}"
        assert declared.get(rel) == json.loads(path.read_text())["expect_code"]
    ids = [c["id"] for c in checks]
    assert len(ids) == len(set(ids))


def test_docs_list_every_code() -> None:
    """docs/contract.md documents every catalogued finding code."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text()
    assert [c for c in CODES if f"`{c}`" not in text] == []
