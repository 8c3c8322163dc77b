"""Fixture types a campaign can mutate, each with the oracle that must kill its mutants.

A target answers two questions about in-memory data: does this fixture belong to me
(`matches`), and what does my oracle say about it (`evaluate` -> `Verdict`). Evaluation never
touches files, so a mutant costs one patch and one oracle call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from cbaudit.contract.issues import RecordKind
from cbaudit.contract.leaks import scan_leaks, strip_leaks
from cbaudit.contract.validator import check_case_data
from cbaudit.io import load_document
from cbaudit.io.schemas import _fast_validator, is_valid, validate
from cbaudit.model import Finding, InputError, Location, Severity
from cbaudit.results.paths import shipped

# Each evaluator imports its oracle when it first judges a fixture: a campaign over one
# fixture type loads that oracle only (issue 13, fast start).


@dataclass(frozen=True)
class Verdict:
    """What an oracle said about one document: error codes, and whether its shape was unusable."""

    codes: frozenset[str]
    unusable: bool = False  # schema (shape) rejection: no semantic check could run


class Evaluator(Protocol):
    """Judge in-memory fixture data; `directory` is the fixture file's folder, for oracles that
    read files the fixture names relative to itself (pins, snapshots, closure bindings)."""

    def __call__(self, data: Mapping[str, Any], directory: Path | None = None) -> Verdict: ...


@dataclass(frozen=True)
class Target:
    """One fixture type: how to recognise it and which oracle judges it."""

    name: str
    loop: str
    description: str
    matches: Callable[[Mapping[str, Any]], bool]
    evaluate: Evaluator


def _error_codes(findings: list[Finding] | tuple[Finding, ...]) -> frozenset[str]:
    return frozenset(f.code for f in findings if f.severity is Severity.ERROR)


def _plan_case_matches(data: Mapping[str, Any]) -> bool:
    return data.get("kind") == "plan_case" or (
        "workload" in data and "state" in data and "plan" in data and "patch" not in data
    )


_ONLINE: tuple[RecordKind, ...] = ("state", "plan", "result")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_KIND_SUFFIXES = ("NotValid", "MultipleValid")
_KIND_NAMES = {"Constant": "CONST", "FalseSchema": "FALSE"}


def _kind_code(kind: Any) -> str:
    """`SCHEMA.<KEYWORD>` from a jsonschema-rs error kind (the io layer's spelling)."""
    name = type(kind).__name__
    for suffix in _KIND_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
    return "SCHEMA." + _KIND_NAMES.get(name, _CAMEL.sub("_", name).upper())


def schema_codes(data: Any, schema: str) -> frozenset[str]:
    """The schema finding codes of invalid `data`, fast (jsonschema-rs) when available."""
    fast = _fast_validator(schema)
    if fast is None:
        return frozenset(f.code for f in validate(data, schema))
    return frozenset(_kind_code(err.kind) for err in fast.iter_errors(data))


def _plan_case_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    """`check_case_data`, with the detailed (slow) schema report replaced by its codes."""
    if is_valid(data, "plan-case"):
        findings, unusable, _ = check_case_data(data)
        return Verdict(_error_codes(findings), unusable)
    leaks = []
    for record in _ONLINE:
        part = data.get(record)
        if part is not None:
            leaks += scan_leaks(part, record)
    stripped = data
    if leaks:
        stripped = {k: (strip_leaks(v) if k in _ONLINE else v) for k, v in data.items()}
        if is_valid(stripped, "plan-case"):
            findings, unusable, _ = check_case_data(data)
            return Verdict(_error_codes(findings), unusable)
    codes = frozenset(i.code for i in leaks) | schema_codes(stripped, "plan-case")
    return Verdict(codes, unusable=True)


def _no_locate(pointer: str) -> Location:
    return Location(pointer=pointer)


def _oracle_target(name: str, loop: str, description: str) -> Target:
    def matches(data: Mapping[str, Any]) -> bool:
        return data.get("oracle") == name and "patch" not in data

    def evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
        from cbaudit.oracles.fixtures import Fixture
        from cbaudit.oracles.registry import run_fixture

        fixture = Fixture(
            data=data, path="<mutant>", sha256="", locate=_no_locate, directory=directory
        )
        try:
            result = run_fixture(name, fixture)
        except InputError as err:
            return Verdict(_error_codes(err.findings), unusable=True)
        return Verdict(_error_codes(result.findings))

    return Target(f"oracle:{name}", loop, description, matches, evaluate)


def build_targets(items: list[Target]) -> Mapping[str, Target]:
    """A name -> target mapping that refuses duplicates."""
    table: dict[str, Target] = {}
    for item in items:
        if item.name in table:
            raise ValueError(f"mutation target {item.name!r} is registered twice")
        table[item.name] = item
    return MappingProxyType(table)


_ORACLE_LOOPS = {
    "selective-batching": ("4", "Loop 4 selective batching: packed versus reference layer"),
    "admission-uncertainty": ("5", "Loop 5 admission under output uncertainty"),
    "chunked-prefill": ("6", "Loop 6 chunked prefill: causal pairs, reload, schedule"),
    "slo-overload": ("7", "Loop 7 SLO clocks, slack, goodput and overload"),
    "runtime-policy": ("10", "Loop 10 pinned runtime binding and the multi-policy oracle"),
}


# ------------------------------------------------------- Loops 8 and 9 (gate-kind oracles)


def _loaded_target(
    name: str,
    loop: str,
    description: str,
    matches: Callable[[Mapping[str, Any]], bool],
    run: Callable[[Any], Any],
) -> Target:
    """A target for an oracle that takes a `LoadedFixture` (the Loop 8 and 9 gate kinds)."""

    def evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
        from cbaudit.sim.fairness_fixture import LoadedFixture

        try:
            result = run(LoadedFixture(data, "<mutant>", "", _no_locate))
        except InputError as err:
            return Verdict(_error_codes(err.findings), unusable=True)
        return Verdict(_error_codes(result.findings))

    return Target(f"oracle:{name}", loop, description, matches, evaluate)


def _fairness_evaluate(fixture: Any) -> Any:
    from cbaudit.sim.fairness_oracle import evaluate

    return evaluate(fixture)


def _preemption_evaluate(fixture: Any) -> Any:
    from cbaudit.sim.preemption_oracle import evaluate

    return evaluate(fixture)


def _fairness_matches(data: Mapping[str, Any]) -> bool:
    return "accounting" in data and "claim" in data and "patch" not in data


def _preemption_matches(data: Mapping[str, Any]) -> bool:
    return (
        isinstance(data.get("cases"), list)
        and "claim" in data
        and "accounting" not in data
        and "patch" not in data
    )


# ------------------------------------------------------- Loop 11 (cbaudit.results)


def _kind_is(kind: str) -> Callable[[Mapping[str, Any]], bool]:
    def matches(data: Mapping[str, Any]) -> bool:
        return data.get("kind") == kind

    return matches


def _verdict(findings: tuple[Finding, ...] | list[Finding]) -> Verdict:
    codes = _error_codes(findings)
    return Verdict(codes, unusable=any(c.startswith("SCHEMA.") for c in codes))


def _sensitivity_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.sensitivity import run_sensitivity

    return _verdict(run_sensitivity(data, file="<mutant>").findings)


@cache
def _shipped_registry(name: str) -> Any:
    """A shipped registry file, loaded once: the fixed partner of a mutated registry."""
    return load_document(shipped(name), expect=None, display=f"registry/{name}").data


def _contracts_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.registries import audit_registries

    partner = _shipped_registry("source_reported_results.yaml")
    audit = audit_registries(data, partner, contracts_file="<mutant>", results_file="<shipped>")
    return _verdict(audit.findings)


def _results_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.registries import audit_registries

    partner = _shipped_registry("paper_contracts.yaml")
    audit = audit_registries(partner, data, contracts_file="<shipped>", results_file="<mutant>")
    return _verdict(audit.findings)


def _bundle_root(directory: Path) -> Path:
    """The nearest folder holding `bundle.yaml` (else `directory`): bindings stay inside it."""
    for folder in (directory, *directory.parents):
        if (folder / "bundle.yaml").is_file():
            return folder
    return directory


def _closure_evaluate(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    from cbaudit.results.closure import audit_closure

    base = directory.resolve() if directory is not None else None
    top = _bundle_root(base) if base is not None else None

    def resolve(rel: str) -> Path:
        if base is None or top is None:
            raise InputError.at("MUTATE.BUNDLE.PATH", f"no fixture folder to resolve {rel!r}")
        target = (base / rel).resolve()
        if Path(rel).is_absolute() or (target != top and top not in target.parents):
            raise InputError.at("MUTATE.BUNDLE.PATH", f"path {rel!r} escapes the bundle")
        return target

    try:
        audit = audit_closure(data, file="<mutant>", resolve=resolve)
    except InputError as err:
        return Verdict(_error_codes(err.findings), unusable=True)
    return _verdict(audit.findings)


TARGETS: Mapping[str, Target] = build_targets(
    [
        Target(
            "plan-case",
            "2",
            "Loop 2 workload/state/plan/result case (the plan/result contract validator)",
            _plan_case_matches,
            _plan_case_evaluate,
        ),
        *(_oracle_target(name, loop, text) for name, (loop, text) in _ORACLE_LOOPS.items()),
        _loaded_target(
            "fairness-starvation",
            "8",
            "Loop 8 fairness and starvation: identity, completed service, VTC, aging, MLFQ",
            _fairness_matches,
            _fairness_evaluate,
        ),
        _loaded_target(
            "preemption-resume",
            "9",
            "Loop 9 preemption and resume: intents, foreign receipts, epochs, resume tickets",
            _preemption_matches,
            _preemption_evaluate,
        ),
        Target(
            "results:sensitivity",
            "11",
            "Loop 11 one-control sensitivity on the shared analytical fixture",
            _kind_is("cbaudit.sensitivity-fixture"),
            _sensitivity_evaluate,
        ),
        Target(
            "results:contracts",
            "11",
            "Loop 11 paper-contract registry (audited with the shipped result registry)",
            _kind_is("cbaudit.paper-contracts"),
            _contracts_evaluate,
        ),
        Target(
            "results:results",
            "11",
            "Loop 11 source-reported result registry (audited with the shipped contracts)",
            _kind_is("cbaudit.source-reported-results"),
            _results_evaluate,
        ),
        Target(
            "results:closure",
            "11",
            "Loop 11 failure closure: classes bound to artifacts and rejection cases",
            _kind_is("cbaudit.failure-closure"),
            _closure_evaluate,
        ),
    ]
)

#: Gate kinds whose valid fixture a campaign mutates, and the spec field naming that fixture
#: (`oracle` and `plan_case` checks are read by `cbaudit.mutate.bundle` directly).
KIND_FIXTURE_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "fairness_starvation": ("fixture",),
        "preemption_resume": ("fixture",),
        "one_control_sensitivity": ("fixture",),
        "failure_closure": ("registry",),
        "result_registry_audit": ("contracts", "results"),
    }
)
#: Defaults of fields a kind may leave out (`registry:NAME` names a shipped registry file).
KIND_FIELD_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "contracts": "registry:paper_contracts.yaml",
        "results": "registry:source_reported_results.yaml",
    }
)


def detect(data: Any) -> Target | None:
    """The target whose fixtures look like `data`, or None."""
    if not isinstance(data, Mapping):
        return None
    for target in TARGETS.values():
        if target.matches(data):
            return target
    return None
