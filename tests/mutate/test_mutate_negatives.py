"""The negative-fixture catalog: declared negatives per loop, floors and Loop 2 classes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _mutate_paths import BUNDLE

from cbaudit.checks.bundle import load_bundle
from cbaudit.kinds import KINDS
from cbaudit.model import InputError, Location
from cbaudit.mutate.bundle import declared_negatives, loop_label, valid_fixtures
from cbaudit.mutate.negatives import (
    ARTICLE_FLOORS,
    LOOP2_CLASSES,
    class_coverage,
    floor_results,
    parse_floors,
)


def read_bundle(root: Path) -> Any:
    """The bundle as the gate loads it (every entry parsed with the registry)."""
    return load_bundle(root, KINDS)


WHERE = Location(file="bundle.yaml")


def _bundle(tmp_path: Path, checks: list[dict[str, object]], loop: str = "7") -> Path:
    root = tmp_path / "b"
    (root / "l").mkdir(parents=True)
    (root / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: t\ntitle: t\ninclude: [l/checks.yaml]\n"
    )
    (root / "l" / "checks.yaml").write_text(json.dumps({"loop": loop, "checks": checks}))
    return root


def test_loop_labels() -> None:
    """'loop2', '2' and 2 name loop 2; no digits names none."""
    assert [loop_label(x) for x in ("loop2", "2", 2, "mutation", None)] == [
        "2",
        "2",
        "2",
        None,
        None,
    ]


def test_real_bundle_loop2_covers_every_article_class() -> None:
    """Every class of article 0x01A's negative list has a declared Loop 2 fixture."""
    negatives = declared_negatives(read_bundle(BUNDLE))
    coverage = class_coverage(negatives)
    assert [name for name, ids in coverage.items() if not ids] == []
    [loop2] = floor_results(negatives, {"2": "classes"}, where=WHERE)
    assert loop2.findings == () and loop2.metrics["classes_total"] == len(LOOP2_CLASSES) == 22


def test_real_bundle_valid_fixtures() -> None:
    """The bundle's valid fixtures are the plain positives, never a patched negative."""
    names = [f.name for f in valid_fixtures(read_bundle(BUNDLE), KINDS)]
    assert "loop2/valid.case.json" in names and "loop6/chunked_prefill.yaml" in names
    assert not any("negative" in n for n in names)


def test_floor_below_is_a_finding(tmp_path: Path) -> None:
    """A loop with fewer negatives than its floor fails with MUTATE.FLOOR.BELOW."""
    checks = [
        {"id": f"n{i}", "kind": "some_oracle", "fixture": "f.yaml", "expect_code": "X.Y"}
        for i in range(3)
    ]
    negatives = declared_negatives(read_bundle(_bundle(tmp_path, checks)))
    assert [(n.loop, n.codes) for n in negatives] == [("7", ("X.Y",))] * 3
    [short] = floor_results(negatives, {"7": 4}, where=WHERE)
    assert [f.code for f in short.findings] == ["MUTATE.FLOOR.BELOW"]
    [enough] = floor_results(negatives, {"7": 3}, where=WHERE)
    assert enough.findings == ()


def test_missing_loop2_class_is_named(tmp_path: Path) -> None:
    """A Loop 2 set without a planned-service debit negative names that class."""
    checks = [
        {"id": f"n{i}", "kind": "negative_case", "case": "c.json", "expect_code": code}
        for i, codes in enumerate(LOOP2_CLASSES.values())
        for code in sorted(codes)[:1]
        if code != "RESULT.DEBIT.PLANNED_SERVICE"
    ]
    negatives = declared_negatives(read_bundle(_bundle(tmp_path, checks, loop="loop2")))
    [res] = floor_results(negatives, {"2": "classes"}, where=WHERE)
    assert [f.code for f in res.findings] == ["MUTATE.FLOOR.CLASS_MISSING"]
    assert "planned-service debit" in res.findings[0].message


def test_collection_files_are_counted_case_by_case(tmp_path: Path) -> None:
    """A cbaudit.negative-fixtures file named by `fixtures` counts each of its cases."""
    root = _bundle(
        tmp_path, [{"id": "neg", "kind": "loop11_negative", "fixtures": "n.yaml"}], loop="11"
    )
    shutil.copy(
        BUNDLE / "loop11" / "invalid_paper_sensitivity_failure_fixtures.yaml", root / "l" / "n.yaml"
    )
    negatives = declared_negatives(read_bundle(root))
    assert len(negatives) >= 28 and all(n.codes for n in negatives)


def test_negative_without_code_is_a_finding(tmp_path: Path) -> None:
    """A negative_case whose file declares no code is MUTATE.NEGATIVE.NO_CODE."""
    root = _bundle(tmp_path, [{"id": "n", "kind": "negative_case", "case": "c.json"}])
    (root / "l" / "c.json").write_text("{}")
    [res] = floor_results(declared_negatives(read_bundle(root)), {"7": 1}, where=WHERE)
    assert [f.code for f in res.findings] == ["MUTATE.NEGATIVE.NO_CODE"]


def test_floors_parse() -> None:
    """Floors default to the article's; bad floors are MUTATE.SPEC.INVALID input errors."""
    assert parse_floors(None) == dict(ARTICLE_FLOORS)
    assert ARTICLE_FLOORS == {"2": "classes", "7": 19, "9": 20, "10": 20, "11": 28}
    for bad in ({"7": -1}, {"7": "classes"}, [], {"3": True}):
        with pytest.raises(InputError) as err:
            parse_floors(bad, file="c.yaml", pointer="/checks/0/floors")
        assert err.value.findings[0].code == "MUTATE.SPEC.INVALID"


def test_escaping_path_is_refused(tmp_path: Path) -> None:
    """A declared fixture outside the bundle is GATE.PATH.ESCAPE."""
    root = _bundle(tmp_path, [{"id": "n", "kind": "negative_case", "case": "../../x.json"}])
    with pytest.raises(InputError) as err:
        declared_negatives(read_bundle(root))
    assert err.value.findings[0].code == "GATE.PATH.ESCAPE"
