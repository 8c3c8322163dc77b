"""Loop 9 check kinds: `preemption_resume` (a fixture) and `incident_replay` (the lesson's
incident on the engine).

Declared here without loading the oracles: each loads when a check runs (`cbaudit.kinds`
imports every kind, and a small command must start fast).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, Mutation, Target
from cbaudit.checks.spec import CheckSpec, converted, key
from cbaudit.model import CheckResult, Finding
from cbaudit.oracles.fixture_checks import (
    FixtureSpec,
    LoopFixtureEvaluate,
    loop_fixture_kind,
    plain_fixture,
    run_fixture_check,
)
from cbaudit.oracles.fixtures import LoadedFixture

NAME = "preemption-resume"  # the oracle's name (`oracle.NAME`; a test holds them equal)


def evaluate(fixture: LoadedFixture) -> CheckResult:
    """The Loop 9 oracle on one fixture (`cbaudit.oracles.preemption.oracle.evaluate`)."""
    from cbaudit.oracles.preemption import oracle

    return oracle.evaluate(fixture)


def run_resume(spec: FixtureSpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `preemption_resume`: fields of `cbaudit.oracles.fixture_checks`."""
    return run_fixture_check(spec, ctx, loop_fixture_kind(NAME, evaluate))


def _is_preemption_fixture(data: Mapping[str, Any]) -> bool:
    return (
        isinstance(data.get("cases"), list)
        and "claim" in data
        and "accounting" not in data
        and "patch" not in data
    )


TARGET = Target(
    f"oracle:{NAME}",
    "9",
    "Loop 9 preemption and resume: intents, foreign receipts, epochs, resume tickets",
    _is_preemption_fixture,
    LoopFixtureEvaluate(evaluate),
)

PREEMPTION_RESUME: CheckKind[FixtureSpec] = CheckKind(
    name="preemption_resume",
    spec_type=FixtureSpec,
    run=run_resume,
    summary="Loop 9: preemption intents, foreign receipts and resume tickets over a fixture",
    mutation=Mutation((TARGET,), plain_fixture),
)


@dataclass(frozen=True, kw_only=True)
class IncidentSpec(CheckSpec):
    """Fields of `incident_replay` (`cbaudit.oracles.preemption.incident`)."""

    workload: str
    variants: tuple[Mapping[str, Any], ...] = field(metadata=converted(tuple))
    initial_state: str | None = None
    policy: str = "vllm-v1"
    window: int = 10
    validation: str = "contract"
    expect: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    expected: str | None = None
    asserts: Mapping[str, Any] = field(default_factory=dict, metadata=key("assert"))


def _labels_known(spec: IncidentSpec, ctx: GateContext) -> list[Finding]:
    """Every `expect` label names a variant (checked when the bundle loads)."""
    labels = {v["label"] for v in spec.variants}
    return [
        Finding(
            "INCIDENT.SPEC.INVALID",
            f"no variant labelled {label!r}",
            location=ctx.location(f"/expect/{label}"),
        )
        for label in spec.expect
        if label not in labels
    ]


def run_incident(spec: IncidentSpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `incident_replay` (`cbaudit.oracles.preemption.incident`)."""
    from cbaudit.oracles.preemption.incident import run_incident_replay

    return run_incident_replay(spec, ctx)


INCIDENT_REPLAY: CheckKind[IncidentSpec] = CheckKind(
    name="incident_replay",
    spec_type=IncidentSpec,
    run=run_incident,
    summary="Lesson section 8: the incident replayed under budget variants; H2's counters",
    validate=_labels_known,
    heavy=True,
)
