"""Streaming validation of a JSONL contract trace in bounded memory.

Each non-blank line is `{"record": "workload" | "state" | "plan" | "result", "data": {...}}`.
Records are checked in order against the latest workload, state and plan; only those three
(and their line numbers) are kept. Findings are capped (`max_findings`); beyond the cap they
are only counted, so memory does not grow with the length of the trace.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

from cbaudit.contract.issues import Issue
from cbaudit.contract.leaks import scan_leaks, strip_leaks
from cbaudit.contract.plan_contract import TieBreakKey, check_plan, rank_views
from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    SchedulerState,
    WorkloadManifest,
)
from cbaudit.contract.result_contract import check_result
from cbaudit.contract.state_contract import check_state, check_workload
from cbaudit.io.loader import load_text
from cbaudit.io.reads import note_read
from cbaudit.io.schemas import validate, validator_for_many
from cbaudit.model import (
    CheckResult,
    CheckStatus,
    EvidenceClass,
    Finding,
    InputError,
    Location,
    Severity,
)

CHECK_NAME = "plan-contract-trace"
DEFAULT_MAX_FINDINGS = 1000

_SCHEMA_OF = {
    "workload": "workload-manifest",
    "state": "scheduler-state",
    "plan": "iteration-plan",
    "result": "iteration-result",
}


class _Collector:
    """Keeps the first `limit` findings and counts every code."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: list[Finding] = []
        self.by_code: Counter[str] = Counter()
        self.unusable = False

    def add(self, finding: Finding, *, unusable: bool = False) -> None:
        self.by_code[finding.code] += 1
        self.unusable = self.unusable or unusable
        if len(self.kept) < self.limit:
            self.kept.append(finding)

    @property
    def dropped(self) -> int:
        return sum(self.by_code.values()) - len(self.kept)


def validate_trace(
    path: Path | str,
    *,
    display: str | None = None,
    max_findings: int = DEFAULT_MAX_FINDINGS,
) -> CheckResult:
    """Validate every record of a JSONL trace; one result for the whole trace."""
    name = display if display is not None else str(path)
    sink = _Collector(max_findings)
    counts: Counter[str] = Counter()
    lines: dict[str, int] = {}
    workload: WorkloadManifest | None = None
    state: SchedulerState | None = None
    plan: IterationPlan | None = None
    ranks: dict[str, TieBreakKey] = {}

    def emit(issues: list[Issue]) -> None:
        for issue in issues:
            pointer = "/data" + issue.pointer
            loc = Location(file=name, pointer=pointer, line=lines.get(issue.record))
            sink.add(Finding(code=issue.code, message=issue.message, location=loc))

    def broken(code: str, message: str, lineno: int, pointer: str = "") -> None:
        loc = Location(file=name, pointer=pointer, line=lineno)
        sink.add(Finding(code=code, message=message, location=loc), unusable=True)

    opened = _open(path, name, sink)
    if opened is None:
        return _result(name, sink, counts, 0)
    fh = opened
    lineno = 0
    records = 0
    record_ok = validator_for_many("trace-record")
    shape_ok = {kind: validator_for_many(schema) for kind, schema in _SCHEMA_OF.items()}
    try:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            records += 1
            obj = _parse_line(raw, name, lineno, sink)
            if obj is None:
                continue
            if not isinstance(obj, dict) or not record_ok(obj):
                for f in validate(obj, "trace-record", file=name):
                    loc = Location(file=name, pointer=f.location.pointer, line=lineno)
                    sink.add(Finding(f.code, f.message, f.severity, loc), unusable=True)
                continue
            kind: str = obj["record"]
            data: dict[str, Any] = obj["data"]
            counts[kind] += 1
            if not shape_ok[kind](data):
                data_or_none = _shape(data, kind, name, lineno, sink)
                if data_or_none is None:
                    continue
                data = data_or_none
            if kind == "workload":
                workload = WorkloadManifest.from_json(data)
                state = plan = None
                lines["workload"] = lineno
                emit(check_workload(workload))
                continue
            if workload is None:
                broken("TRACE.ORDER.NO_WORKLOAD", f"{kind} record before any workload", lineno)
                continue
            if kind == "state":
                state = SchedulerState.from_json(data)
                ranks = rank_views(workload, state)
                plan = None
                lines["state"] = lineno
                emit(check_state(workload, state))
            elif kind == "plan":
                if state is None:
                    broken("TRACE.ORDER.NO_STATE", "plan record before any state", lineno)
                    continue
                plan = IterationPlan.from_json(data)
                lines["plan"] = lineno
                emit(check_plan(workload, state, plan, ranks=ranks))
            else:
                if state is None or plan is None:
                    broken("TRACE.ORDER.NO_PLAN", "result record before any plan", lineno)
                    continue
                result = IterationResult.from_json(data)
                lines["result"] = lineno
                emit(check_result(workload, state, plan, result))
    finally:
        fh.close()
    if records == 0:
        broken("LOAD.EMPTY", "the trace holds no records", 1)
    return _result(name, sink, counts, lineno)


