"""Loop 8 check kinds: `fairness_starvation` (a fixture) and `fairness_replay` (engine replays).

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
from cbaudit.model import CheckResult
from cbaudit.oracles.fixture_checks import (
    FixtureSpec,
    LoopFixtureEvaluate,
    loop_fixture_kind,
    plain_fixture,
    run_fixture_check,
)
from cbaudit.oracles.fixtures import LoadedFixture

NAME = "fairness-starvation"  # the oracle's name (`oracle.NAME`; a test holds them equal)


def evaluate(fixture: LoadedFixture) -> CheckResult:
    """The Loop 8 oracle on one fixture (`cbaudit.oracles.fairness.oracle.evaluate`)."""
    from cbaudit.oracles.fairness import oracle

    return oracle.evaluate(fixture)


def run_starvation(spec: FixtureSpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `fairness_starvation`: fields of `cbaudit.oracles.fixture_checks`."""
    return run_fixture_check(spec, ctx, loop_fixture_kind(NAME, evaluate))


def _is_fairness_fixture(data: Mapping[str, Any]) -> bool:
    return "accounting" in data and "claim" in data and "patch" not in data


TARGET = Target(
    f"oracle:{NAME}",
    "8",
    "Loop 8 fairness and starvation: identity, completed service, VTC, aging, MLFQ",
    _is_fairness_fixture,
    LoopFixtureEvaluate(evaluate),
)

FAIRNESS_STARVATION: CheckKind[FixtureSpec] = CheckKind(
    name="fairness_starvation",
    spec_type=FixtureSpec,
    run=run_starvation,
    summary="Loop 8: fairness and starvation probes over a fairness fixture",
    mutation=Mutation((TARGET,), plain_fixture),
)


@dataclass(frozen=True, kw_only=True)
class FairnessReplaySpec(CheckSpec):
    """Fields of `fairness_replay` (`cbaudit.oracles.fairness.replay`)."""

    workload: str
    runs: tuple[Mapping[str, Any], ...] = field(metadata=converted(tuple))
    weights: Mapping[str, int] = field(default_factory=dict)
    horizon: int | None = None
    validation: str = "contract"
    expected: str | None = None
    asserts: Mapping[str, Any] = field(default_factory=dict, metadata=key("assert"))


def run_replay(spec: FairnessReplaySpec, ctx: GateContext) -> list[CheckResult]:
    """Check kind `fairness_replay` (`cbaudit.oracles.fairness.replay.run_fairness_replay`)."""
    from cbaudit.oracles.fairness.replay import run_fairness_replay

    return run_fairness_replay(spec, ctx)


FAIRNESS_REPLAY: CheckKind[FairnessReplaySpec] = CheckKind(
    name="fairness_replay",
    spec_type=FairnessReplaySpec,
    run=run_replay,
    summary="Loop 8: engine replays under several policies, fairness beside SLO outcomes",
    heavy=True,
)
