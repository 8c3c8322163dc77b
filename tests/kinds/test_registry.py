"""The one registry of check kinds: every entry resolves, and each kind is one interface."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import fields
from typing import Any

import pytest
from repo_paths import CONFORMANCE, LECTURE4, M52

from cbaudit.checks.bundle import load_bundle
from cbaudit.checks.interface import CheckKind, build_kinds, targets_of
from cbaudit.checks.spec import COMMON_KEYS, CheckSpec, spec_keys
from cbaudit.io.schemas import list_schemas, load_schema
from cbaudit.kinds import KINDS, TARGETS
from cbaudit.mutate.registry import OPERATORS

NAMES = sorted(KINDS)
COMMON = "check-common.schema.json#/$defs/"
DECLARED = [
    *load_bundle(M52, KINDS).checks,
    *load_bundle(CONFORMANCE, KINDS).checks,
    *load_bundle(LECTURE4, KINDS).checks,
]


def test_the_registry_is_the_dict_of_every_kind() -> None:
    """Every kind the shipped bundles use (M5.2, the vLLM conformance corpus, lecture 4) is
    registered, under its own name, and nothing else."""
    assert {c.kind for c in DECLARED} == set(KINDS)
    assert all(kind.name == name for name, kind in KINDS.items())
    assert len(KINDS) == 27


def test_a_name_given_twice_is_refused() -> None:
    """Registering a kind (or a mutation target) twice raises at import time."""
    kind = KINDS["trace"]
    with pytest.raises(ValueError, match="registered twice"):
        build_kinds([kind, kind])
    with pytest.raises(ValueError, match="registered twice"):
        targets_of({"a": KINDS["oracle"], "b": KINDS["oracle"]})


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_shipped_listed_and_closed(name: str) -> None:
    """Each kind's schema is `schemas/check-<kind>.schema.json`, listed by `cbaudit schema
    list`, closed (`additionalProperties: false`), references every common field, and names
    exactly the keys its spec dataclass reads."""
    kind: CheckKind[Any] = KINDS[name]
    assert kind.schema_name == "check-" + name.replace("_", "-")
    assert kind.schema_name in list_schemas()
    schema = load_schema(kind.schema_name)
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    for key in COMMON_KEYS:
        if key == "kind":
            assert props[key] == {"const": name}
        else:
            assert props[key] == {"$ref": COMMON + key}, key
    assert set(props) == spec_keys(kind.spec_type)
    assert issubclass(kind.spec_type, CheckSpec)
    assert all(f.kw_only for f in fields(kind.spec_type))


@pytest.mark.parametrize("name", NAMES)
def test_an_example_from_the_bundle_parses_and_runs_callably(name: str) -> None:
    """Each kind has a check in a shipped bundle that parses into its spec type."""
    examples = [c for c in DECLARED if c.kind == name]
    assert examples, name
    for check in examples:
        assert check.errors == ()
        assert isinstance(check.spec, KINDS[name].spec_type)
    assert callable(KINDS[name].run)


def test_the_registry_travels_to_worker_processes() -> None:
    """Kinds, specs and targets pickle (the gate hands them to worker processes)."""
    assert pickle.loads(pickle.dumps(KINDS)).keys() == KINDS.keys()
    assert list(pickle.loads(pickle.dumps(TARGETS))) == list(TARGETS)
    for check in DECLARED:
        assert pickle.loads(pickle.dumps(check)).spec == check.spec


def test_targets_come_from_the_kinds_in_registry_order() -> None:
    """The mutation targets are those the kinds declare (in the order `detect` tries them),
    and every operator mutates one of them."""
    assert list(TARGETS) == [
        "plan-case",
        "oracle:selective-batching",
        "oracle:admission-uncertainty",
        "oracle:chunked-prefill",
        "oracle:slo-overload",
        "oracle:runtime-policy",
        "oracle:fairness-starvation",
        "oracle:preemption-resume",
        "results:sensitivity",
        "results:contracts",
        "results:results",
        "results:closure",
        "calculator-claims",
    ]
    assert {op.target for op in OPERATORS.values()} <= set(TARGETS)


def test_declaring_the_kinds_loads_no_oracle_or_simulator() -> None:
    """Importing the registry declares every kind without loading what the kinds run: a small
    command that needs the registry still starts fast."""
    code = "import sys, cbaudit.kinds; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = [
        m
        for m in out
        if m.startswith(("cbaudit.sim", "cbaudit.policies", "cbaudit.contract", "jsonschema"))
        or m.startswith(("cbaudit.pins", "cbaudit.formulas", "cbaudit.bench", "yaml", "rich"))
        or m
        in ("cbaudit.oracles.admission", "cbaudit.oracles.slo_oracle", "cbaudit.mutate.campaign")
    ]
    assert heavy == []
