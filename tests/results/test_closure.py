"""Failure closure: sha256 bindings, case identity, pending bindings and --update."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cbaudit.results.closure import audit_closure


def _setup(tmp_path: Path, classes: int = 15) -> tuple[Path, dict[str, Any]]:
    (tmp_path / "prior").mkdir()
    checks = tmp_path / "prior" / "checks.yaml"
    checks.write_text("checks:\n  - id: prior-neg-one\n    kind: oracle\n", encoding="utf-8")
    neg = tmp_path / "neg.yaml"
    neg.write_text(
        "cases:\n  - id: rule-case\n    expect: RESULTS.SENSITIVITY.COMPOUND\n", encoding="utf-8"
    )
    doc = {
        "kind": "cbaudit.failure-closure",
        "schema_version": 1,
        "bindings": [
            {
                "id": "B01",
                "path": "prior/checks.yaml",
                "sha256": hashlib.sha256(checks.read_bytes()).hexdigest(),
                "role": "prior",
            },
            {
                "id": "B02",
                "path": "neg.yaml",
                "sha256": hashlib.sha256(neg.read_bytes()).hexdigest(),
                "role": "loop 11",
            },
        ],
        "rules": [
            {
                "id": "R1",
                "code": "RESULTS.SENSITIVITY.COMPOUND",
                "binding": "B02",
                "case": "rule-case",
            }
        ],
        "classes": [
            {
                "id": f"FC{i:02d}",
                "name": f"class {i}",
                "owner": "someone",
                "loop": 3,
                "prior": [{"binding": "B01", "case": "prior-neg-one"}],
                "rules": [],
                "artifacts": ["B01"],
            }
            for i in range(classes - 1)
        ]
        + [{"id": "FCR", "name": "rule class", "owner": "loop 11", "loop": 11, "rules": ["R1"]}],
    }
    path = tmp_path / "closure.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, doc


def _codes(doc: Any, tmp_path: Path, update: bool = False) -> list[str]:
    out = audit_closure(doc, file="closure.json", resolve=lambda rel: tmp_path / rel, update=update)
    return [f.code for f in out.findings]


def test_valid_closure_has_no_findings(tmp_path: Path) -> None:
    """Every binding matches, every case exists, fifteen classes are closed."""
    _, doc = _setup(tmp_path)
    assert _codes(doc, tmp_path) == []


def test_changed_artifact_is_hash_drift(tmp_path: Path) -> None:
    """Editing a bound file after binding is RESULTS.CLOSURE.HASH_DRIFT."""
    _, doc = _setup(tmp_path)
    (tmp_path / "prior" / "checks.yaml").write_text(
        "checks:\n  - id: prior-neg-one\n    kind: other\n", encoding="utf-8"
    )
    assert _codes(doc, tmp_path) == ["RESULTS.CLOSURE.HASH_DRIFT"]


def test_missing_artifact_pending_hash_and_pending_case(tmp_path: Path) -> None:
    """A missing file, a null hash and a `pending:` case id are each reported."""
    _, doc = _setup(tmp_path)
    doc["bindings"].append(
        {"id": "B03", "path": "later/checks.yaml", "sha256": None, "role": "later"}
    )
    doc["bindings"][1]["sha256"] = None
    doc["classes"][0]["prior"].append({"binding": "B03", "case": "pending:later loop"})
    codes = _codes(doc, tmp_path)
    assert sorted(codes) == [
        "RESULTS.CLOSURE.ARTIFACT_MISSING",
        "RESULTS.CLOSURE.PENDING",
        "RESULTS.CLOSURE.PENDING",
    ]


def test_unknown_case_rule_code_and_class_count(tmp_path: Path) -> None:
    """Unknown case ids, a rule whose case declares another code, and 14 classes are found."""
    _, doc = _setup(tmp_path)
    doc["classes"][1]["prior"][0]["case"] = "no-such-case"
    doc["rules"][0]["code"] = "RESULTS.THEOREM.TRANSFER"
    doc["classes"].pop(2)
    codes = _codes(doc, tmp_path)
    assert codes.count("RESULTS.CLOSURE.UNKNOWN_EVIDENCE") == 2
    assert "RESULTS.CLOSURE.CLASS_SET" in codes


def test_unclosed_class(tmp_path: Path) -> None:
    """A class with neither a prior case nor a rule is unclosed."""
    _, doc = _setup(tmp_path)
    doc["classes"][0]["prior"] = []
    assert _codes(doc, tmp_path) == ["RESULTS.CLOSURE.UNCLOSED"]


def test_update_refreshes_hashes_through_the_cli(cli: Callable[..., Any], tmp_path: Path) -> None:
    """`failure-closure --update` rewrites drifted hashes; the next check passes."""
    path, _ = _setup(tmp_path)
    (tmp_path / "neg.yaml").write_text(
        "cases:\n  - id: rule-case\n    expect: RESULTS.SENSITIVITY.COMPOUND\n    note: edited\n",
        encoding="utf-8",
    )
    assert cli("failure-closure", path).code == 1
    assert cli("failure-closure", path, "--update").code == 0
    assert cli("failure-closure", path).code == 0
    bound = json.loads(path.read_text())["bindings"][1]["sha256"]
    assert bound == hashlib.sha256((tmp_path / "neg.yaml").read_bytes()).hexdigest()
