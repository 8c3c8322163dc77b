"""The check kinds plan_case, negative_case and trace, parsed and run with a GateContext."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import M52

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import CheckResult, CheckStatus, InputError
from cbaudit.oracles.contract_cases import NEGATIVE_CASE, PLAN_CASE, TRACE

LOOP2 = M52 / "loop2"


def run_plan_case(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(PLAN_CASE, spec, ctx)


def run_negative_case(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(NEGATIVE_CASE, spec, ctx)


def run_trace(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(TRACE, spec, ctx)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A private copy of the Loop 2 folder inside a bundle root."""
    root = tmp_path / "bundle"
    shutil.copytree(LOOP2, root / "loop2")
    return root


def _ctx(root: Path, update: bool = False) -> GateContext:
    return GateContext(
        base_dir=root / "loop2",
        manifest="loop2/checks.yaml",
        pointer="/checks/0",
        bundle_root=root,
        update=update,
    )


def test_plan_case_passes_with_expected(bundle: Path) -> None:
    """The valid case passes and matches its expected metrics file."""
    spec = {
        "id": "v",
        "kind": "plan_case",
        "case": "valid.case.json",
        "expected": "expected/valid.case.expected.json",
    }
    [result] = run_plan_case(spec, _ctx(bundle))
    assert result.outcome is CheckStatus.PASSED
    assert result.metrics["selected_order"] == ["req-B:2", "req-C:1", "req-A:0"]


def test_plan_case_drift(bundle: Path) -> None:
    """A changed expectation is GATE.EXPECTED.DRIFT."""
    exp = bundle / "loop2" / "expected" / "valid.case.expected.json"
    data = json.loads(exp.read_text())
    data["metrics"]["tokens_used"] = 3
    exp.write_text(json.dumps(data))
    spec = {"id": "v", "case": "valid.case.json", "expected": "expected/valid.case.expected.json"}
    [result] = run_plan_case(spec, _ctx(bundle))
    assert [f.code for f in result.findings] == ["GATE.EXPECTED.DRIFT"]


def test_plan_case_on_negative_fails(bundle: Path) -> None:
    """A plan_case check over a negative fixture fails with the contract finding."""
    spec = {"id": "v", "case": "negative/plan-forged-phase.case.json"}
    [result] = run_plan_case(spec, _ctx(bundle))
    assert result.outcome is CheckStatus.FAILED
    assert [f.code for f in result.findings] == ["PLAN.PHASE.FORGED"]


def test_negative_case_passes_when_code_produced(bundle: Path) -> None:
    """A negative case passes when its declared code is among the findings."""
    spec = {"id": "n", "case": "negative/result-committed-ahead.case.json"}
    [result] = run_negative_case(spec, _ctx(bundle))
    assert result.outcome is CheckStatus.PASSED
    assert result.metrics["expect_code"] == "RESULT.COMMITTED.AHEAD"


def test_negative_case_fails_when_code_missing(bundle: Path) -> None:
    """A fixture that no longer triggers its code fails with CASE.EXPECT_CODE.NOT_PRODUCED."""
    path = bundle / "loop2" / "negative" / "plan-forged-phase.case.json"
    doc = json.loads(path.read_text())
    doc["patch"] = [{"op": "replace", "path": "/plan/selected/2/phase", "value": "PREFILL_CHUNK"}]
    path.write_text(json.dumps(doc))
    spec = {"id": "n", "case": "negative/plan-forged-phase.case.json"}
    [result] = run_negative_case(spec, _ctx(bundle))
    assert result.outcome is CheckStatus.FAILED
    assert [f.code for f in result.findings] == ["CASE.EXPECT_CODE.NOT_PRODUCED"]


def test_negative_case_spec_errors(bundle: Path) -> None:
    """Conflicting or unknown expected codes are unusable specs (InputError)."""
    conflict = {
        "id": "n",
        "case": "negative/plan-forged-phase.case.json",
        "expect_code": "PLAN.POSITIONS.FORGED",
    }
    with pytest.raises(InputError) as err:
        run_negative_case(conflict, _ctx(bundle))
    assert err.value.findings[0].code == "CASE.EXPECT_CODE.CONFLICT"
    path = bundle / "loop2" / "negative" / "plan-forged-phase.case.json"
    doc = json.loads(path.read_text())
    doc["expect_code"] = "PLAN.NO_SUCH.CODE"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        run_negative_case({"id": "n", "case": "negative/plan-forged-phase.case.json"}, _ctx(bundle))
    assert err.value.findings[0].code == "CASE.EXPECT_CODE.UNKNOWN"


def test_negative_case_broken_patch(bundle: Path) -> None:
    """A patch that cannot apply is an ERROR result with CASE.PATCH.INVALID."""
    path = bundle / "loop2" / "negative" / "plan-forged-phase.case.json"
    doc = json.loads(path.read_text())
    doc["patch"] = [{"op": "remove", "path": "/plan/nothing"}]
    path.write_text(json.dumps(doc))
    [result] = run_negative_case(
        {"id": "n", "case": "negative/plan-forged-phase.case.json"}, _ctx(bundle)
    )
    assert result.outcome is CheckStatus.ERROR
    assert [f.code for f in result.findings] == ["CASE.PATCH.INVALID"]


def test_path_escape_is_refused(bundle: Path) -> None:
    """A case path outside the bundle is refused by the gate context."""
    with pytest.raises(InputError) as err:
        run_plan_case({"id": "v", "case": "../../etc/passwd"}, _ctx(bundle))
    assert err.value.findings[0].code == "GATE.PATH.ESCAPE"


def test_trace_kind(bundle: Path) -> None:
    """The trace kind passes on the two-iteration trace."""
    [result] = run_trace({"id": "t", "trace": "iterations-5-6.trace.jsonl"}, _ctx(bundle))
    assert result.outcome is CheckStatus.PASSED
    assert result.check == "t"
