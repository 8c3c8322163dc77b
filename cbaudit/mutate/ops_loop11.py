"""Loop 11 operators (article 0x0E): compound a sensitivity case, drift a source, rank, transfer.

Four fixture types, one per `cbaudit.results` audit:

- the one-control sensitivity fixture: compound or empty a case, vary a control on the wrong
  axis, leak a hidden control into the online projection, drift a declared ledger entry;
- the paper-contract registry: drift a source version, drop a contract field, claim a local
  reproduction, re-own a foreign fact as the scheduler, transfer a theorem, leak hidden truth
  into the visible state;
- the source-reported result registry: drop a coordinate, overclaim evidence, allow or declare
  a ranking, claim a comparison across differing coordinates, weaken the comparison set;
- the failure-closure registry: point at evidence nobody can find, drop or leave open a class.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, remove, replace
from cbaudit.mutate.patch import pointer_of

LOOP = "11"
SENSITIVITY = "results:sensitivity"
CONTRACTS = "results:contracts"
RESULTS = "results:results"
CLOSURE = "results:closure"
#: The contract fields K = (G, I, S, D, U, O, M, A, F), and non-claims.
CONTRACT_FIELDS = (
    "granularity",
    "protected_identity",
    "visible_state",
    "decision_output",
    "unknown_future",
    "objective",
    "metric",
    "assumptions",
    "foreign_owners",
    "non_claims",
)


def _items(data: Mapping[str, Any], key: str) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, x) for i, x in enumerate(data.get(key) or []) if isinstance(x, Mapping)]


# ------------------------------------------------------------------- one-control sensitivity


def _changing_cases(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any], str]]:
    """Cases that change exactly one known control: (index, case, control)."""
    controls = data.get("controls") or {}
    out = []
    for i, case in _items(data, "cases"):
        change = case.get("change")
        if isinstance(change, Mapping) and len(change) == 1:
            (control,) = change
            if control in controls:
                out.append((i, case, str(control)))
    return out


def _compound(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    controls = data.get("controls") or {}
    online = [c for c in data.get("online_projection") or [] if isinstance(controls.get(c), int)]
    for i, case, control in _changing_cases(data):
        others = [c for c in online if c != control and not isinstance(controls[c], bool)]
        if others:
            extra = rng.choice(others)
            ptr = pointer_of("cases", i, "change", extra)
            yield (add(ptr, controls[extra] + 1),), f"{case['id']} also changes {extra}"


def _no_change(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    controls = data.get("controls") or {}
    for i, case, control in _changing_cases(data):
        ptr = pointer_of("cases", i, "change", control)
        yield (replace(ptr, controls[control]),), f"{case['id']} keeps {control} at its base value"


def _axis_mismatch(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    axes = sorted((data.get("axes") or {}).items())
    for i, case, control in _changing_cases(data):
        wrong = [a for a, c in axes if c != control]
        if wrong:
            axis = rng.choice(wrong)
            yield (
                (replace(pointer_of("cases", i, "axis"), axis),),
                f"{case['id']} filed under {axis}",
            )


def _leak_projection(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for name in data.get("hidden_controls") or []:
        yield (add("/online_projection/-", name),), f"hidden {name} in the online projection"


def _leak_expect(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    hidden = set(data.get("hidden_controls") or [])
    base = data.get("expected_base") or {}
    entries = sorted(k for k, v in base.items() if isinstance(v, int) and not isinstance(v, bool))
    for i, case, control in _changing_cases(data):
        if control in hidden and entries:
            key = rng.choice(entries)
            ptr = pointer_of("cases", i, "expect_changed")
            yield (replace(ptr, {key: base[key] + 1}),), f"{case['id']} expects {key} to change"


def _base_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for key, value in sorted((data.get("expected_base") or {}).items()):
        if isinstance(value, int) and not isinstance(value, bool):
            yield (replace(pointer_of("expected_base", key), value + 1),), f"base {key} {value + 1}"


def _case_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, case in _items(data, "cases"):
        expect = case.get("expect_changed") or {}
        ints = sorted(
            k for k, v in expect.items() if isinstance(v, int) and not isinstance(v, bool)
        )
        if ints:
            key = rng.choice(ints)
            ptr = pointer_of("cases", i, "expect_changed", key)
            yield (replace(ptr, expect[key] + 1),), f"{case['id']} expects {key}={expect[key] + 1}"


# ------------------------------------------------------------------- paper contracts


def _contracts(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return _items(data, "contracts")


def _source_drift(key: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        for i, item in _items(data, key):
            src = item.get("source")
            if isinstance(src, Mapping) and isinstance(src.get("version"), str):
                ptr = pointer_of(key, i, "source", "version")
                value = f"{src['version']} (superseded)"
                yield (replace(ptr, value),), f"{item.get('id')} records {value!r}"
            if isinstance(src, Mapping) and isinstance(src.get("commit"), str):
                ptr = pointer_of(key, i, "source", "commit")
                yield (replace(ptr, "0" * 40),), f"{item.get('id')} names another commit"

    return gen


def _field_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, contract in _contracts(data):
        present = [f for f in CONTRACT_FIELDS if f in contract]
        if present:
            field = rng.choice(present)
            empty: Any = [] if isinstance(contract[field], list) else ""
            ptr = pointer_of("contracts", i, field)
            yield (replace(ptr, empty),), f"{contract.get('id')} loses {field}"


def _contract_overclaim(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, contract in _contracts(data):
        ptr = pointer_of("contracts", i, "locally_reproduced")
        op = replace(ptr, True) if "locally_reproduced" in contract else add(ptr, True)
        yield (op,), f"{contract.get('id')} claims a local reproduction"


def _owner_collapse(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, contract in _contracts(data):
        owners = [
            (j, fo)
            for j, fo in enumerate(contract.get("foreign_owners") or [])
            if isinstance(fo, Mapping)
        ]
        if owners:
            j, fo = rng.choice(owners)
            ptr = pointer_of("contracts", i, "foreign_owners", j, "owner")
            yield (
                (replace(ptr, "scheduler"),),
                f"{contract.get('id')}: {fo.get('fact')!r} owned by the scheduler",
            )


def _theorem_transfer(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    theorems = [c["theorem"] for _, c in _contracts(data) if isinstance(c.get("theorem"), Mapping)]
    for i, comp in _items(data, "compositions"):
        ptr = pointer_of("compositions", i)
        if theorems:
            tid = rng.choice(theorems).get("id")
            yield (replace(f"{ptr}/inherits_theorems", [tid]),), f"{comp.get('id')} inherits {tid}"
        if comp.get("new_contract_required") is True:
            yield (
                (replace(f"{ptr}/new_contract_required", False),),
                f"{comp.get('id')} needs no new contract",
            )


def _visible_hidden(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, contract in _contracts(data):
        if isinstance(contract.get("visible_state"), list):
            ptr = pointer_of("contracts", i, "visible_state", "-")
            yield (
                (add(ptr, "each request's realized output length"),),
                f"{contract.get('id')} sees realized lengths",
            )


# ------------------------------------------------------------------- source-reported results


def _results(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return _items(data, "results")


def _coordinate_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, result in _results(data):
        coords = sorted((result.get("coordinates") or {}).items())
        if coords:
            name, _ = rng.choice(coords)
            ptr = pointer_of("results", i, "coordinates", name)
            yield (replace(ptr, ""),), f"{result.get('id')} loses coordinate {name}"


def _result_overclaim(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, result in _results(data):
        if rng.random() < 0.5 or "local_reproduction" not in result:
            ptr = pointer_of("results", i, "coordinates", "evidence_class")
            yield (replace(ptr, "measured_gpu"),), f"{result.get('id')} relabelled measured_gpu"
        else:
            ptr = pointer_of("results", i, "local_reproduction")
            yield (replace(ptr, True),), f"{result.get('id')} marked reproduced here"


def _ranking(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if data.get("generic_policy_ranking_allowed") is False:
        yield (replace("/generic_policy_ranking_allowed", True),), "a generic ranking is allowed"
    if "ranking" not in data:
        methods = sorted({str(r.get("method")) for _, r in _results(data)})
        yield (add("/ranking", methods[:3]),), "the registry declares a ranking"


def _incomparable(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    ids = sorted(str(r.get("id")) for _, r in _results(data))
    if len(ids) >= 2:
        a, b = rng.sample(ids, 2)
        claim = {"a": a, "b": b, "claim": f"{a} outperforms {b}"}
        yield (add("/comparison_claims/-", claim),), f"{a} ranked against {b}"


def _weaken(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    current = list(data.get("comparison_set") or [])
    if current:
        k = rng.randrange(len(current))
        yield (remove(pointer_of("comparison_set", k)),), f"comparison set drops {current[k]}"


# ------------------------------------------------------------------- failure closure


def _unknown_case(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, rule in _items(data, "rules"):
        yield (
            (replace(pointer_of("rules", i, "case"), "no-such-case"),),
            f"{rule.get('id')} names no case",
        )
    classes = [(i, c) for i, c in _items(data, "classes") if c.get("prior")]
    if classes:
        i, cls = rng.choice(classes)
        j = rng.randrange(len(cls["prior"]))
        ptr = pointer_of("classes", i, "prior", j, "case")
        yield (replace(ptr, "no-such-case"),), f"{cls.get('id')} closed by a missing case"


def _unknown_binding(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    classes = _items(data, "classes")
    if classes:
        i, cls = rng.choice(classes)
        ptr = pointer_of("classes", i, "artifacts", "-")
        yield (add(ptr, "B99"),), f"{cls.get('id')} consumes an undeclared binding"


def _class_set(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    classes = _items(data, "classes")
    if classes:
        i, cls = rng.choice(classes)
        yield (remove(pointer_of("classes", i)),), f"{cls.get('id')} dropped"
        yield (add("/classes/-", dict(cls)),), f"{cls.get('id')} listed twice"


def _unclosed(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    classes = _items(data, "classes")
    if classes:
        i, cls = rng.choice(classes)
        ptr = pointer_of("classes", i)
        yield (
            (replace(f"{ptr}/prior", []), replace(f"{ptr}/rules", [])),
            f"{cls.get('id')} closed by nothing",
        )


def _op(
    name: str, target: str, record: str, pointer: str, changes: str, expect: str, gen: Any
) -> Operator:
    return Operator(name, LOOP, target, record, pointer, changes, expect, gen)


_SENS = "sensitivity fixture"
_CON = "paper contract"
_RES = "source-reported result"
_CLO = "failure closure"

OPERATORS: tuple[Operator, ...] = (
    _op(
        "sensitivity.case.compound",
        SENSITIVITY,
        _SENS,
        "/cases/*/change/*",
        "let a one-control case change a second control",
        "RESULTS.SENSITIVITY.COMPOUND",
        _compound,
    ),
    _op(
        "sensitivity.case.no-change",
        SENSITIVITY,
        _SENS,
        "/cases/*/change/*",
        "let a case set its control to the base value",
        "RESULTS.SENSITIVITY.NO_CHANGE",
        _no_change,
    ),
    _op(
        "sensitivity.case.axis",
        SENSITIVITY,
        _SENS,
        "/cases/*/axis",
        "file a case under an axis that varies another control",
        "RESULTS.SENSITIVITY.AXIS_MISMATCH",
        _axis_mismatch,
    ),
    _op(
        "sensitivity.leak.projection",
        SENSITIVITY,
        _SENS,
        "/online_projection/-",
        "put a hidden control into the online projection",
        "RESULTS.HIDDEN_TRUTH.LEAK",
        _leak_projection,
    ),
    _op(
        "sensitivity.leak.expect",
        SENSITIVITY,
        _SENS,
        "/cases/*/expect_changed",
        "expect a hidden-truth case to change an online ledger entry",
        "RESULTS.HIDDEN_TRUTH.LEAK",
        _leak_expect,
    ),
    _op(
        "sensitivity.expect.base",
        SENSITIVITY,
        _SENS,
        "/expected_base/*",
        "declare a base ledger entry one off the derivation",
        "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
        _base_drift,
    ),
    _op(
        "sensitivity.expect.case",
        SENSITIVITY,
        _SENS,
        "/cases/*/expect_changed/*",
        "declare a changed ledger entry one off the derivation",
        "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
        _case_drift,
    ),
    _op(
        "contracts.source.drift",
        CONTRACTS,
        _CON,
        "/contracts/*/source/{version,commit}",
        "record another source version or commit than the source's",
        "RESULTS.SOURCE.DRIFT",
        _source_drift("contracts"),
    ),
    _op(
        "contracts.field.missing",
        CONTRACTS,
        _CON,
        "/contracts/*/<K field or non_claims>",
        "empty one contract field (G, I, S, D, U, O, M, A, F or non-claims)",
        "RESULTS.CONTRACT.FIELD_MISSING",
        _field_missing,
    ),
    _op(
        "contracts.evidence.overclaim",
        CONTRACTS,
        _CON,
        "/contracts/*/locally_reproduced",
        "claim a paper contract was reproduced here",
        "RESULTS.EVIDENCE.OVERCLAIM",
        _contract_overclaim,
    ),
    _op(
        "contracts.owner.collapse",
        CONTRACTS,
        _CON,
        "/contracts/*/foreign_owners/*/owner",
        "let the scheduler own a foreign fact",
        "RESULTS.OWNER.COLLAPSE",
        _owner_collapse,
    ),
    _op(
        "contracts.theorem.transfer",
        CONTRACTS,
        "composition",
        "/compositions/*/{inherits_theorems,new_contract_required}",
        "let a composition inherit a theorem or need no new contract",
        "RESULTS.THEOREM.TRANSFER",
        _theorem_transfer,
    ),
    _op(
        "contracts.leak.visible-state",
        CONTRACTS,
        _CON,
        "/contracts/*/visible_state/-",
        "list realized output lengths in a contract's online state",
        "RESULTS.HIDDEN_TRUTH.LEAK",
        _visible_hidden,
    ),
    _op(
        "results.source.drift",
        RESULTS,
        _RES,
        "/results/*/source/version",
        "attribute a result to another source version",
        "RESULTS.SOURCE.DRIFT",
        _source_drift("results"),
    ),
    _op(
        "results.coordinate.missing",
        RESULTS,
        _RES,
        "/results/*/coordinates/*",
        "empty one comparison coordinate of a result",
        "RESULTS.RESULT.COORDINATE_MISSING",
        _coordinate_missing,
    ),
    _op(
        "results.evidence.overclaim",
        RESULTS,
        _RES,
        "/results/*/{coordinates/evidence_class,local_reproduction}",
        "relabel a paper number measured_gpu or reproduced here",
        "RESULTS.EVIDENCE.OVERCLAIM",
        _result_overclaim,
    ),
    _op(
        "results.ranking.universal",
        RESULTS,
        "result registry",
        "/{generic_policy_ranking_allowed,ranking}",
        "allow a generic policy ranking, or declare one",
        "RESULTS.RANKING.UNIVERSAL",
        _ranking,
    ),
    _op(
        "results.ranking.incomparable",
        RESULTS,
        "result registry",
        "/comparison_claims/-",
        "claim one result outperforms another with differing coordinates",
        "RESULTS.RANKING.INCOMPARABLE",
        _incomparable,
    ),
    _op(
        "results.comparison-set.weaken",
        RESULTS,
        "result registry",
        "/comparison_set/*",
        "drop one coordinate from the comparison set",
        "RESULTS.COMPARISON_SET.WEAKENED",
        _weaken,
    ),
    _op(
        "closure.evidence.unknown-case",
        CLOSURE,
        _CLO,
        "/{rules,classes/*/prior}/*/case",
        "close a class or rule with a rejection case that does not exist",
        "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
        _unknown_case,
    ),
    _op(
        "closure.evidence.unknown-binding",
        CLOSURE,
        _CLO,
        "/classes/*/artifacts/-",
        "let a class consume an artifact binding nobody declared",
        "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
        _unknown_binding,
    ),
    _op(
        "closure.class.set",
        CLOSURE,
        _CLO,
        "/classes/*",
        "drop one failure class, or list one twice",
        "RESULTS.CLOSURE.CLASS_SET",
        _class_set,
    ),
    _op(
        "closure.class.unclosed",
        CLOSURE,
        _CLO,
        "/classes/*/{prior,rules}",
        "leave a failure class with no closing case or rule",
        "RESULTS.CLOSURE.UNCLOSED",
        _unclosed,
    ),
)
