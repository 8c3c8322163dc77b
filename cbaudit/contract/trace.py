"""Streaming validation of a JSONL contract trace in bounded memory.

Each non-blank line is `{"record": "workload" | "state" | "plan" | "result", "data": {...}}`.
Records are checked in order against the latest workload, state and plan; only those three
(and their line numbers) are kept. Findings are capped (`max_findings`); beyond the cap they
are only counted, so memory does not grow with the length of the trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
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
from cbaudit.io.integers import float_integer_findings
from cbaudit.io.json_strict import FloatWatch
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
    fh = _open(path, name, sink)
    if fh is None:
        return _result(name, sink, counts, 0)
    checker = _Checker(name, sink)
    watch = FloatWatch()  # which lines held a float with a zero fraction (-0.0, 2.0)
    lineno = 0
    records = 0
    record_ok = validator_for_many("trace-record")
    shape_ok = {kind: validator_for_many(schema) for kind, schema in _SCHEMA_OF.items()}
    try:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            records += 1
            watch.integral = False
            obj = _parse_line(raw, name, lineno, sink, watch)
            if obj is None:
                continue
            if not isinstance(obj, dict) or not record_ok(obj):
                for f in validate(obj, "trace-record", file=name):
                    loc = Location(file=name, pointer=f.location.pointer, line=lineno)
                    sink.add(Finding(f.code, f.message, f.severity, loc), unusable=True)
                continue
            kind: str = obj["record"]
            counts[kind] += 1
            data = _usable(obj["data"], kind, watch.integral, shape_ok[kind], name, lineno, sink)
            if data is not None:
                checker.check(kind, data, lineno)
    finally:
        fh.close()
    if records == 0:
        checker.broken("LOAD.EMPTY", "the trace holds no records", 1)
    return _result(name, sink, counts, lineno)


def _usable(
    data: dict[str, Any],
    kind: str,
    integral_floats: bool,
    shape_ok: Callable[[Any], bool],
    name: str,
    lineno: int,
    sink: _Collector,
) -> dict[str, Any] | None:
    """The record's data when the contract can read it: leaks named and removed, the schema
    satisfied, no integer written as a float (None otherwise, with the findings recorded).
    `integral_floats` says whether the line held any float with a zero fraction at all."""
    if not shape_ok(data):
        shaped = _shape(data, kind, name, lineno, sink)
        if shaped is None:
            return None
        data = shaped
    if integral_floats and _integer_floats(data, kind, name, lineno, sink):
        return None
    return data


class _Checker:
    """The contract across a trace: each record against the latest workload, state and plan."""

    def __init__(self, name: str, sink: _Collector) -> None:
        self.name = name
        self.sink = sink
        self.lines: dict[str, int] = {}  # record kind -> line of the latest one
        self.workload: WorkloadManifest | None = None
        self.state: SchedulerState | None = None
        self.plan: IterationPlan | None = None
        self.ranks: dict[str, TieBreakKey] = {}

    def emit(self, issues: list[Issue]) -> None:
        for issue in issues:
            pointer = "/data" + issue.pointer
            loc = Location(file=self.name, pointer=pointer, line=self.lines.get(issue.record))
            self.sink.add(Finding(code=issue.code, message=issue.message, location=loc))

    def broken(self, code: str, message: str, lineno: int, pointer: str = "") -> None:
        loc = Location(file=self.name, pointer=pointer, line=lineno)
        self.sink.add(Finding(code=code, message=message, location=loc), unusable=True)

    def check(self, kind: str, data: dict[str, Any], lineno: int) -> None:
        """One schema-valid record, in trace order."""
        if kind == "workload":
            loaded = WorkloadManifest.from_json(data)
            self.workload = loaded
            self.state = self.plan = None
            self.lines["workload"] = lineno
            self.emit(check_workload(loaded))
            return
        workload = self.workload
        if workload is None:
            self.broken("TRACE.ORDER.NO_WORKLOAD", f"{kind} record before any workload", lineno)
        elif kind == "state":
            self.state = state = SchedulerState.from_json(data)
            self.ranks = rank_views(workload, state)
            self.plan = None
            self.lines["state"] = lineno
            self.emit(check_state(workload, state))
        elif kind == "plan":
            if self.state is None:
                self.broken("TRACE.ORDER.NO_STATE", "plan record before any state", lineno)
                return
            self.plan = plan = IterationPlan.from_json(data)
            self.lines["plan"] = lineno
            self.emit(check_plan(workload, self.state, plan, ranks=self.ranks))
        elif self.state is None or self.plan is None:
            self.broken("TRACE.ORDER.NO_PLAN", "result record before any plan", lineno)
        else:
            result = IterationResult.from_json(data)
            self.lines["result"] = lineno
            self.emit(check_result(workload, self.state, self.plan, result))


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


def _parse_line(raw: bytes, name: str, lineno: int, sink: _Collector, watch: FloatWatch) -> Any:
    """Parse one line with the strict loader (duplicates, NaN, depth...); None when broken."""
    try:
        text = raw.rstrip(b"\r\n")  # a truncated record ends on its own line, not the next
        return load_text(
            text, name=name, fmt="json", expect=dict, line_offset=lineno - 1, watch=watch
        ).data
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


def _integer_floats(
    data: dict[str, Any], kind: str, name: str, lineno: int, sink: _Collector
) -> bool:
    """Name every integer written as a float (`SCHEMA.INTEGER.FLOAT`); True when any is."""
    found = float_integer_findings(data, _SCHEMA_OF[kind], file=name, pointer_prefix="/data")
    for f in found:
        loc = Location(file=name, pointer=f.location.pointer, line=lineno)
        sink.add(Finding(f.code, f.message, f.severity, loc), unusable=True)
    return bool(found)


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
