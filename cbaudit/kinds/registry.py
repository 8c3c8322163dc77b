"""Every check kind, by name: one explicit dict of imported `CheckKind` objects.

Adding a kind is adding its module (a spec dataclass, a schema and `run`) and one entry below;
a name given twice raises at import time. `tests/kinds/test_registry.py` resolves every entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, Table, Target, build_kinds, targets_of
from cbaudit.checks.negative import NEGATIVE_CHECK
from cbaudit.checks.spec import NOT_AN_ENTRY_KEY, CheckSpec, build_spec
from cbaudit.model import CheckResult
from cbaudit.oracles import bench_results, binding, comparability, contract_cases

# --- temporary: kinds not yet moved to the interface ---------------------------------------


@dataclass(frozen=True, kw_only=True)
class LegacySpec(CheckSpec):
    entry: Mapping[str, Any] = field(default_factory=dict, metadata=NOT_AN_ENTRY_KEY)


_LEGACY_SCHEMA = {
    "type": "object",
    "properties": {
        k: {"$ref": f"check-common.schema.json#/$defs/{k}"}
        for k in (
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
    },
}


def _legacy_build(entry: Mapping[str, Any], ctx: GateContext) -> LegacySpec:
    base = build_spec(LegacySpec, entry)
    return LegacySpec(
        id=base.id,
        kind=base.kind,
        title=base.title,
        claim=base.claim,
        loop=base.loop,
        evidence_class=base.evidence_class,
        requires=base.requires,
        consumes=base.consumes,
        timeout_s=base.timeout_s,
        entry=dict(entry),
    )


@dataclass(frozen=True)
class _LegacyRun:
    target: str

    def __call__(self, spec: LegacySpec, ctx: GateContext) -> list[CheckResult]:
        module, _, func = self.target.partition(":")
        fn: Callable[..., list[CheckResult]] = getattr(importlib.import_module(module), func)
        return fn({k: v for k, v in spec.entry.items() if k != "timeout_s"}, ctx)


def _legacy(name: str, target: str) -> CheckKind[LegacySpec]:
    heavy = name in {
        "static_efficiency",
        "mutation",
        "metamorphic",
        "incident_replay",
        "fairness_replay",
    }
    return CheckKind(
        name,
        LegacySpec,
        _LegacyRun(target),
        schema=_LEGACY_SCHEMA,
        build=_legacy_build,
        heavy=heavy,
    )


_LEGACY = {
    "oracle": "cbaudit.oracles.gate_kinds:run_oracle",
    "replay": "cbaudit.sim.gate_kinds:run_replay",
    "policy_snapshots": "cbaudit.sim.gate_kinds:run_policy_snapshots",
    "admission_cases": "cbaudit.sim.gate_kinds:run_admission_cases",
    "static_efficiency": "cbaudit.sim.gate_kinds:run_static_efficiency",
    "replay_report": "cbaudit.sim.replay_compare:run_replay_report",
    "mutation": "cbaudit.mutate.gate_kinds:run_mutation",
    "negative_floor": "cbaudit.mutate.gate_kinds:run_negative_floor",
    "metamorphic": "cbaudit.mutate.gate_kinds:run_metamorphic",
    "fairness_starvation": "cbaudit.oracles.gate_kinds:run_fairness_starvation",
    "fairness_replay": "cbaudit.sim.fairness_replay:run_fairness_replay",
    "incident_replay": "cbaudit.sim.preemption_incident:run_incident_replay",
    "preemption_resume": "cbaudit.oracles.gate_kinds:run_preemption_resume",
}

KINDS: Table[CheckKind[Any]] = build_kinds(
    [
        NEGATIVE_CHECK,
        # Loop 2: the plan/result contract
        contract_cases.PLAN_CASE,
        contract_cases.NEGATIVE_CASE,
        contract_cases.TRACE,
        # Hash binding: pinned runtime sources, the formula registry
        binding.PIN,
        binding.FORMULA_AUDIT,
        # Loop 11: paper contracts, comparability, sensitivity, failure closure
        comparability.COMPARE_RESULTS,
        comparability.ONE_CONTROL_SENSITIVITY,
        comparability.RESULT_REGISTRY_AUDIT,
        comparability.FAILURE_CLOSURE,
        comparability.LOOP11_NEGATIVE,
        # Measured evidence
        bench_results.BENCH_RESULTS,
        *(_legacy(n, t) for n, t in _LEGACY.items()),
    ]
)

TARGETS: Table[Target] = targets_of(KINDS)
