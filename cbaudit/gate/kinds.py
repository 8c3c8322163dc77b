"""The registry of check kinds: kind name -> "module:function", imported lazily.

A kind function has the signature
`(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]`.
Adding a kind is adding one entry here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from cbaudit.gate.context import GateContext
from cbaudit.model import CheckResult

KindFunction = Callable[[Mapping[str, Any], GateContext], list[CheckResult]]

KINDS: dict[str, str] = {
    # Any check turned into a rejection case: it must fail with the declared code.
    "negative_check": "cbaudit.gate.negative:run_negative_check",
    # Loop 2: the plan/result contract (issue 2).
    "plan_case": "cbaudit.contract.gate_kinds:run_plan_case",
    "negative_case": "cbaudit.contract.gate_kinds:run_negative_case",
    "trace": "cbaudit.contract.gate_kinds:run_trace",
    # Loops 4 and 6 and later loop oracles.
    "oracle": "cbaudit.oracles.gate_kinds:run_oracle",
    # Replays with expected reports (Loops 3, 9, 10; lesson and lecture).
    "replay": "cbaudit.sim.gate_kinds:run_replay",
    "policy_snapshots": "cbaudit.sim.gate_kinds:run_policy_snapshots",
    "admission_cases": "cbaudit.sim.gate_kinds:run_admission_cases",
    "static_efficiency": "cbaudit.sim.gate_kinds:run_static_efficiency",
    # A replay's full JSON report (samples + coordinates) kept on file for compare-results.
    "replay_report": "cbaudit.sim.replay_compare:run_replay_report",
    # Hash binding.
    "pin": "cbaudit.pins.gate_kinds:run_pin",
    "formula_audit": "cbaudit.formulas.gate_kinds:run_formula_audit",
    # Loop 11: comparability, registries, sensitivity and failure closure.
    "compare_results": "cbaudit.results.gate_kinds:run_compare",
    "result_registry_audit": "cbaudit.results.gate_kinds:run_registry_audit",
    "one_control_sensitivity": "cbaudit.results.gate_kinds:run_sensitivity",
    "failure_closure": "cbaudit.results.gate_kinds:run_failure_closure",
    "loop11_negative": "cbaudit.results.gate_kinds:run_negative",
    # Measured evidence.
    "bench_results": "cbaudit.bench.gate_kinds:run_bench_attached",
    # Mutation campaigns, negative floors, metamorphic relations (issue 6).
    "mutation": "cbaudit.mutate.gate_kinds:run_mutation",
    "negative_floor": "cbaudit.mutate.gate_kinds:run_negative_floor",
    "metamorphic": "cbaudit.mutate.gate_kinds:run_metamorphic",
    # Loops 8 and 9: fairness/starvation and preemption/resume (issue 4, part B).
    "fairness_starvation": "cbaudit.oracles.gate_kinds:run_fairness_starvation",
    "fairness_replay": "cbaudit.sim.fairness_replay:run_fairness_replay",
    "incident_replay": "cbaudit.sim.preemption_incident:run_incident_replay",
    "preemption_resume": "cbaudit.oracles.gate_kinds:run_preemption_resume",
    # vllm-v1 against vLLM v0.23.0's own decisions, and its rules against their pins (issue 15).
    "vllm_conformance": "cbaudit.oracles.conformance:run_vllm_conformance",
}


def register_kind(name: str, target: str) -> None:
    """Add a kind; refuses duplicates."""
    if name in KINDS:
        raise ValueError(f"check kind {name!r} is already registered")
    KINDS[name] = target


def resolve_kind(name: str) -> KindFunction | None:
    """The function for `name`, or None when the kind is unknown."""
    target = KINDS.get(name)
    if target is None:
        return None
    module_name, _, func_name = target.partition(":")
    module = importlib.import_module(module_name)
    func: KindFunction = getattr(module, func_name)
    return func
