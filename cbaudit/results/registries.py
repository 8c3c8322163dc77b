"""Audits of the paper-contract registry and the source-reported result registry (0x0E).

The audit is what makes the registries executable: every contract keeps its nine fields,
non-claims and source version; every result keeps its coordinates, stays source-reported and
unreproduced; no theorem travels to a contract or composition that did not prove it; no
foreign fact is re-owned by the scheduler; and no ranking is produced across results whose
comparison coordinates differ. The pairwise check finds the article's answer: zero comparable
pairs, so `generic_policy_ranking_allowed` stays false.

Finding codes (all errors):

RESULTS.CONTRACT.FIELD_MISSING   a K field, non-claims or the source version is missing/empty
RESULTS.CONTRACT.SET_MISMATCH    the contracts are not exactly the article's eight methods
RESULTS.REGISTRY.DUPLICATE_ID    an id appears twice
RESULTS.SOURCE.UNKNOWN           a contract/result names a source the registry does not list
RESULTS.SOURCE.DRIFT             a recorded source version (or commit) differs from the source's
RESULTS.EVIDENCE.OVERCLAIM       source-reported evidence presented as local/measured
RESULTS.HIDDEN_TRUTH.LEAK        online-visible state includes hidden (realized/future) truth
RESULTS.OWNER.COLLAPSE           a foreign fact is owned by the scheduler itself
RESULTS.THEOREM.TRANSFER         a theorem attached to a contract/composition that did not prove it
RESULTS.THEOREM.PREMISES_MISSING a theorem without premises
RESULTS.RESULT.COORDINATE_MISSING      a result lacks a coordinate of R
RESULTS.RESULT.COORDINATE_INCOMPLETE   `coordinate_complete: true` with an unreported coordinate
RESULTS.RESULT.UNKNOWN_METHOD    a result names a method without a contract
RESULTS.RANKING.UNIVERSAL        generic ranking allowed, or a ranking declared
RESULTS.RANKING.INCOMPARABLE     a comparison claim between results that are not comparable
RESULTS.COMPARISON_SET.WEAKENED  the declared comparison set drops one of the eight coordinates
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from cbaudit.io.schemas import validate
from cbaudit.model import Finding, FindingSink
from cbaudit.model.findings import Locator, plain_locator, pointer_join
from cbaudit.results.coordinates import COMPARISON_GROUPS, differences, flatten, is_unreported

CONTRACT_FIELDS: tuple[tuple[str, str], ...] = (
    ("G", "granularity"),
    ("I", "protected_identity"),
    ("S", "visible_state"),
    ("D", "decision_output"),
    ("U", "unknown_future"),
    ("O", "objective"),
    ("M", "metric"),
    ("A", "assumptions"),
    ("F", "foreign_owners"),
)
EXPECTED_METHODS = frozenset(
    {"orca", "sarathi", "sarathi-serve", "fastserve", "vtc", "preble", "layerkv", "vllm-v0.23.0"}
)
RESULT_COORDINATES = (
    "model",
    "hardware_parallelism",
    "workload",
    "baseline",
    "metric",
    "slo",
    "load",
    "evidence_class",
)
_HIDDEN = re.compile(
    r"realized|realised|hidden.truth|fixture_only_hidden_truth|future arrival", re.I
)
_SELF_OWNERS = frozenset({"m5.2", "policy", "iteration policy", "the policy"})


def _is_self_owner(owner: str) -> bool:
    low = owner.strip().lower()
    return low in _SELF_OWNERS or "scheduler" in low


@dataclass(frozen=True)
class RegistryAudit:
    """Findings plus the summary the gate compares with its expected file."""

    findings: tuple[Finding, ...]
    summary: Mapping[str, Any]


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, dict)):
        return len(value) == 0
    return False


def _audit_contracts(data: Mapping[str, Any], sink: FindingSink) -> dict[str, Any]:
    sources = _map(data.get("sources"))
    contracts = _list(data.get("contracts"))
    seen: set[str] = set()
    theorems: dict[str, str] = {}
    for i, c in enumerate(contracts):
        ptr = pointer_join("/contracts", i)
        if not isinstance(c, Mapping):
            continue
        cid = str(c.get("id"))
        if cid in seen:
            sink.add("RESULTS.REGISTRY.DUPLICATE_ID", f"contract id {cid!r} appears twice", ptr)
        seen.add(cid)
        _check_contract_fields(c, cid, ptr, sources, sink)
        _check_contract_claims(c, cid, ptr, sink)
        theorem = _check_theorem(c.get("theorem"), cid, ptr, sink)
        if theorem is not None:
            theorems[theorem[0]] = theorem[1]
    if seen != EXPECTED_METHODS:
        missing = sorted(EXPECTED_METHODS - seen)
        extra = sorted(seen - EXPECTED_METHODS)
        sink.add(
            "RESULTS.CONTRACT.SET_MISMATCH",
            f"contracts must be the article's eight methods; missing {missing}, extra {extra}",
            "/contracts",
        )
    _check_compositions(_list(data.get("compositions")), seen, sink)
    return {
        "contracts": len(contracts),
        "contract_ids": sorted(seen),
        "theorems": dict(sorted(theorems.items())),
        "compositions": len(_list(data.get("compositions"))),
    }


def _check_contract_fields(
    c: Mapping[str, Any], cid: str, ptr: str, sources: Mapping[str, Any], sink: FindingSink
) -> None:
    """The nine K fields, the non-claims, the metric's name and denominator, and a source
    version that matches the registry's source."""
    for letter, name in (*CONTRACT_FIELDS, ("-", "non_claims")):
        if _empty(c.get(name)):
            sink.add(
                "RESULTS.CONTRACT.FIELD_MISSING",
                f"contract {cid}: field {name} ({letter}) is missing or empty",
                pointer_join(ptr, name),
            )
    metric = c.get("metric")
    if isinstance(metric, Mapping):
        for part in ("name", "denominator"):
            if _empty(metric.get(part)):
                sink.add(
                    "RESULTS.CONTRACT.FIELD_MISSING",
                    f"contract {cid}: metric {part} is missing",
                    pointer_join(ptr, "metric", part),
                )
    src = _map(c.get("source"))
    if _empty(src.get("version")):
        sink.add(
            "RESULTS.CONTRACT.FIELD_MISSING",
            f"contract {cid}: source version is missing",
            pointer_join(ptr, "source", "version"),
        )
    else:
        _check_source(src, sources, cid, pointer_join(ptr, "source"), sink)


