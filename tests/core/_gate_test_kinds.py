"""Check kinds used only by the gate tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.gate.context import GateContext
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location


def run_echo(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Pass, fail with a declared code, or compare `value` with an expected file."""
    if "bad" in spec:
        raise InputError.at("TEST.BAD_SPEC", "bad spec", ctx.manifest, pointer=ctx.pointer + "/bad")
    findings: list[Finding] = []
    if "fail_code" in spec:
        findings.append(
            Finding(str(spec["fail_code"]), "declared failure", location=ctx.location())
        )
    if "expected" in spec:
        findings.extend(ctx.expect_json(str(spec["expected"]), spec.get("value"), str(spec["id"])))
    cls = EvidenceClass(spec.get("produces", "derived"))
    return [CheckResult("echo", str(spec["id"]), findings=tuple(findings), evidence_class=cls)]


def run_crash(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Always crash."""
    raise RuntimeError("boom")


def run_spin(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Busy-loop (as a runaway oracle would) until the gate's deadline stops it."""
    assert "timeout_s" not in spec  # a gate-level field, never passed to the kind
    n = 0
    while True:
        n += 1


def run_read(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Read `file` (any path form of `cbaudit.pins.gate_paths`); pass when it says `ok`."""
    from cbaudit.pins.gate_paths import spec_path

    where = spec_path(dict(spec), "file", ctx)
    assert where.path is not None
    text = where.path.read_text().strip()
    findings = () if text == "ok" else (Finding("TEST.READ.WRONG", text, location=ctx.location()),)
    return [CheckResult("read", str(spec["id"]), findings=findings)]


def run_fail_at(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Fail with a finding located in file `at` (shown bundle-relative, as fixture checks do)."""
    path = ctx.resolve(str(spec["at"]), field="at")
    where = Location(file=ctx.display(path), pointer="/x", line=2)
    finding = Finding("TEST.AT.WRONG", "wrong here", location=where)
    return [CheckResult("fail_at", str(spec["id"]), findings=(finding,))]
