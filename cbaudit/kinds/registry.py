"""Every check kind, by name: one explicit dict of imported `CheckKind` objects.

Adding a kind is adding its module (a spec dataclass, a schema and `run`) and one entry below;
a name given twice raises at import time. `tests/kinds/test_registry.py` resolves every entry.
"""

from __future__ import annotations

from typing import Any

from cbaudit.checks.interface import CheckKind, Table, Target, build_kinds, targets_of
from cbaudit.checks.negative import NEGATIVE_CHECK
from cbaudit.mutate import kinds as mutate_kinds
from cbaudit.oracles import (
    bench_results,
    binding,
    calculator_claims,
    comparability,
    conformance,
    contract_cases,
    fixture_oracle,
    replay,
)
from cbaudit.oracles.fairness import kinds as fairness
from cbaudit.oracles.preemption import kinds as preemption

KINDS: Table[CheckKind[Any]] = build_kinds(
    [
        # Any check turned into a rejection case
        NEGATIVE_CHECK,
        # Loop 2: the plan/result contract
        contract_cases.PLAN_CASE,
        contract_cases.NEGATIVE_CASE,
        contract_cases.TRACE,
        # Loop 3, the lesson and the lecture: replays of the simulator; Loop 10's snapshots
        replay.REPLAY,
        replay.REPLAY_REPORT,
        replay.ADMISSION_CASES,
        replay.STATIC_EFFICIENCY,
        replay.POLICY_SNAPSHOTS,
        # Loops 4-7 and 10: fixture oracles (selective batching, admission, chunked prefill,
        # SLO, runtime policy), by the name each check gives
        fixture_oracle.ORACLE,
        # Loop 8: fairness and starvation; Loop 9: preemption and resume
        fairness.FAIRNESS_STARVATION,
        fairness.FAIRNESS_REPLAY,
        preemption.PREEMPTION_RESUME,
        preemption.INCIDENT_REPLAY,
        # Loop 11: paper contracts, comparability, sensitivity, failure closure
        comparability.COMPARE_RESULTS,
        comparability.ONE_CONTROL_SENSITIVITY,
        comparability.RESULT_REGISTRY_AUDIT,
        comparability.FAILURE_CLOSURE,
        comparability.LOOP11_NEGATIVE,
        # Hash binding: pinned runtime sources, the formula registry
        binding.PIN,
        binding.FORMULA_AUDIT,
        # vllm-v1 against vLLM's own recorded decisions
        conformance.VLLM_CONFORMANCE,
        # Printed figures reproduced by the lecture's calculators
        calculator_claims.CALCULATOR_CLAIM,
        # Measured evidence
        bench_results.BENCH_RESULTS,
        # Mutation campaigns, negative floors, metamorphic relations
        mutate_kinds.MUTATION,
        mutate_kinds.NEGATIVE_FLOOR,
        mutate_kinds.METAMORPHIC,
    ]
)

TARGETS: Table[Target] = targets_of(KINDS)
