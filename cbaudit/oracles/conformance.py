"""The conformance corpus: `vllm-v1` against vLLM v0.23.0's own decisions, case by case, and the
rules it mirrors against their pin manifest.

`run_corpus` is the check (a pure function of its inputs); `run_vllm_conformance` is the gate's
thin adapter for kind `vllm_conformance`, whose spec is

    rules: pins/vllm-v0.23.0-scheduler-rules.yaml   # optional: bind the mirrored rules
    cases:                                          # one or more
      - trace: corpus/NAME.vllm-trace.jsonl         # a driver trace or a recorder file
        trace_sha256: <64 hex>
        workload: corpus/NAME.workload.json         # a driver trace's workload only
        workload_sha256: <64 hex>

paths relative to the declaring file, inside the bundle; any other key is refused. Each case
is one result (PASSED when every step agrees under the default contract validation); a file
whose sha256 is not the bound one is `CONFORM.BINDING.SHA256` and is not run; an unusable case
is an ERROR result of its own, never an abort of the others. The rules result fails when a
rule cites a marker the manifest lacks (`CONFORM.RULES.MARKER_UNKNOWN`) or the manifest holds a
marker no rule cites (`CONFORM.RULES.MARKER_UNUSED`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.conform.core import ConformInput, conform
from cbaudit.model import (
    CbauditError,
    CheckResult,
    CheckStatus,
    EvidenceClass,
    Finding,
    InputError,
    Location,
)
from cbaudit.model.errors import file_error

if TYPE_CHECKING:
    from cbaudit.gate.context import GateContext

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
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as err:
        raise file_error(display, err) from None


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


# --------------------------------------------------------------------------- gate adapter

_SPEC_KEYS = {"rules", "cases"}
_GATE_KEYS = {"id", "kind", "title", "claim", "loop", "evidence_class", "timeout_s", "requires"}
_CASE_KEYS = {"trace", "trace_sha256", "workload", "workload_sha256"}


def _bad(ctx: GateContext, message: str, pointer: str) -> InputError:
    return InputError(Finding("GATE.SPEC.FIELD", message, location=ctx.location(pointer)))


def _digest(value: Any, ctx: GateContext, pointer: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or value.strip("0123456789abcdef"):
        raise _bad(ctx, "a sha256 is 64 lowercase hex digits", pointer)
    return value


def parse_cases(spec: Mapping[str, Any], ctx: GateContext) -> list[Case]:
    """The spec's cases, strictly: unknown keys refused, every file bound by sha256."""
    for key in spec:
        if key not in _SPEC_KEYS and key not in _GATE_KEYS:
            known = ", ".join(sorted(_SPEC_KEYS))
            raise _bad(
                ctx, f"unknown field {key!r} for kind {KIND} (its fields: {known})", f"/{key}"
            )
    raw = spec.get("cases")
    if not isinstance(raw, list) or not raw:
        raise _bad(ctx, "cases must be a non-empty list", "/cases")
    cases = []
    for i, item in enumerate(raw):
        at = f"/cases/{i}"
        if not isinstance(item, Mapping):
            raise _bad(ctx, "a case is a mapping", at)
        for key in item:
            if key not in _CASE_KEYS:
                known = ", ".join(sorted(_CASE_KEYS))
                raise _bad(ctx, f"unknown case field {key!r} (known: {known})", f"{at}/{key}")
        if "trace" not in item or "trace_sha256" not in item:
            raise _bad(ctx, "a case needs trace and trace_sha256", at)
        if ("workload" in item) != ("workload_sha256" in item):
            raise _bad(ctx, "workload and workload_sha256 go together", at)
        trace = ctx.resolve(item["trace"], field=f"cases/{i}/trace")
        workload = (
            ctx.resolve(item["workload"], field=f"cases/{i}/workload")
            if "workload" in item
            else None
        )
        cases.append(
            Case(
                trace=trace,
                trace_sha256=_digest(item["trace_sha256"], ctx, f"{at}/trace_sha256"),
                trace_display=ctx.display(trace),
                workload=workload,
                workload_sha256=_digest(item["workload_sha256"], ctx, f"{at}/workload_sha256")
                if workload is not None
                else None,
                workload_display=ctx.display(workload) if workload is not None else None,
            )
        )
    return cases


def run_vllm_conformance(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Gate kind `vllm_conformance` (see the module docstring)."""
    from cbaudit.pins.gate_paths import spec_evidence_class

    evidence = spec_evidence_class(dict(spec), ctx)
    cases = parse_cases(spec, ctx)
    rules = None
    if "rules" in spec:
        path = ctx.resolve(spec["rules"], field="rules")
        rules = (path, ctx.display(path))
    return run_corpus(cases, rules=rules, evidence=evidence)
