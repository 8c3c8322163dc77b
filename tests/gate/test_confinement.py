"""What a check may read and write, beyond its spec fields: paths inside the files it reads are
confined too (the read log), and `gate --update` writes only inside the bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from repo_paths import M52

from cbaudit.gate.runner import run_gate
from cbaudit.io.reads import ReadLog, note_read, recording
from cbaudit.model import ExitCode, InputError


def _bundle(root: Path, checks: list[dict[str, object]], head: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"  - {json.dumps(c)}\n" for c in checks)
    (root / "bundle.yaml").write_text(
        f"schema_version: 1\nbundle: b\ntitle: B\n{head}checks:\n{lines}", encoding="utf-8"
    )
    return root


def _codes(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.code for f in report.findings}


@pytest.mark.parametrize("where", ["relative", "absolute", "inside"])
def test_a_cost_table_named_inside_the_options_stays_in_the_bundle(
    tmp_path: Path, where: str
) -> None:
    """A replay's cost-model table is read by the simulator, which takes any path: the read
    log refuses one outside the bundle (GATE.PATH.ESCAPE), relative or absolute."""
    root = tmp_path / "b"
    root.mkdir()
    shutil.copy(M52 / "loop3" / "abc.workload.yaml", root / "abc.workload.yaml")
    results = M52 / "bench" / "results-cpu-tiny.json"
    table = {
        "relative": "../outside/results.json",
        "absolute": str(tmp_path / "outside" / "results.json"),
        "inside": "results.json",
    }[where]
    (tmp_path / "outside").mkdir()
    shutil.copy(results, tmp_path / "outside" / "results.json")
    shutil.copy(results, root / "results.json")
    check = {
        "id": "t",
        "kind": "replay",
        "workload": "abc.workload.yaml",
        "policy": "orca",
        "options": {"cost_model": "table", "cost_options": {"results": table}},
    }
    report = run_gate([_bundle(root, [check])], jobs=1)
    if where == "inside":
        assert "GATE.PATH.ESCAPE" not in _codes(report)
    else:
        assert _codes(report) == {"GATE.PATH.ESCAPE"}
        assert report.exit_code is ExitCode.UNUSABLE


@pytest.mark.parametrize("base", ["../../../outside.case.json", "ABSOLUTE"])
def test_a_negative_case_base_outside_the_bundle_is_refused(tmp_path: Path, base: str) -> None:
    """A patch case whose base lies outside the bundle (relative or absolute) is never read."""
    root = tmp_path / "b"
    (root / "negative").mkdir(parents=True)
    outside = tmp_path / "outside.case.json"
    shutil.copy(M52 / "loop2" / "valid.case.json", outside)
    patch = {
        "base": str(outside) if base == "ABSOLUTE" else base,
        "patch": [{"op": "replace", "path": "/plan/decision_id", "value": 99}],
        "expect_code": "PLAN.DECISION.MISMATCH",
    }
    (root / "negative" / "n.case.json").write_text(json.dumps(patch), encoding="utf-8")
    check = {"id": "n", "kind": "negative_case", "case": "negative/n.case.json"}
    report = run_gate([_bundle(root, [check])], jobs=1)
    assert _codes(report) == {"CASE.BASE.ESCAPE"}
    assert report.exit_code is ExitCode.UNUSABLE


def test_update_writes_only_inside_the_bundle(tmp_path: Path) -> None:
    """With a declared root a check may read an expected file above the bundle, but
    `gate --update` refuses to rewrite it (GATE.UPDATE.OUTSIDE_BUNDLE) and leaves it as is."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    root = repo / "evidence" / "b"
    root.mkdir(parents=True)
    shutil.copy(M52 / "loop2" / "valid.case.json", root / "valid.case.json")
    shared = repo / "evidence" / "shared.expected.json"
    shared.write_text('{"metrics": {}, "codes": []}\n', encoding="utf-8")
    check = {
        "id": "v",
        "kind": "plan_case",
        "case": "valid.case.json",
        "expected": "../shared.expected.json",
    }
    _bundle(root, [check], head="root: ..\n")
    assert _codes(run_gate([root], jobs=1)) == {"GATE.EXPECTED.DRIFT"}
    report = run_gate([root], update=True)
    assert _codes(report) == {"GATE.UPDATE.OUTSIDE_BUNDLE"}
    assert report.exit_code is ExitCode.UNUSABLE
    assert shared.read_text(encoding="utf-8") == '{"metrics": {}, "codes": []}\n'


def test_the_read_log_notes_each_file_once_and_permits_external_inputs(tmp_path: Path) -> None:
    """Inside its roots a read is noted once; outside, refused unless permitted (a `${VAR}`
    input); outside any recording nothing is noted."""
    inside, outside = tmp_path / "b" / "x.json", tmp_path / "ext" / "y.txt"
    inside.parent.mkdir()
    outside.parent.mkdir()
    inside.write_text("{}")
    outside.write_text("y")
    note_read(outside)  # no recording: nothing happens
    with recording([inside.parent]) as log:
        note_read(inside)
        note_read(inside)
        with pytest.raises(InputError) as err:
            note_read(outside, "ext/y.txt")
        assert err.value.findings[0].code == "GATE.PATH.ESCAPE"
        log.permit(outside.parent)
        note_read(outside)
        with recording([tmp_path]) as inner:  # a nested check reads for the outer one
            assert inner is log
    assert isinstance(log, ReadLog)
    assert [Path(p).name for p, _ in log.digests()] == ["x.json", "y.txt"]
