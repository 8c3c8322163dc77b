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
from cbaudit.checks.interface import CheckKind, KindEntry, LazyKinds, build_kinds, targets_of
from cbaudit.checks.spec import COMMON_KEYS, CheckSpec, spec_keys
from cbaudit.io.schemas import list_schemas, load_schema
from cbaudit.kinds import KINDS, TARGETS
from cbaudit.kinds.registry import _plan_case, _trace
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
    with pytest.raises(ValueError, match="check kind 'trace' is registered twice"):
        LazyKinds([KindEntry("trace", _trace), KindEntry("trace", _trace)])
    with pytest.raises(ValueError, match="mutation target 'plan-case' is registered twice"):
        LazyKinds(
            [KindEntry("a", _plan_case, ("plan-case",)), KindEntry("b", _trace, ("plan-case",))]
        )


def test_every_entry_loads_the_kind_it_names() -> None:
    """Each entry's loader returns the kind of the entry's name, declaring exactly the entry's
    targets; an entry that disagrees with its kind is refused when looked up."""
    fresh = LazyKinds(KINDS.entries())
    for entry in fresh.entries():
        kind = fresh[entry.name]
        assert kind is entry.load()
        assert kind.name == entry.name
        declared = kind.mutation.targets if kind.mutation else ()
        assert tuple(t.name for t in declared) == entry.targets
    assert [t.name for t in fresh.targets.values()] == list(TARGETS)
    wrong = LazyKinds([KindEntry("plan_case", _trace), KindEntry("trace", _plan_case)])
    assert list(wrong) == ["plan_case", "trace"]  # naming loads nothing
    with pytest.raises(ValueError, match=r"registry entry 'plan_case' .* loads kind 'trace'"):
        wrong["plan_case"]
    with pytest.raises(ValueError, match=r"registry entry 'trace' \(targets \[\]\) loads"):
        wrong["trace"]
    with pytest.raises(
        ValueError, match=r"\(targets \[\]\) loads kind 'plan_case' \(targets \['plan-case'\]\)"
    ):
        LazyKinds([KindEntry("plan_case", _plan_case)])["plan_case"]


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
    """Kinds, specs and targets pickle (the gate hands them to worker processes): the registry
    travels as its entries, and each kind and target loads on the far side as here."""
    kinds = pickle.loads(pickle.dumps(KINDS))
    assert kinds.keys() == KINDS.keys()
    assert all(kinds[name] == KINDS[name] for name in NAMES)
    targets = pickle.loads(pickle.dumps(TARGETS))
    assert list(targets) == list(TARGETS)
    assert all(targets[name] == TARGETS[name] for name in TARGETS)
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
    """Loading every kind (and target) declares them without loading what the kinds run: a
    command that needs many kinds still starts fast."""
    code = (
        "import sys, cbaudit.kinds as k; [k.KINDS[n] for n in k.KINDS];"
        " [k.TARGETS[n] for n in k.TARGETS]; print(' '.join(sorted(sys.modules)))"
    )
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


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "; import sys; print(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


KIND_MODULES = {
    "cbaudit.checks.negative",
    "cbaudit.oracles.contract_cases",
    "cbaudit.oracles.replay",
    "cbaudit.oracles.fixture_oracle",
    "cbaudit.oracles.fairness.kinds",
    "cbaudit.oracles.preemption.kinds",
    "cbaudit.oracles.comparability",
    "cbaudit.oracles.binding",
    "cbaudit.oracles.conformance",
    "cbaudit.oracles.calculator_claims",
    "cbaudit.oracles.bench_results",
    "cbaudit.mutate.kinds",
}


def test_a_kind_module_loads_only_when_its_kind_is_looked_up() -> None:
    """Naming the kinds and targets loads no kind's module; looking up `plan_case` (what a gate
    over a one-plan-case bundle, or `mutate` of one plan case, does) loads its module only."""
    listed = _modules_after("import cbaudit.kinds as k; list(k.KINDS), list(k.TARGETS)")
    assert listed & KIND_MODULES == set()
    one = _modules_after("from cbaudit.kinds import KINDS, TARGETS; KINDS['plan_case']")
    assert one & KIND_MODULES == {"cbaudit.oracles.contract_cases"}
    target = _modules_after("from cbaudit.kinds import TARGETS; TARGETS['plan-case']")
    assert target & KIND_MODULES == {"cbaudit.oracles.contract_cases"}
