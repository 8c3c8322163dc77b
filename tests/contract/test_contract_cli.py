"""`cbaudit validate-plan`: exit codes, formats, broken files as results, atomic output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _contract_paths import NEGATIVE, TRACE, VALID, VALID6


def test_valid_case_passes_in_text(cli: Callable[..., Any]) -> None:
    """The valid case exits 0 and says PASS."""
    r = cli("validate-plan", VALID)
    assert r.code == 0
    assert "PASS" in r.out


def test_valid_case_passes_in_json(cli: Callable[..., Any]) -> None:
    """JSON output is deterministic and carries the input digest and metrics."""
    first = cli("validate-plan", VALID, VALID6, "--format", "json")
    second = cli("validate-plan", VALID, VALID6, "--format", "json")
    assert first.code == 0 and first.out == second.out
    report = json.loads(first.out)
    assert report["verdict"] == "pass"
    assert [i["path"] for i in report["inputs"]] == sorted([str(VALID), str(VALID6)])
    assert report["results"][0]["metrics"]["tokens_used"] == 4


def test_broken_file_is_a_result_not_an_abort(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A missing and a malformed file give exit 2 with LOAD findings; the valid one still runs."""
    bad = tmp_path / "bad.case.json"
    bad.write_text('{"kind": "plan_case", ')
    r = cli("validate-plan", tmp_path / "missing.json", bad, VALID, "--format", "json")
    assert r.code == 2
    report = json.loads(r.out)
    statuses = [res["status"] for res in report["results"]]
    assert statuses == ["error", "error", "passed"]
    assert report["results"][0]["findings"][0]["code"].startswith("LOAD.")
    assert report["results"][1]["findings"][0]["code"].startswith("LOAD.")
    assert "Traceback" not in r.err


def test_wrong_shape_is_unusable(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A case that is JSON but not a plan case exits 2 with a located SCHEMA finding."""
    bad = tmp_path / "shape.case.json"
    data = json.loads(VALID.read_text())
    data["plan"]["selected"][0]["start"] = "three"
    bad.write_text(json.dumps(data, indent=1))
    r = cli("validate-plan", bad, "--format", "json")
    assert r.code == 2
    finding = json.loads(r.out)["results"][0]["findings"][0]
    assert finding["code"] == "SCHEMA.TYPE"
    assert finding["location"]["pointer"] == "/plan/selected/0/start"


def test_leak_is_a_contract_finding_not_a_schema_error(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Hidden truth in the plan is PLAN.LEAK.HIDDEN_TRUTH (exit 1), not SCHEMA noise."""
    case = tmp_path / "leak.case.json"
    data = json.loads(VALID.read_text())
    data["plan"]["selected"][1]["realized_output_tokens"] = 5
    case.write_text(json.dumps(data))
    r = cli("validate-plan", case, "--format", "json")
    assert r.code == 1
    findings = json.loads(r.out)["results"][0]["findings"]
    assert [f["code"] for f in findings] == ["PLAN.LEAK.HIDDEN_TRUTH"]
    assert findings[0]["location"]["pointer"] == "/plan/selected/1/realized_output_tokens"


def test_output_file_and_quiet(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--output writes the whole report atomically; nothing else is left behind."""
    out = tmp_path / "report.json"
    neg = NEGATIVE / "plan-stale-snapshot.case.json"
    r = cli("validate-plan", neg, "--format", "json", "--output", out, "-q")
    assert r.code == 1
    assert json.loads(out.read_text())["verdict"] == "fail"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_trace_option(cli: Callable[..., Any]) -> None:
    """--trace validates a JSONL trace alongside cases."""
    r = cli("validate-plan", "--trace", TRACE, VALID, "--format", "json")
    assert r.code == 0
    results = json.loads(r.out)["results"]
    assert {res["check"] for res in results} == {"plan-contract", "plan-contract-trace"}


def test_no_input_is_a_usage_error(cli: Callable[..., Any]) -> None:
    """Without a case or a trace the command exits 2 with a message."""
    r = cli("validate-plan")
    assert r.code == 2
    assert "needs at least one" in r.err


def test_junit_and_sarif_render(cli: Callable[..., Any]) -> None:
    """The same report renders in the CI formats."""
    neg = NEGATIVE / "plan-forged-phase.case.json"
    junit = cli("validate-plan", neg, "--format", "junit")
    sarif = cli("validate-plan", neg, "--format", "sarif")
    assert junit.code == 1 and "PLAN.PHASE.FORGED" in junit.out
    assert sarif.code == 1 and "PLAN.PHASE.FORGED" in sarif.out
