"""Check kinds used only by the gate tests, with inline schemas (as a plugin would declare).

`ALL` is the shipped registry plus these kinds: pass it as `run_gate(..., kinds=ALL)`, or patch
`cbaudit.kinds.KINDS` with it (`use_test_kinds`) for commands run through the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, build_kinds
from cbaudit.checks.spec import CheckSpec
from cbaudit.kinds import KINDS
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location

COMMON = (
    "id",
    "kind",
    "title",
    "claim",
    "loop",
    "evidence_class",
    "timeout_s",
    "requires",
    "consumes",
)


def _schema(**own: Any) -> dict[str, Any]:
    """Common fields by reference, plus the kind's own; nothing else."""
    props = {k: {"$ref": f"check-common.schema.json#/$defs/{k}"} for k in COMMON}
    return {"type": "object", "additionalProperties": False, "properties": {**props, **own}}


@dataclass(frozen=True, kw_only=True)
class EchoSpec(CheckSpec):
    bad: Any = None
    fail_code: str | None = None
    expected: str | None = None
    value: Any = None
    produces: str = "derived"


def run_echo(spec: EchoSpec, ctx: GateContext) -> list[CheckResult]:
    """Pass, fail with a declared code, or compare `value` with an expected file."""
    if spec.bad is not None:
        raise InputError.at("TEST.BAD_SPEC", "bad spec", ctx.manifest, pointer=ctx.pointer + "/bad")
    findings: list[Finding] = []
    if spec.fail_code is not None:
        findings.append(Finding(spec.fail_code, "declared failure", location=ctx.location()))
    if spec.expected is not None:
        findings.extend(ctx.expect_json(spec.expected, spec.value, spec.id))
    cls = EvidenceClass(spec.produces)
    return [CheckResult("echo", spec.id, findings=tuple(findings), evidence_class=cls)]


def run_crash(spec: CheckSpec, ctx: GateContext) -> list[CheckResult]:
    """Always crash."""
    raise RuntimeError("boom")


def run_spin(spec: CheckSpec, ctx: GateContext) -> list[CheckResult]:
    """Busy-loop (as a runaway oracle would) until the gate's deadline stops it."""
    n = 0
    while True:
        n += 1


@dataclass(frozen=True, kw_only=True)
class ReadSpec(CheckSpec):
    file: Any


def run_read(spec: ReadSpec, ctx: GateContext) -> list[CheckResult]:
    """Read `file` (any path form of `GateContext.spec_path`); pass when it says `ok`."""
    from cbaudit.io.loader import read_bounded

    where = ctx.spec_path(spec.file, "file")
    assert where.path is not None
    text = read_bounded(where.path, where.display, 1000).decode().strip()
    findings = () if text == "ok" else (Finding("TEST.READ.WRONG", text, location=ctx.location()),)
    return [CheckResult("read", spec.id, findings=findings)]


@dataclass(frozen=True, kw_only=True)
class FailAtSpec(CheckSpec):
    at: str


def run_fail_at(spec: FailAtSpec, ctx: GateContext) -> list[CheckResult]:
    """Fail with a finding located in file `at` (shown bundle-relative, as fixture checks do)."""
    path = ctx.resolve(spec.at, field="at")
    where = Location(file=ctx.display(path), pointer="/x", line=2)
    finding = Finding("TEST.AT.WRONG", "wrong here", location=where)
    return [CheckResult("fail_at", spec.id, findings=(finding,))]


_COMMON = "check-common.schema.json#/$defs/"
_PATH = {"$ref": _COMMON + "path"}

ECHO: CheckKind[EchoSpec] = CheckKind(
    "echo",
    EchoSpec,
    run_echo,
    schema=_schema(
        bad={},
        fail_code={"type": "string"},
        expected=_PATH,
        value={},
        produces={"$ref": "check-common.schema.json#/$defs/evidence_class"},
    ),
)
CRASH: CheckKind[CheckSpec] = CheckKind("crash", CheckSpec, run_crash, schema=_schema())
SPIN: CheckKind[CheckSpec] = CheckKind("spin", CheckSpec, run_spin, schema=_schema())
READ: CheckKind[ReadSpec] = CheckKind(
    "read",
    ReadSpec,
    run_read,
    schema=_schema(file={"$ref": "check-common.schema.json#/$defs/source"}),
)
FAIL_AT: CheckKind[FailAtSpec] = CheckKind(
    "fail_at", FailAtSpec, run_fail_at, schema=_schema(at=_PATH)
)

ALL = build_kinds([*KINDS.values(), ECHO, CRASH, SPIN, READ, FAIL_AT])


@pytest.fixture
def use_test_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run through the CLI see the shipped kinds plus the test kinds."""
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)