def _check_contract_claims(c: Mapping[str, Any], cid: str, ptr: str, sink: FindingSink) -> None:
    """A paper contract stays source-reported, shows no hidden truth as online state, and
    leaves every foreign fact with its foreign owner."""
    if c.get("evidence_class") != "source_reported" or c.get("locally_reproduced") is True:
        sink.add(
            "RESULTS.EVIDENCE.OVERCLAIM",
            f"contract {cid}: a paper contract is source-reported and not reproduced here"
            f" (evidence_class={c.get('evidence_class')!r},"
            f" locally_reproduced={c.get('locally_reproduced')!r})",
            pointer_join(ptr, "evidence_class"),
        )
    for j, item in enumerate(_list(c.get("visible_state"))):
        if isinstance(item, str) and _HIDDEN.search(item):
            sink.add(
                "RESULTS.HIDDEN_TRUTH.LEAK",
                f"contract {cid}: online-visible state names hidden truth: {item!r}",
                pointer_join(ptr, "visible_state", j),
            )
    for j, fo in enumerate(_list(c.get("foreign_owners"))):
        owner = fo.get("owner") if isinstance(fo, Mapping) else None
        if isinstance(owner, str) and _is_self_owner(owner):
            sink.add(
                "RESULTS.OWNER.COLLAPSE",
                f"contract {cid}: foreign fact {fo.get('fact')!r} is owned by {owner!r};"
                " the scheduler cannot own or repair a foreign fact",
                pointer_join(ptr, "foreign_owners", j, "owner"),
            )


