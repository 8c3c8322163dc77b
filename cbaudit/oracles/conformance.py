"""The conformance corpus: `vllm-v1` against vLLM v0.23.0's own decisions, case by case, and the
rules it mirrors against their pin manifest.

`run_corpus` is the check (a pure function of its inputs); `VLLM_CONFORMANCE` is check kind
`vllm_conformance` (schemas/check-vllm-conformance.schema.json), whose entry is

    rules: pins/vllm-v0.23.0-scheduler-rules.yaml   # optional: bind the mirrored rules
    cases:                                          # one or more
      - trace: corpus/NAME.vllm-trace.jsonl         # a driver trace or a recorder file
        trace_sha256: <64 hex>
        workload: corpus/NAME.workload.json         # a driver trace's workload only
        workload_sha256: <64 hex>

paths relative to the declaring file, inside the bundle; any other key is refused by the
schema. Each case
is one result (PASSED when every step agrees under the default contract validation); a file
whose sha256 is not the bound one is `CONFORM.BINDING.SHA256` and is not run; an unusable case
is an ERROR result of its own, never an abort of the others. The rules result fails when a
rule cites a marker the manifest lacks (`CONFORM.RULES.MARKER_UNKNOWN`) or the manifest holds a
marker no rule cites (`CONFORM.RULES.MARKER_UNUSED`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.spec import CheckSpec, converted
from cbaudit.io.reads import open_input
from cbaudit.model import (
    CbauditError,
    CheckResult,
    CheckStatus,
    EvidenceClass,
    Finding,
    InputError,
    Location,
)

KIND = "vllm_conformance"


@dataclass(frozen=True, slots=True)
class Case:
    """One conformance case: vLLM's steps, the workload they ran, and the bound digests."""

    trace: Path
    trace_sha256: str
    trace_display: str
    workload: Path | None = None
    workload_sha256: str | None = None
    workload_display: str | None = None


def _sha256(path: Path, display: str) -> str:
    digest = hashlib.sha256()
    with open_input(path, display) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_case(case: Case) -> CheckResult:
    """Bind the case's files, then compare vLLM's steps with vllm-v1's (one result)."""
    files = [(case.trace, case.trace_sha256, case.trace_display)]
    if case.workload is not None and case.workload_sha256 and case.workload_display:
        files.append((case.workload, case.workload_sha256, case.workload_display))
    try:
        drift = []
        for path, bound, display in files:
            actual = _sha256(path, display)
            if actual != bound:
                drift.append(
                    Finding(
                        "CONFORM.BINDING.SHA256",
                        f"{display} changed since it was bound: sha256 {actual}, bound {bound}",
                        location=Location(file=display),
                    )
                )
        if drift:
            return CheckResult("conform", case.trace_display, tuple(drift))
        from cbaudit.conform.core import ConformInput, conform

        result = conform(
            ConformInput(case.trace, case.workload, case.trace_display, case.workload_display)
        )
    except CbauditError as err:
        findings = err.findings if isinstance(err, InputError) else ()
        return CheckResult(
            "conform",
            case.trace_display,
            findings,
            status=CheckStatus.ERROR,
            reason=str(err) if not findings else None,
        )
    return replace(result, artifacts={d: sha for _, sha, d in files})


def rules_binding(manifest: Path, display: str) -> CheckResult:
    """Every rule vllm-v1 mirrors cites markers of `manifest`, and every marker is cited."""
    from cbaudit.pins.manifest import consistency_findings, load_manifest
    from cbaudit.policies.vllm_v1_rules import RULES

    loaded = load_manifest(manifest, display=display)
    findings = list(consistency_findings(loaded))
    ids = {k.id for f in loaded.manifest.files for k in f.markers}
    cited: set[str] = set()
    for rule in RULES:
        for marker in rule.markers:
            cited.add(marker)
            if marker not in ids:
                findings.append(
                    Finding(
                        "CONFORM.RULES.MARKER_UNKNOWN",
                        f"rule {rule.rule} cites marker {marker}, which {display} does not hold",
                        location=Location(file=display),
                    )
                )
    for marker in sorted(ids - cited):
        findings.append(
            Finding(
                "CONFORM.RULES.MARKER_UNUSED",
                f"marker {marker} of {display} backs no rule of vllm-v1",
                location=Location(file=display),
            )
        )
    return CheckResult(
        "conform.rules",
        display,
        tuple(findings),
        metrics={"rules": len(RULES), "markers": len(ids), "cited": len(cited & ids)},
        reason=f"{len(RULES)} mirrored rules cite {len(cited & ids)} of {len(ids)} markers",
    )


def run_corpus(
    cases: Sequence[Case],
    *,
    rules: tuple[Path, str] | None = None,
    evidence: EvidenceClass = EvidenceClass.DERIVED,
) -> list[CheckResult]:
    """The rules binding (when given), then one result per case, in order."""
    out = [rules_binding(*rules)] if rules is not None else []
    out += [run_case(c) for c in cases]
    return [replace(r, evidence_class=evidence) for r in out]


# --------------------------------------------------------------------------- check kind


@dataclass(frozen=True, slots=True)
class CaseSpec:
    """One entry of `cases:` (validated by schemas/check-vllm-conformance.schema.json)."""

    trace: str
    trace_sha256: str
    workload: str | None = None
    workload_sha256: str | None = None


def _cases(value: Any) -> tuple[CaseSpec, ...]:
    return tuple(
        CaseSpec(
            trace=str(c["trace"]),
            trace_sha256=str(c["trace_sha256"]),
            workload=c.get("workload"),
            workload_sha256=c.get("workload_sha256"),
        )
        for c in value
    )


@dataclass(frozen=True, kw_only=True)
class ConformanceSpec(CheckSpec):
    """Fields of `vllm_conformance`."""

    cases: tuple[CaseSpec, ...] = field(metadata=converted(_cases))
    rules: str | None = None


def parse_cases(spec: ConformanceSpec, ctx: GateContext) -> list[Case]:
    """The spec's cases with their paths confined to the bundle (or its declared root)."""
    cases = []
    for i, item in enumerate(spec.cases):
        trace = ctx.resolve(item.trace, field=f"cases/{i}/trace")
        workload = None
        if item.workload is not None:
            workload = ctx.resolve(item.workload, field=f"cases/{i}/workload")
        cases.append(
            Case(
                trace=trace,
                trace_sha256=item.trace_sha256,
                trace_display=ctx.display(trace),
                workload=workload,
                workload_sha256=item.workload_sha256 if workload is not None else None,
                workload_display=ctx.display(workload) if workload is not None else None,
            )
        )
    return cases


def run_vllm_conformance(spec: ConformanceSpec, ctx: GateContext) -> list[CheckResult]:
    """Kind `vllm_conformance` (see the module docstring)."""
    cases = parse_cases(spec, ctx)
    rules = None
    if spec.rules is not None:
        path = ctx.resolve(spec.rules, field="rules")
        rules = (path, ctx.display(path))
    return run_corpus(cases, rules=rules, evidence=spec.evidence_class or EvidenceClass.DERIVED)


VLLM_CONFORMANCE: CheckKind[ConformanceSpec] = CheckKind(
    name=KIND,
    spec_type=ConformanceSpec,
    run=run_vllm_conformance,
    summary="vllm-v1 against vLLM v0.23.0's recorded decisions, and its rules against their pin",
    heavy=True,
)
