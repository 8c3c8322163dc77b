"""Every check kind, by name: one explicit, typed list of entries, each loaded when first used.

Each `KindEntry` names a kind, the mutation targets it declares, and a module-level function
below that imports the kind's module directly (no module-path strings, no importlib) and
returns its `CheckKind`. `KINDS` is a `LazyKinds` over the entries: listing names (`cbaudit
mutate --target`, "unknown kind" messages) loads nothing, and a look-up loads one kind's module
once. So a gate over a one-check bundle loads only that kind, and `cbaudit mutate` of one plan
case only the plan-case kind; before, importing the registry imported every kind's module
(about 30 spec dataclasses and their oracles' helpers), a third of a small command's start-up.
`TARGETS` are the mutation targets, in registry order (the order `detect` tries them), each
loaded with its kind.

Adding a kind is adding its module (a spec dataclass, a schema and `run`), its loader and one
entry below. A kind or target name given twice raises at import time; a kind whose name or
targets differ from its entry's raises when loaded. `tests/kinds/test_registry.py` loads every
entry (docs/architecture.md, "The registry of check kinds").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cbaudit.checks.interface import CheckKind, KindEntry, LazyKinds, Target

# Loaders: each imports one kind's module when the kind is first looked up.


def _negative_check() -> CheckKind[Any]:
    from cbaudit.checks.negative import NEGATIVE_CHECK

    return NEGATIVE_CHECK


def _plan_case() -> CheckKind[Any]:
    from cbaudit.oracles.contract_cases import PLAN_CASE

    return PLAN_CASE


def _negative_case() -> CheckKind[Any]:
    from cbaudit.oracles.contract_cases import NEGATIVE_CASE

    return NEGATIVE_CASE


def _trace() -> CheckKind[Any]:
    from cbaudit.oracles.contract_cases import TRACE

    return TRACE


def _replay() -> CheckKind[Any]:
    from cbaudit.oracles.replay import REPLAY

    return REPLAY


def _replay_report() -> CheckKind[Any]:
    from cbaudit.oracles.replay import REPLAY_REPORT

    return REPLAY_REPORT


def _admission_cases() -> CheckKind[Any]:
    from cbaudit.oracles.replay import ADMISSION_CASES

    return ADMISSION_CASES


def _static_efficiency() -> CheckKind[Any]:
    from cbaudit.oracles.replay import STATIC_EFFICIENCY

    return STATIC_EFFICIENCY


def _policy_snapshots() -> CheckKind[Any]:
    from cbaudit.oracles.replay import POLICY_SNAPSHOTS

    return POLICY_SNAPSHOTS


def _oracle() -> CheckKind[Any]:
    from cbaudit.oracles.fixture_oracle import ORACLE

    return ORACLE


def _fairness_starvation() -> CheckKind[Any]:
    from cbaudit.oracles.fairness.kinds import FAIRNESS_STARVATION

    return FAIRNESS_STARVATION


def _fairness_replay() -> CheckKind[Any]:
    from cbaudit.oracles.fairness.kinds import FAIRNESS_REPLAY

    return FAIRNESS_REPLAY


def _preemption_resume() -> CheckKind[Any]:
    from cbaudit.oracles.preemption.kinds import PREEMPTION_RESUME

    return PREEMPTION_RESUME


def _incident_replay() -> CheckKind[Any]:
    from cbaudit.oracles.preemption.kinds import INCIDENT_REPLAY

    return INCIDENT_REPLAY


def _compare_results() -> CheckKind[Any]:
    from cbaudit.oracles.comparability import COMPARE_RESULTS

    return COMPARE_RESULTS


def _one_control_sensitivity() -> CheckKind[Any]:
    from cbaudit.oracles.comparability import ONE_CONTROL_SENSITIVITY

    return ONE_CONTROL_SENSITIVITY


def _result_registry_audit() -> CheckKind[Any]:
    from cbaudit.oracles.comparability import RESULT_REGISTRY_AUDIT

    return RESULT_REGISTRY_AUDIT


def _failure_closure() -> CheckKind[Any]:
    from cbaudit.oracles.comparability import FAILURE_CLOSURE

    return FAILURE_CLOSURE


def _loop11_negative() -> CheckKind[Any]:
    from cbaudit.oracles.comparability import LOOP11_NEGATIVE

    return LOOP11_NEGATIVE


def _pin() -> CheckKind[Any]:
    from cbaudit.oracles.binding import PIN

    return PIN


def _formula_audit() -> CheckKind[Any]:
    from cbaudit.oracles.binding import FORMULA_AUDIT

    return FORMULA_AUDIT


def _vllm_conformance() -> CheckKind[Any]:
    from cbaudit.oracles.conformance import VLLM_CONFORMANCE

    return VLLM_CONFORMANCE


def _calculator_claim() -> CheckKind[Any]:
    from cbaudit.oracles.calculator_claims import CALCULATOR_CLAIM

    return CALCULATOR_CLAIM


def _bench_results() -> CheckKind[Any]:
    from cbaudit.oracles.bench_results import BENCH_RESULTS

    return BENCH_RESULTS


def _mutation() -> CheckKind[Any]:
    from cbaudit.mutate.kinds import MUTATION

    return MUTATION


def _negative_floor() -> CheckKind[Any]:
    from cbaudit.mutate.kinds import NEGATIVE_FLOOR

    return NEGATIVE_FLOOR


def _metamorphic() -> CheckKind[Any]:
    from cbaudit.mutate.kinds import METAMORPHIC

    return METAMORPHIC


KINDS: LazyKinds = LazyKinds(
    [
        # Any check turned into a rejection case
        KindEntry("negative_check", _negative_check),
        # Loop 2: the plan/result contract
        KindEntry("plan_case", _plan_case, ("plan-case",)),
        KindEntry("negative_case", _negative_case),
        KindEntry("trace", _trace),
        # Loop 3, the lesson and the lecture: replays of the simulator; Loop 10's snapshots
        KindEntry("replay", _replay),
        KindEntry("replay_report", _replay_report),
        KindEntry("admission_cases", _admission_cases),
        KindEntry("static_efficiency", _static_efficiency),
        KindEntry("policy_snapshots", _policy_snapshots),
        # Loops 4-7 and 10: fixture oracles (selective batching, admission, chunked prefill,
        # SLO, runtime policy), by the name each check gives
        KindEntry(
            "oracle",
            _oracle,
            (
                "oracle:selective-batching",
                "oracle:admission-uncertainty",
                "oracle:chunked-prefill",
                "oracle:slo-overload",
                "oracle:runtime-policy",
            ),
        ),
        # Loop 8: fairness and starvation; Loop 9: preemption and resume
        KindEntry("fairness_starvation", _fairness_starvation, ("oracle:fairness-starvation",)),
        KindEntry("fairness_replay", _fairness_replay),
        KindEntry("preemption_resume", _preemption_resume, ("oracle:preemption-resume",)),
        KindEntry("incident_replay", _incident_replay),
        # Loop 11: paper contracts, comparability, sensitivity, failure closure
        KindEntry("compare_results", _compare_results),
        KindEntry("one_control_sensitivity", _one_control_sensitivity, ("results:sensitivity",)),
        KindEntry(
            "result_registry_audit",
            _result_registry_audit,
            ("results:contracts", "results:results"),
        ),
        KindEntry("failure_closure", _failure_closure, ("results:closure",)),
        KindEntry("loop11_negative", _loop11_negative),
        # Hash binding: pinned runtime sources, the formula registry
        KindEntry("pin", _pin),
        KindEntry("formula_audit", _formula_audit),
        # vllm-v1 against vLLM's own recorded decisions
        KindEntry("vllm_conformance", _vllm_conformance),
        # Printed figures reproduced by the lecture's calculators
        KindEntry("calculator_claim", _calculator_claim, ("calculator-claims",)),
        # Measured evidence
        KindEntry("bench_results", _bench_results),
        # Mutation campaigns, negative floors, metamorphic relations
        KindEntry("mutation", _mutation),
        KindEntry("negative_floor", _negative_floor),
        KindEntry("metamorphic", _metamorphic),
    ]
)

TARGETS: Mapping[str, Target] = KINDS.targets