def _check_theorem(thm: Any, cid: str, ptr: str, sink: FindingSink) -> tuple[str, str] | None:
    """A contract's theorem is proved by that contract and states its premises. Returns the
    theorem's (id, owner), or None when the contract carries none."""
    if not isinstance(thm, Mapping):
        return None
    tid = str(thm.get("id"))
    if thm.get("owner") != cid:
        sink.add(
            "RESULTS.THEOREM.TRANSFER",
            f"contract {cid} carries theorem {tid} proved by {thm.get('owner')!r}",
            pointer_join(ptr, "theorem", "owner"),
        )
    if _empty(thm.get("premises")):
        sink.add(
            "RESULTS.THEOREM.PREMISES_MISSING",
            f"theorem {tid} has no premises",
            pointer_join(ptr, "theorem", "premises"),
        )
    return tid, str(thm.get("owner"))


def _check_compositions(compositions: list[Any], contracts: set[str], sink: FindingSink) -> None:
    """A composition inherits no theorem, declares a new contract, and composes known ones."""
    for i, comp in enumerate(compositions):
        ptr = pointer_join("/compositions", i)
        if not isinstance(comp, Mapping):
            continue
        if comp.get("inherits_theorems"):
            sink.add(
                "RESULTS.THEOREM.TRANSFER",
                f"composition {comp.get('id')} inherits {comp.get('inherits_theorems')};"
                " a composed policy needs a new proof",
                pointer_join(ptr, "inherits_theorems"),
            )
        if comp.get("new_contract_required") is not True:
            sink.add(
                "RESULTS.THEOREM.TRANSFER",
                f"composition {comp.get('id')} must declare a new contract"
                " (composition is not a sum)",
                pointer_join(ptr, "new_contract_required"),
            )
        for j, part in enumerate(_list(comp.get("components"))):
            if part not in contracts:
                sink.add(
                    "RESULTS.RESULT.UNKNOWN_METHOD",
                    f"composition {comp.get('id')} names unknown contract {part!r}",
                    pointer_join(ptr, "components", j),
                )


def _check_source(
    src: Mapping[str, Any], sources: Mapping[str, Any], who: str, ptr: str, sink: FindingSink
) -> None:
    sid = src.get("id")
    known = sources.get(sid) if isinstance(sid, str) else None
    if not isinstance(known, Mapping):
        sink.add("RESULTS.SOURCE.UNKNOWN", f"{who}: source {sid!r} is not in the registry", ptr)
        return
    if src.get("version") != known.get("version"):
        sink.add(
            "RESULTS.SOURCE.DRIFT",
            f"{who}: records source version {src.get('version')!r}, the source is"
            f" {known.get('version')!r}",
            pointer_join(ptr, "version"),
        )
    if "commit" in src and src.get("commit") != known.get("commit"):
        sink.add(
            "RESULTS.SOURCE.DRIFT",
            f"{who}: records commit {src.get('commit')!r},"
            f" the pinned commit is {known.get('commit')!r}",
            pointer_join(ptr, "commit"),
        )


def _audit_results(
    data: Mapping[str, Any], sources: Mapping[str, Any], methods: set[str], sink: FindingSink
) -> dict[str, Any]:
    results = _list(data.get("results"))
    seen: dict[str, dict[str, str | None]] = {}
    for i, r in enumerate(results):
        ptr = pointer_join("/results", i)
        if not isinstance(r, Mapping):
            continue
        rid = str(r.get("id"))
        if rid in seen:
            sink.add("RESULTS.REGISTRY.DUPLICATE_ID", f"result id {rid!r} appears twice", ptr)
        _check_result_fields(r, rid, ptr, sources, methods, sink)
        seen[rid] = _check_result_claims(r, rid, ptr, sink)
    _check_ranking_declarations(data, sink)
    pairs, pair_diffs = _comparable_pairs(seen)
    _check_comparison_claims(_list(data.get("comparison_claims")), seen, sink)
    return {
        "results": len(results),
        "result_ids": sorted(seen),
        "pairs_checked": len(seen) * (len(seen) - 1) // 2,
        "comparable_pairs": pairs,
        "pair_differences": pair_diffs,
        "generic_policy_ranking_allowed": data.get("generic_policy_ranking_allowed") is True,
        "ranking_produced": False,
    }