def _open(path: Path | str, name: str, sink: _Collector) -> BinaryIO | None:
    """Open the trace, or record a located LOAD finding and return None."""
    p = Path(path)
    code, message = "", ""
    if not p.exists():
        code, message = "LOAD.NOT_FOUND", "no such file"
    elif p.is_dir():
        code, message = "LOAD.IS_DIRECTORY", "is a directory, expected a JSONL file"
    else:
        note_read(p, name)  # the gate's read log (confined, then hashed into the report)
        try:
            return open(p, "rb")
        except OSError as err:
            code, message = "LOAD.UNREADABLE", f"cannot read: {err.strerror or err}"
    sink.add(Finding(code, message, location=Location(file=name)), unusable=True)
    return None


def _parse_line(raw: bytes, name: str, lineno: int, sink: _Collector) -> Any:
    """Parse one line with the strict loader (duplicates, NaN, depth...); None when broken."""
    try:
        text = raw.rstrip(b"\r\n")  # a truncated record ends on its own line, not the next
        return load_text(text, name=name, fmt="json", expect=dict, line_offset=lineno - 1).data
    except InputError as err:
        for f in err.findings:
            loc = Location(
                file=name, pointer=f.location.pointer, line=lineno, column=f.location.column
            )
            sink.add(Finding(f.code, f.message, f.severity, loc), unusable=True)
    return None


def _shape(
    data: dict[str, Any], kind: str, name: str, lineno: int, sink: _Collector
) -> dict[str, Any] | None:
    """Name leaks, strip them, schema-check the rest; None when the record is unusable."""
    if kind != "workload":
        leaks = scan_leaks(data, kind)  # type: ignore[arg-type]
        for issue in leaks:
            loc = Location(file=name, pointer="/data" + issue.pointer, line=lineno)
            sink.add(Finding(issue.code, issue.message, location=loc))
        if leaks:
            data = strip_leaks(data)
    schema = validate(data, _SCHEMA_OF[kind], file=name, pointer_prefix="/data")
    if not schema:
        return data
    for f in schema:
        loc = Location(file=name, pointer=f.location.pointer, line=lineno)
        sink.add(Finding(f.code, f.message, f.severity, loc), unusable=True)
    return None


def _result(name: str, sink: _Collector, counts: Counter[str], lines: int) -> CheckResult:
    findings = list(sink.kept)
    dropped = sink.dropped
    if dropped:
        findings.append(
            Finding(
                "TRACE.FINDINGS.TRUNCATED",
                f"{dropped} more findings were counted but not listed"
                " (see metrics.findings_by_code)",
                severity=Severity.NOTE,
                location=Location(file=name),
            )
        )
    metrics = {
        "lines": lines,
        "records": {k: counts[k] for k in sorted(counts)},
        "findings_by_code": {k: sink.by_code[k] for k in sorted(sink.by_code)},
        "findings_dropped": dropped,
    }
    return CheckResult(
        check=CHECK_NAME,
        subject=name,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        status=CheckStatus.ERROR if sink.unusable else None,
    )
