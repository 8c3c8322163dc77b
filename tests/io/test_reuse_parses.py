"""Parses in a reuse scope: a document parsed before is not parsed again, and nobody shares its
data (`cbaudit.io.loader` inside `cbaudit.io.memo.reusing`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gate_test_kinds import ALL

import cbaudit.io.loader as loader
from cbaudit.checks.bundle import discover, load_bundle
from cbaudit.gate import runner
from cbaudit.io import memo
from cbaudit.io.loader import load_document, load_text
from cbaudit.model import InputError

YAML = "a: 1\nb:\n  - x\n  - {c: 2}\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the documents actually parsed (JSON and YAML), in order."""
    import cbaudit.io.yaml_strict as yaml_strict

    seen: list[str] = []
    real_json, real_yaml = loader.parse_json, yaml_strict.parse_yaml

    def parse_json(text: str, *, name: str, **kw: Any) -> Any:
        seen.append(name)
        return real_json(text, name=name, **kw)

    def parse_yaml(text: str, *, name: str, **kw: Any) -> Any:
        seen.append(name)
        return real_yaml(text, name=name, **kw)

    monkeypatch.setattr(loader, "parse_json", parse_json)
    monkeypatch.setattr(yaml_strict, "parse_yaml", parse_yaml)
    return seen


def test_the_same_bytes_are_parsed_once_and_each_caller_owns_its_data(parses: list[str]) -> None:
    with memo.reusing():
        first = load_text(YAML, name="a.yaml", fmt="yaml")
        first.data["b"][1]["c"] = 99  # the caller's own copy
        second = load_text(YAML.encode(), name="a.yaml", fmt="yaml")
        third = load_text(YAML, name="a.yaml", fmt="yaml")
    assert parses == ["a.yaml"]
    assert second.data == third.data == {"a": 1, "b": ["x", {"c": 2}]}
    assert second.data is not third.data and second.data["b"] is not third.data["b"]
    # positions come with the reused parse
    loc = third.locate("/b/1/c")
    assert (loc.line, loc.column) == (4, 9)
    assert third.sha256 == first.sha256


def test_outside_the_block_every_load_parses(parses: list[str]) -> None:
    load_text("{}", name="x.json")
    with memo.reusing():
        load_text("{}", name="x.json")
    load_text("{}", name="x.json")
    assert parses == ["x.json"] * 3
    assert not memo.active()


def test_changed_bytes_another_name_or_expectation_parse_anew(parses: list[str]) -> None:
    with memo.reusing():
        load_text('{"a": 1}', name="x.json")
        load_text('{"a": 2}', name="x.json")
        load_text('{"a": 1}', name="y.json")
        load_text('{"a": 1}', name="x.json", line_offset=3)
        with pytest.raises(InputError) as err:
            load_text('{"a": 1}', name="x.json", expect=list)
        assert err.value.findings[0].code == "LOAD.TOP_LEVEL_TYPE"
    assert parses == ["x.json"] * 2 + ["y.json"] + ["x.json"] * 2


def test_a_document_that_fails_is_refused_every_time(parses: list[str]) -> None:
    with memo.reusing():
        for _ in range(2):
            with pytest.raises(InputError) as err:
                load_text('{"a": 1, "a": 2}', name="dup.json")
            assert err.value.findings[0].code == "LOAD.DUPLICATE_KEY"
    assert parses == ["dup.json"] * 2


def test_nested_blocks_share_the_store_and_the_outermost_drops_it(parses: list[str]) -> None:
    with memo.reusing():
        load_text("{}", name="n.json")
        with memo.reusing():
            load_text("{}", name="n.json")
        load_text("{}", name="n.json")
    assert parses == ["n.json"]
    assert not memo.active()


def test_what_is_held_stays_within_its_limits(
    parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "REUSE_LIMIT", 40)
    monkeypatch.setattr(loader, "REUSE_MAX_DOCUMENT", 30)
    big = json.dumps({"k": "v" * 40})
    with memo.reusing():
        load_text(big, name="big.json")
        load_text(big, name="big.json")  # too large to keep: parsed again
        docs = [json.dumps({"i": i}) for i in range(4)]  # 8 characters each: 5 fit
        for d in docs:
            load_text(d, name="s.json")
        load_text(docs[0], name="s.json")  # still held
        for i in range(4, 9):
            load_text(json.dumps({"i": i}), name="s.json")  # pushes the oldest out
        load_text(docs[1], name="s.json")  # evicted: parsed again
        assert memo.held("loader.parse") <= 40
    assert parses.count("big.json") == 2
    assert parses.count("s.json") == 4 + 5 + 1


def test_a_file_rewritten_between_loads_is_read_and_parsed_anew(
    parses: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "f.json"
    path.write_text('{"v": 1}')
    with memo.reusing():
        assert load_document(path).data == {"v": 1}
        path.write_text('{"v": 2}')
        assert load_document(path).data == {"v": 2}
        assert load_document(path).data == {"v": 2}
    assert len(parses) == 2


@pytest.mark.parametrize("batch", [False, True])
def test_the_gate_reuses_parses_across_the_checks_it_runs(
    batch: bool, parses: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two checks that compare with the same expected file: it is parsed once, whether the
    checks run one by one (`--jobs 1`) or as one unit of a worker (`_run_batch`)."""
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)
    root = tmp_path / "b"
    root.mkdir()
    (root / "same.json").write_text('{"x": [1, 2]}')
    check = "kind: echo, expected: same.json, value: {x: [1, 2]}"
    (root / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: demo\ntitle: Demo\nchecks:\n"
        f"  - {{id: one, {check}}}\n  - {{id: two, {check}}}\n"
    )
    if batch:
        specs = [s for b in discover([tmp_path]) for s in load_bundle(b, ALL).checks]
        runs = runner._run_batch((ALL, None), specs)
        statuses = {r.outcome.value for run in runs for r in run.results}
    else:
        report = runner.run_gate([tmp_path], jobs=1)
        statuses = {r.outcome.value for r in report.results}
    assert statuses == {"passed"}
    assert sum(name.endswith("same.json") for name in parses) == 1