def _check_result_fields(
    r: Mapping[str, Any],
    rid: str,
    ptr: str,
    sources: Mapping[str, Any],
    methods: set[str],
    sink: FindingSink,
) -> None:
    """Every coordinate of R, the source's version and location, the reported value, a source
    version that matches the registry's source, and a method that has a contract."""
    coords = _map(r.get("coordinates"))
    for name in RESULT_COORDINATES:
        if _empty(coords.get(name)):
            sink.add(
                "RESULTS.RESULT.COORDINATE_MISSING",
                f"result {rid}: coordinate {name} is missing (write `unreported` if the source"
                " does not state it)",
                pointer_join(ptr, "coordinates", name),
            )
    src = _map(r.get("source"))
    for part, letter in (("version", "V"), ("location", "C_s")):
        if _empty(src.get(part)):
            sink.add(
                "RESULTS.RESULT.COORDINATE_MISSING",
                f"result {rid}: source {part} ({letter}) is missing",
                pointer_join(ptr, "source", part),
            )
    value = r.get("value")
    if not isinstance(value, Mapping) or _empty(value.get("text")):
        sink.add(
            "RESULTS.RESULT.COORDINATE_MISSING",
            f"result {rid}: reported value (Y) is missing",
            pointer_join(ptr, "value"),
        )
    if not _empty(src.get("version")):
        _check_source(src, sources, f"result {rid}", pointer_join(ptr, "source"), sink)
    if r.get("method") not in methods:
        sink.add(
            "RESULTS.RESULT.UNKNOWN_METHOD",
            f"result {rid}: method {r.get('method')!r} has no contract",
            pointer_join(ptr, "method"),
        )


def _check_result_claims(
    r: Mapping[str, Any], rid: str, ptr: str, sink: FindingSink
) -> dict[str, str | None]:
    """A paper number stays source-reported and unreproduced, and is called complete only when
    no coordinate is unreported. Returns its flat comparison coordinates."""
    coords = _map(r.get("coordinates"))
    if coords.get("evidence_class") not in (None, "source_reported"):
        sink.add(
            "RESULTS.EVIDENCE.OVERCLAIM",
            f"result {rid}: a paper number is source_reported, not"
            f" {coords.get('evidence_class')!r}",
            pointer_join(ptr, "coordinates", "evidence_class"),
        )
    if r.get("local_reproduction") is not False:
        sink.add(
            "RESULTS.EVIDENCE.OVERCLAIM",
            f"result {rid}: claims a local reproduction this repository does not contain",
            pointer_join(ptr, "local_reproduction"),
        )
    flat = flatten(coords)
    if r.get("coordinate_complete") is True:
        holes = [k for k, v in flat.items() if is_unreported(v)]
        if holes:
            sink.add(
                "RESULTS.RESULT.COORDINATE_INCOMPLETE",
                f"result {rid}: declared complete but {', '.join(holes)} unreported",
                pointer_join(ptr, "coordinate_complete"),
            )
    return flat


