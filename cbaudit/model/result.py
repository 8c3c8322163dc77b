"""Results: one per check, aggregated into a report that every renderer reads."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cbaudit import __version__
from cbaudit.model.errors import file_error
from cbaudit.model.findings import EvidenceClass, ExitCode, Finding, Location, Severity

REPORT_SCHEMA_VERSION = 1


class CheckStatus(StrEnum):
    """Outcome of one check."""

    PASSED = "passed"
    FAILED = "failed"  # the audit found something (exit 1)
    ERROR = "error"  # the input was unusable (exit 2)
    NOT_RUN = "not_run"  # could not run here (no GPU, no source); never a pass


@dataclass(frozen=True, slots=True)
class InputDigest:
    """An input file and the sha256 of its bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, path: Path, display: str | None = None) -> InputDigest:
        """Hash `path` (streamed); a file that cannot be read is a located `LOAD.*` error."""
        name = display if display is not None else str(path)
        try:
            with path.open("rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError as err:
            raise file_error(name, err) from None
        return cls(path=name, sha256=digest)


@dataclass(frozen=True)
class CheckResult:
    """What one check found about one subject.

    `metrics` holds JSON-ready values (numbers, strings, lists, dicts); `status` is derived
    from the findings unless set explicitly (`NOT_RUN`, or `ERROR` for unusable input).
    """

    check: str
    subject: str
    findings: tuple[Finding, ...] = ()
    metrics: Mapping[str, Any] = field(default_factory=dict)
    evidence_class: EvidenceClass = EvidenceClass.DERIVED
    status: CheckStatus | None = None
    reason: str | None = None  # why NOT_RUN, or a one-line summary
    artifacts: Mapping[str, str] = field(default_factory=dict)  # name -> path or sha256
    # Chart specs for the publish-gate report (see cbaudit/report/charts.py for the shapes).
    charts: tuple[Mapping[str, Any], ...] = ()
    # Where the check that produced this result is declared (a bundle's checks.yaml entry);
    # reports point there when a result has no located finding (JUnit, SARIF).
    declared_at: Location | None = None
    # Wall time the check took, in seconds. Never part of the JSON report (which stays
    # byte-identical run to run); JUnit carries it as `time`.
    duration_s: float | None = field(default=None, compare=False)

    @property
    def outcome(self) -> CheckStatus:
        if self.status is not None:
            return self.status
        if any(f.severity is Severity.ERROR for f in self.findings):
            return CheckStatus.FAILED
        return CheckStatus.PASSED

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "subject": self.subject,
            "status": self.outcome.value,
            "evidence_class": self.evidence_class.value,
            "reason": self.reason,
            "findings": [f.to_dict() for f in self.findings],
            "metrics": dict(self.metrics),
            "artifacts": dict(self.artifacts),
            **({"charts": [dict(c) for c in self.charts]} if self.charts else {}),
            **({"declared_at": self.declared_at.to_dict()} if self.declared_at else {}),
        }


@dataclass(frozen=True)
class Report:
    """Everything one command says; the only thing reporters read."""

    command: str
    results: tuple[CheckResult, ...]
    inputs: tuple[InputDigest, ...] = ()
    summary: Mapping[str, Any] = field(default_factory=dict)
    tool_version: str = __version__
    # Where the work ran when not in this machine's processes (`--executor ray`): kind,
    # address, hosts, workers. Kept apart so that it is the only difference between a
    # cluster run's report and a local one's; absent for a local run.
    executor: Mapping[str, Any] | None = None

    @classmethod
    def build(
        cls,
        command: str,
        results: Iterable[CheckResult],
        inputs: Iterable[InputDigest] = (),
        summary: Mapping[str, Any] | None = None,
        executor: Mapping[str, Any] | None = None,
    ) -> Report:
        uniq: dict[str, InputDigest] = {}
        for item in inputs:
            uniq.setdefault(item.path, item)
        return cls(
            command=command,
            results=tuple(results),
            inputs=tuple(sorted(uniq.values(), key=lambda d: d.path)),
            summary=dict(summary or {}),
            executor=dict(executor) if executor is not None else None,
        )

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for r in self.results for f in r.findings)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in CheckStatus}
        for r in self.results:
            out[r.outcome.value] += 1
        return out

    @property
    def exit_code(self) -> ExitCode:
        outcomes = {r.outcome for r in self.results}
        if CheckStatus.ERROR in outcomes:
            return ExitCode.UNUSABLE
        if CheckStatus.FAILED in outcomes:
            return ExitCode.FINDINGS
        return ExitCode.OK

    @property
    def verdict(self) -> str:
        return {
            ExitCode.OK: "pass",
            ExitCode.FINDINGS: "fail",
            ExitCode.UNUSABLE: "error",
            ExitCode.INTERNAL: "error",
        }[self.exit_code]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "tool": {"name": "cbaudit", "version": self.tool_version},
            "command": self.command,
            "verdict": self.verdict,
            "exit_code": int(self.exit_code),
            "counts": self.counts(),
            "summary": dict(self.summary),
            "inputs": [{"path": d.path, "sha256": d.sha256} for d in self.inputs],
            "results": [r.to_dict() for r in self.results],
            **({"executor": dict(self.executor)} if self.executor is not None else {}),
        }
