"""Fixture types a campaign can mutate, each with the oracle that must kill its mutants.

A target answers two questions about in-memory data: does this fixture belong to me
(`matches`), and what does my oracle say about it (`evaluate` -> `Verdict`). Evaluation never
touches files, so a mutant costs one patch and one oracle call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cbaudit.contract.issues import RecordKind
from cbaudit.contract.leaks import scan_leaks, strip_leaks
from cbaudit.contract.validator import check_case_data
from cbaudit.io.schemas import _fast_validator, is_valid, validate
from cbaudit.model import Finding, InputError, Location, Severity
from cbaudit.oracles.fixtures import Fixture
from cbaudit.oracles.registry import ORACLES, run_fixture


@dataclass(frozen=True)
class Verdict:
    """What an oracle said about one document: error codes, and whether its shape was unusable."""

    codes: frozenset[str]
    unusable: bool = False  # schema (shape) rejection: no semantic check could run


@dataclass(frozen=True)
class Target:
    """One fixture type: how to recognise it and which oracle judges it."""

    name: str
    loop: str
    description: str
    matches: Callable[[Mapping[str, Any]], bool]
    evaluate: Callable[[Mapping[str, Any]], Verdict]


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


def _plan_case_evaluate(data: Mapping[str, Any]) -> Verdict:
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

    def evaluate(data: Mapping[str, Any]) -> Verdict:
        fixture = Fixture(data=data, path="<mutant>", sha256="", locate=_no_locate)
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
}

TARGETS: Mapping[str, Target] = build_targets(
    [
        Target(
            "plan-case",
            "2",
            "Loop 2 workload/state/plan/result case (the plan/result contract validator)",
            _plan_case_matches,
            _plan_case_evaluate,
        ),
        *(
            _oracle_target(name, loop, text)
            for name, (loop, text) in _ORACLE_LOOPS.items()
            if name in ORACLES
        ),
    ]
)


def detect(data: Any) -> Target | None:
    """The target whose fixtures look like `data`, or None."""
    if not isinstance(data, Mapping):
        return None
    for target in TARGETS.values():
        if target.matches(data):
            return target
    return None
