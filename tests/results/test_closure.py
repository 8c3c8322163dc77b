"""Failure closure: sha256 bindings, case identity, pending bindings and --update."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cbaudit.model import FindingSink, InputError, Location
from cbaudit.results.closure import (
    _check_binding,
    _check_case,
    _check_class,
    _check_classes,
    _Evidence,
    audit_closure,
)


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


# The named steps of audit_closure, one at a time.


def _sink() -> FindingSink:
    return FindingSink(lambda pointer: Location(file="closure.json", pointer=pointer))


def _pairs(sink: FindingSink) -> list[tuple[str, str]]:
    return [(f.code, f.location.pointer) for f in sink.findings]


def _evidence(tmp_path: Path, doc: dict[str, Any]) -> _Evidence:
    evidence = _Evidence()
    for i, b in enumerate(doc["bindings"]):
        _check_binding(b, f"/bindings/{i}", lambda rel: tmp_path / rel, False, evidence, _sink())
    return evidence


def test_binding_step_loads_a_matching_file(tmp_path: Path) -> None:
    """A bound file with its recorded hash is loaded, with no finding and nothing pending."""
    _, doc = _setup(tmp_path)
    evidence = _evidence(tmp_path, doc)
    assert sorted(evidence.loaded) == ["B01", "B02"] and evidence.pending == []


def test_binding_step_refuses_unresolvable_missing_and_duplicate(tmp_path: Path) -> None:
    """A path the resolver refuses is unknown evidence; a missing file is pending and missing;
    a repeated id is unknown evidence; none of them loads."""

    def resolve(rel: str) -> Path:
        if rel.startswith(".."):
            raise InputError.at("GATE.PATH.ESCAPE", "escapes", rel)
        return tmp_path / rel

    _, doc = _setup(tmp_path)
    evidence, sink = _Evidence(), _sink()
    for i, path in enumerate(["../outside.yaml", "later.yaml"]):
        _check_binding(
            {"id": f"X{i}", "path": path}, f"/bindings/{i}", resolve, False, evidence, sink
        )
    _check_binding(doc["bindings"][0], "/bindings/2", resolve, False, evidence, sink)
    _check_binding(doc["bindings"][0], "/bindings/3", resolve, False, evidence, sink)
    assert _pairs(sink) == [
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/bindings/0/path"),
        ("RESULTS.CLOSURE.ARTIFACT_MISSING", "/bindings/1/path"),
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/bindings/3"),
    ]
    assert evidence.pending == ["X1"] and sorted(evidence.loaded) == ["B01"]


def test_binding_step_updates_the_hash_in_place(tmp_path: Path) -> None:
    """With `update` a stale or absent hash is replaced by the file's, with no finding."""
    _, doc = _setup(tmp_path)
    binding = {**doc["bindings"][0], "sha256": None}
    sink = _sink()
    _check_binding(binding, "/bindings/0", lambda rel: tmp_path / rel, True, _Evidence(), sink)
    assert binding["sha256"] == doc["bindings"][0]["sha256"] and sink.findings == []


def test_binding_step_reports_an_unreadable_file(tmp_path: Path) -> None:
    """A bound file that exists but does not parse is unknown evidence, and is not loaded."""
    (tmp_path / "bad.yaml").write_text("key: [unclosed\n", encoding="utf-8")
    evidence, sink = _Evidence(), _sink()
    binding = {"id": "B", "path": "bad.yaml", "sha256": None}
    _check_binding(binding, "/bindings/0", lambda rel: tmp_path / rel, True, evidence, sink)
    assert _pairs(sink) == [("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/bindings/0/path")]
    assert evidence.loaded == {}


def test_case_step_checks_name_binding_presence_and_code(tmp_path: Path) -> None:
    """Each way a rejection case can fail to close is one finding at the reference."""
    _, doc = _setup(tmp_path)
    evidence, sink = _evidence(tmp_path, doc), _sink()
    _check_case(evidence, "B01", "prior-neg-one", "/ok", sink)
    _check_case(evidence, "B02", "rule-case", "/ok-rule", sink, "RESULTS.SENSITIVITY.COMPOUND")
    _check_case(evidence, "B01", "pending:loop 12", "/pending", sink)
    _check_case(evidence, "B09", "prior-neg-one", "/unbound", sink)
    _check_case(evidence, "B01", "no-such-case", "/absent", sink)
    _check_case(evidence, "B02", "rule-case", "/other-code", sink, "RESULTS.THEOREM.TRANSFER")
    assert _pairs(sink) == [
        ("RESULTS.CLOSURE.PENDING", "/pending/case"),
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/unbound/binding"),
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/absent/case"),
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/other-code/case"),
    ]


def test_case_step_is_quiet_for_a_binding_that_did_not_load(tmp_path: Path) -> None:
    """A case in a binding already reported missing is not reported again."""
    evidence = _Evidence()
    evidence.bindings["B03"] = {"id": "B03", "path": "later.yaml"}
    sink = _sink()
    _check_case(evidence, "B03", "some-case", "/classes/0/prior/0", sink)
    assert sink.findings == []


def test_class_step_names_unknown_artifacts_and_rules(tmp_path: Path) -> None:
    """A class naming an unbound artifact and an unknown rule gets one finding for each, and
    its row lists what closes it."""
    _, doc = _setup(tmp_path)
    evidence, sink = _evidence(tmp_path, doc), _sink()
    cls = {**doc["classes"][0], "artifacts": ["B01", "B07"], "rules": ["R1", "R9"]}
    row = _check_class(cls, "FC00", "/classes/0", evidence, {"R1": doc["rules"][0]}, sink)
    assert _pairs(sink) == [
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/classes/0/artifacts/1"),
        ("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", "/classes/0/rules/1"),
    ]
    assert row["closed_by"] == ["B01:prior-neg-one", "R1", "R9"]


def test_classes_step_counts_prior_references_and_duplicates(tmp_path: Path) -> None:
    """Prior references are counted over every class; a repeated id and a wrong class count
    are each a CLASS_SET finding."""
    _, doc = _setup(tmp_path, classes=3)
    doc["classes"][1]["id"] = doc["classes"][0]["id"]
    evidence, sink = _evidence(tmp_path, doc), _sink()
    rules = {"R1": doc["rules"][0]}
    rows, prior_refs = _check_classes(doc["classes"], evidence, rules, 4, sink)
    assert prior_refs == 2 and len(rows) == 3
    assert _pairs(sink) == [
        ("RESULTS.CLOSURE.CLASS_SET", "/classes/1"),
        ("RESULTS.CLOSURE.CLASS_SET", "/classes"),
    ]
