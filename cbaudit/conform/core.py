"""`cbaudit conform` as a library call: read, replay under `vllm-v1`, compare, build a result.

The input kind picks the engine loop: a driver trace (with its workload) was made by the CPU
driver, which calls `schedule()` only while a request is unfinished (and writes idle steps);
a recorder file comes from a real `EngineCore`, which also calls it once more to report the
last finishes. A driver workload may say `"loop": "engine"` for a driver run that followed the
engine's loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.conform.compare import Comparison
from cbaudit.conform.inputs import (
    ConformWorkload,
    InputKind,
    Step,
    is_record,
    iter_driver_trace,
    iter_record_steps,
    read_driver_workload,
    read_record_workload,
)
from cbaudit.conform.sides import POLICY, replay_steps
from cbaudit.model import (
    CheckResult,
    CheckStatus,
    EvidenceClass,
    Finding,
    InputDigest,
    InputError,
    Location,
    Severity,
    UsageError,
)
from cbaudit.sim.engine import Validation

CHECK_NAME = "conform"


@dataclass(frozen=True)
class ConformInput:
    """One conformance case: vLLM's steps (a driver trace or a recorder file) and the workload."""

    trace: Path
    workload: Path | None = None
    trace_display: str | None = None
    workload_display: str | None = None

    @property
    def trace_name(self) -> str:
        return self.trace_display or str(self.trace)

    @property
    def workload_name(self) -> str | None:
        if self.workload is None:
            return None
        return self.workload_display or str(self.workload)

    def load(self) -> tuple[InputKind, ConformWorkload]:
        """Which kind of input this is, and the workload it replays."""
        if is_record(self.trace, display=self.trace_name):
            if self.workload is not None:
                raise UsageError(
                    f"{self.trace_name} is a recorder file: it carries its own workload"
                    " (drop --workload)"
                )
            return InputKind.RECORD, read_record_workload(self.trace, display=self.trace_name)
        if self.workload is None:
            raise UsageError(
                f"{self.trace_name} is a driver trace: give the workload it ran (--workload FILE)"
            )
        return InputKind.DRIVER_TRACE, read_driver_workload(
            self.workload, display=self.workload_name
        )

    def steps(self, kind: InputKind) -> Iterator[Step]:
        """vLLM's steps, streamed from the file."""
        if kind is InputKind.RECORD:
            return (s for s, _, _ in iter_record_steps(self.trace, display=self.trace_name))
        return iter_driver_trace(self.trace, display=self.trace_name)

    def digests(self) -> list[InputDigest]:
        out = [InputDigest.of(self.trace, self.trace_name)]
        if self.workload is not None and self.workload_name is not None:
            out.append(InputDigest.of(self.workload, self.workload_name))
        return out


