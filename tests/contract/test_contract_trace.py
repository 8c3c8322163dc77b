"""Streaming JSONL traces: order, located findings per line, bounded findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _contract_paths import TRACE

from cbaudit.contract.trace import validate_trace
from cbaudit.model import CheckStatus


def _lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TRACE.read_text().splitlines()]


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_valid_trace_passes() -> None:
    """The two-iteration trace satisfies the contract, record by record."""
    result = validate_trace(TRACE)
    assert result.outcome is CheckStatus.PASSED
    assert result.metrics["records"] == {"plan": 2, "result": 2, "state": 2, "workload": 1}


def test_finding_points_at_its_line(tmp_path: Path) -> None:
    """A stale plan on line 6 is reported at line 6 with a /data pointer."""
    records = _lines()
    records[5]["data"]["input_state_version"] = 7
    result = validate_trace(_write(tmp_path / "t.jsonl", records))
    assert result.outcome is CheckStatus.FAILED
    first = result.findings[0]
    assert first.code == "PLAN.STATE_VERSION.MISMATCH"
    assert first.location.line == 6
    assert first.location.pointer == "/data/input_state_version"


def test_plan_before_state_is_unusable(tmp_path: Path) -> None:
    """Records out of order are an unusable trace (TRACE.ORDER.*)."""
    records = _lines()
    result = validate_trace(_write(tmp_path / "t.jsonl", [records[0], records[2]]))
    assert result.outcome is CheckStatus.ERROR
    assert [f.code for f in result.findings] == ["TRACE.ORDER.NO_STATE"]


def test_bad_line_is_located_and_others_still_checked(tmp_path: Path) -> None:
    """A malformed line is a LOAD finding at its line; later records are still validated."""
    records = _lines()
    path = tmp_path / "t.jsonl"
    text = "".join(json.dumps(r) + "\n" for r in records[:3])
    text += '{"record": "result", "data": \n'
    bad_state = dict(records[4], data=dict(records[4]["data"], workload_id="other"))
    text += json.dumps(bad_state) + "\n"
    path.write_text(text)
    result = validate_trace(path)
    assert result.outcome is CheckStatus.ERROR
    codes = [(f.code.split(".")[0], f.location.line) for f in result.findings]
    assert codes[0] == ("LOAD", 4)
    assert ("STATE", 5) in codes


def test_unknown_record_kind_is_schema_error(tmp_path: Path) -> None:
    """A line that is not a trace record is a located SCHEMA finding."""
    result = validate_trace(_write(tmp_path / "t.jsonl", [{"record": "batch", "data": {}}]))
    assert result.outcome is CheckStatus.ERROR
    assert result.findings[0].code == "SCHEMA.ENUM"
    assert result.findings[0].location.line == 1


def test_findings_are_capped(tmp_path: Path) -> None:
    """Beyond the cap, findings are counted, not kept, so memory stays bounded."""
    records = _lines()
    stale = dict(records[2], data=dict(records[2]["data"], input_state_version=1))
    path = _write(tmp_path / "t.jsonl", [records[0], records[1], *([stale] * 50)])
    from cbaudit.contract import trace

    result = trace.validate_trace(path, max_findings=10)
    assert len(result.findings) == 11
    assert result.findings[-1].code == "TRACE.FINDINGS.TRUNCATED"
    assert result.metrics["findings_by_code"]["PLAN.STATE_VERSION.MISMATCH"] == 50
    assert result.metrics["findings_dropped"] == 40


def test_missing_trace_file(tmp_path: Path) -> None:
    """A missing trace is an ERROR result with LOAD.NOT_FOUND, not an exception."""
    result = validate_trace(tmp_path / "none.jsonl")
    assert result.outcome is CheckStatus.ERROR
    assert result.findings[0].code == "LOAD.NOT_FOUND"