def _check_ranking_declarations(data: Mapping[str, Any], sink: FindingSink) -> None:
    """The registry keeps all eight comparison coordinates and declares no ranking."""
    declared = data.get("comparison_set")
    if not isinstance(declared, list) or set(declared) != set(COMPARISON_GROUPS):
        dropped = sorted(
            set(COMPARISON_GROUPS) - set(declared if isinstance(declared, list) else [])
        )
        sink.add(
            "RESULTS.COMPARISON_SET.WEAKENED",
            f"the comparison set must hold all eight coordinates; missing {dropped}",
            "/comparison_set",
        )
    if data.get("generic_policy_ranking_allowed") is not False:
        sink.add(
            "RESULTS.RANKING.UNIVERSAL",
            "generic_policy_ranking_allowed must be false: source-reported results do not rank"
            " policies",
            "/generic_policy_ranking_allowed",
        )
    if "ranking" in data:
        sink.add("RESULTS.RANKING.UNIVERSAL", "the registry declares a ranking", "/ranking")


def _comparable_pairs(
    seen: Mapping[str, Mapping[str, str | None]],
) -> tuple[list[list[str]], dict[str, list[str]]]:
    """The result pairs (by sorted id) whose coordinates all agree, and for every other pair
    the coordinates that differ."""
    pairs: list[list[str]] = []
    pair_diffs: dict[str, list[str]] = {}
    for a, b in combinations(sorted(seen), 2):
        diffs = differences(seen[a], seen[b])
        if diffs:
            pair_diffs[f"{a} | {b}"] = [d.coordinate for d in diffs]
        else:
            pairs.append([a, b])
    return pairs, pair_diffs


def _check_comparison_claims(
    claims: list[Any], seen: Mapping[str, Mapping[str, str | None]], sink: FindingSink
) -> None:
    """A comparison claim names two known results whose coordinates all agree."""
    for i, claim in enumerate(claims):
        if not isinstance(claim, Mapping):
            continue
        a, b = str(claim.get("a")), str(claim.get("b"))
        ptr = pointer_join("/comparison_claims", i)
        if a not in seen or b not in seen:
            sink.add(
                "RESULTS.RANKING.INCOMPARABLE", f"claim names unknown result {a!r} or {b!r}", ptr
            )
            continue
        diffs = differences(seen[a], seen[b])
        if diffs:
            sink.add(
                "RESULTS.RANKING.INCOMPARABLE",
                f"claim {claim.get('claim')!r} ranks {a} against {b}, which differ on "
                + ", ".join(f"{d.coordinate} ({d.a!r} vs {d.b!r})" for d in diffs),
                ptr,
            )


def audit_registries(
    contracts: Any,
    results: Any,
    *,
    contracts_file: str,
    results_file: str,
    locate_contracts: Locator | None = None,
    locate_results: Locator | None = None,
) -> RegistryAudit:
    """Schema and meaning of both registries, plus the pairwise comparability check.

    The meaning checks run after a schema failure too (they name what the schema cannot:
    `RESULTS.CONTRACT.FIELD_MISSING` beside `SCHEMA.REQUIRED`), but they read the registries'
    shape: where a shape the schema refused stops them (a list where a name belongs), the
    schema findings are the whole audit and the summary is `{"valid": false}`.
    """
    findings: list[Finding] = []
    findings += validate(contracts, "paper-contracts", file=contracts_file, locate=locate_contracts)
    findings += validate(
        results, "source-reported-results", file=results_file, locate=locate_results
    )
    c_sink = FindingSink(locate_contracts or plain_locator(contracts_file))
    r_sink = FindingSink(locate_results or plain_locator(results_file))
    c_data = _map(contracts)
    r_data = _map(results)
    try:
        c_summary = _audit_contracts(c_data, c_sink)
        sources = _map(c_data.get("sources"))
        r_summary = _audit_results(r_data, sources, set(c_summary["contract_ids"]), r_sink)
    except (TypeError, KeyError, AttributeError, ValueError):
        if not findings:
            raise  # a registry its schema accepts must never stop the audit: a defect here
        return RegistryAudit(tuple(findings), {"valid": False})
    findings += c_sink.findings + r_sink.findings
    summary = {**c_summary, **r_summary}
    return RegistryAudit(tuple(findings), summary)