def conform(case: ConformInput, *, validation: Validation = Validation.CONTRACT) -> CheckResult:
    """Replay the case's workload under `vllm-v1` and compare it with vLLM step by step.

    PASSED when every step agrees; FAILED with the first divergence (or with the contract
    findings of a replay that stopped); ERROR when a record's comparison had to stop at an
    aborted request. Unusable inputs raise InputError / UsageError.
    """
    kind, workload = case.load()
    comparison = Comparison(
        case.steps(kind),
        record=kind is InputKind.RECORD,
        initial_free=workload.config.usable_blocks,
    )
    run = replay_steps(workload, comparison.cbaudit, validation=validation)
    if run.stop_reason == "kv_capacity":
        raise InputError(
            tuple(
                Finding(
                    f.code, f.message, location=Location(file=case.workload_name or case.trace_name)
                )
                for f in run.findings
            )
        )
    comparison.finish()
    figures = comparison.figures()
    findings: list[Finding] = []
    status: CheckStatus | None = None
    for f in run.findings:  # the replay stopped on a contract finding: cbaudit's own failure
        findings.append(
            Finding(
                f.code,
                f"cbaudit's replay, step {f.iteration - 1}: {f.message}",
                location=Location(file=case.trace_name),
            )
        )
    if comparison.first is not None:
        findings.extend(_divergence_findings(comparison, case.trace_name))
    elif comparison.cut is not None and not findings:
        cut = comparison.cut
        findings.append(
            Finding(
                "CONFORM.RECORD.ABORTED",
                f"step {cut.step}: {', '.join(cut.aborted)} aborted from outside before it;"
                f" cbaudit does not replay aborts, so steps from {cut.step} on are not compared"
                + (f" (steps 0..{cut.step - 1} agree)" if cut.step else ""),
                location=Location(file=case.trace_name, line=cut.line),
            )
        )
        status = CheckStatus.ERROR
    if comparison.cut is not None:
        figures["cut_at_abort"] = {
            "step": comparison.cut.step,
            "aborted": list(comparison.cut.aborted),
        }
    metrics: dict[str, Any] = {
        "input": {
            "kind": kind.value,
            "loop": workload.loop.value,
            "trace": case.trace_name,
            "workload": case.workload_name,
            "requests": len(workload.requests),
        },
        "engine_config": workload.config.to_json(),
        "policy": {
            "id": POLICY,
            "version": run.identity.policy_version,
            "options": workload.config.policy_options(),
        },
        "validation": validation.value,
        "replay_stop": run.stop_reason,
        **figures,
    }
    return CheckResult(
        check=CHECK_NAME,
        subject=case.trace_name,
        findings=tuple(findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        status=status,
        reason=_summary(figures, run.identity.policy_version),
    )


def _summary(f: dict[str, Any], version: str) -> str:
    s, b, p, fin = f["steps"], f["busy_steps"], f["preemptions"], f["finish_steps"]
    return (
        f"vllm-v1 {version} vs vLLM: {s['identical']}/{s['compared']} steps identical;"
        f" busy steps with the same tokens {b['same_tokens']}/{b['vllm']};"
        f" preemptions matched {p['matched']}/{p['vllm']} (cbaudit {p['cbaudit']});"
        f" finish steps equal {fin['equal']}/{fin['requests']}"
    )


def _divergence_findings(comparison: Comparison, trace: str) -> list[Finding]:
    first = comparison.first
    assert first is not None
    free = first.free_blocks_before
    where = Location(file=trace, line=first.line)
    out = [
        Finding(
            "CONFORM.STEP.DIVERGED",
            f"step {first.step}: vLLM and cbaudit differ in {', '.join(first.fields)}"
            f" (free blocks before the step: vLLM {_show(free['vllm'])},"
            f" cbaudit {_show(free['cbaudit'])})",
            location=where,
        )
    ]
    for name, sides in first.fields.items():
        out.append(
            Finding(
                "CONFORM.STEP.FIELD",
                f"step {first.step} {name}: vLLM {_show(sides['vllm'])} | cbaudit"
                f" {_show(sides['cbaudit'])}",
                severity=Severity.NOTE,
                location=where,
            )
        )
    return out


def _show(value: Any) -> str:
    return "-" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def to_contract(case: ConformInput, out: Path) -> CheckResult:
    """Write vLLM's recorded decisions as contract records to `out` (atomically)."""
    from cbaudit.conform.playback import RecordedDecisions
    from cbaudit.sim.cost_unit import UnitCostModel
    from cbaudit.sim.engine import Engine
    from cbaudit.sim.replay import trace_file

    kind, workload = case.load()
    horizon = 0
    aborted_at: int | None = None
    for step in case.steps(kind):
        if step.aborted:
            aborted_at = step.step
            break
        horizon += 1
    policy = RecordedDecisions(case.steps(kind), workload.config.policy, case.trace_name)
    with trace_file(out) as sink:
        run = Engine(
            workload.to_workload(),
            policy,
            UnitCostModel(),
            validation=Validation.OFF,
            trace=sink,
            horizon=horizon,
        ).run()
    findings = []
    if aborted_at is not None:
        findings.append(
            Finding(
                "CONFORM.RECORD.ABORTED",
                f"records stop before step {aborted_at}: a request was aborted from outside"
                " there, which the contract records cannot express",
                severity=Severity.WARNING,
                location=Location(file=case.trace_name),
            )
        )
    return CheckResult(
        check="conform.to-contract",
        subject=str(out),
        findings=tuple(findings),
        metrics={"input": kind.value, "steps": horizon, "iterations": run.iterations},
        evidence_class=EvidenceClass.DERIVED,
        reason=f"wrote vLLM's decisions of {horizon} steps as contract records to {out}"
        " (check them with `cbaudit validate-plan --trace`)",
    )
