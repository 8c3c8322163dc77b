"""Failure closure: each failure class bound to the artifact and rejection case that closes it.

Prior loops' fixtures and reports are consumed by identity, never re-implemented: a binding is
a path plus the sha256 of its bytes, and a class names the rejection case (by id, inside a bound
file) or the Loop 11 rule (a finding code plus the negative case that triggers it) that closes
it. A changed artifact is a finding, as is evidence nobody can find.

Codes: RESULTS.CLOSURE.CLASS_SET (not exactly the declared classes, or duplicates),
RESULTS.CLOSURE.UNCLOSED (a class with no closing case or rule),
RESULTS.CLOSURE.UNKNOWN_EVIDENCE (an unknown binding, rule, case id, or a rule whose case does not
declare the rule's code), RESULTS.CLOSURE.ARTIFACT_MISSING (a bound file does not exist),
RESULTS.CLOSURE.PENDING (a binding without a hash yet, or a case id still `pending:...`),
RESULTS.CLOSURE.HASH_DRIFT (bytes changed).

With `update`, the hashes of bound files that exist are recomputed and returned as a new
document for the caller to write; missing files and unknown evidence still fail.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbaudit.io.loader import load_document
from cbaudit.io.schemas import validate
from cbaudit.model import CbauditError, Finding, FindingSink
from cbaudit.model.findings import Locator, plain_locator, pointer_join

Resolver = Callable[[str], Path]

EXPECTED_CLASSES = 15
CASE_KEYS = ("id", "name", "case", "case_id")
PENDING_PREFIX = "pending:"


@dataclass(frozen=True)
class ClosureAudit:
    """Findings, the JSON-ready summary, and the refreshed document (when updating)."""

    findings: tuple[Finding, ...]
    summary: Mapping[str, Any]
    updated: Any | None = None


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _walk(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def find_case(data: Any, case: str) -> Mapping[str, Any] | None:
    """The mapping in `data` whose id (or name/case/case_id) is `case`."""
    for node in _walk(data):
        if any(node.get(k) == case for k in CASE_KEYS):
            return node
    return None


@dataclass(frozen=True)
class _Evidence:
    """What the bindings gave: each binding by id, the documents that loaded, the pending ids."""

    bindings: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    loaded: dict[str, Any] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)


def audit_closure(
    data: Any,
    *,
    file: str,
    resolve: Resolver,
    locate: Locator | None = None,
    update: bool = False,
    expected_classes: int = EXPECTED_CLASSES,
) -> ClosureAudit:
    """Check every binding, rule and class; recompute hashes when `update`."""
    findings = validate(data, "failure-closure", file=file, locate=locate)
    if findings:
        return ClosureAudit(tuple(findings), {"valid": False})
    sink = FindingSink(locate or plain_locator(file))
    doc = copy.deepcopy(data) if update else data
    evidence = _Evidence()
    for i, b in enumerate(doc["bindings"]):
        _check_binding(b, pointer_join("/bindings", i), resolve, update, evidence, sink)
    rules = _check_rules(doc["rules"], evidence, sink)
    rows, prior_refs = _check_classes(doc["classes"], evidence, rules, expected_classes, sink)
    summary = {
        "valid": True,
        "classes": len(doc["classes"]),
        "bindings": len(doc["bindings"]),
        "prior_rejection_references": prior_refs,
        "loop11_rules": len(doc["rules"]),
        "pending_bindings": sorted(evidence.pending),
        "closure": rows,
    }
    return ClosureAudit(tuple(sink.findings), summary, doc if update else None)


def _check_binding(
    b: Any, ptr: str, resolve: Resolver, update: bool, evidence: _Evidence, sink: FindingSink
) -> None:
    """Record one binding; its file must exist, keep its bound hash (take the new one when
    `update`) and load."""
    bid = str(b["id"])
    if bid in evidence.bindings:
        sink.add("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", f"binding id {bid!r} appears twice", ptr)
    evidence.bindings[bid] = b
    path = _bound_file(b, bid, ptr, resolve, evidence, sink)
    if path is None:
        return
    _check_hash(b, bid, ptr, sha256_file(path), update, evidence, sink)
    try:
        evidence.loaded[bid] = load_document(path, expect=None, display=str(b["path"])).data
    except CbauditError as err:
        sink.add(
            "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
            f"binding {bid}: unreadable: {err}",
            pointer_join(ptr, "path"),
        )


def _bound_file(
    b: Mapping[str, Any],
    bid: str,
    ptr: str,
    resolve: Resolver,
    evidence: _Evidence,
    sink: FindingSink,
) -> Path | None:
    """The file a binding names, or None (with a finding) when it cannot be resolved or does
    not exist (yet: the binding is pending)."""
    try:
        path = resolve(str(b["path"]))
    except CbauditError as err:
        sink.add(
            "RESULTS.CLOSURE.UNKNOWN_EVIDENCE", f"binding {bid}: {err}", pointer_join(ptr, "path")
        )
        return None
    if not path.is_file():
        evidence.pending.append(bid)
        sink.add(
            "RESULTS.CLOSURE.ARTIFACT_MISSING",
            f"binding {bid}: {b['path']} does not exist (yet)",
            pointer_join(ptr, "path"),
        )
        return None
    return path


def _check_hash(
    b: Any, bid: str, ptr: str, actual: str, update: bool, evidence: _Evidence, sink: FindingSink
) -> None:
    """The bound sha256 is the file's (`update` writes it into the binding instead)."""
    if update:
        b["sha256"] = actual
    elif b.get("sha256") is None:
        evidence.pending.append(bid)
        sink.add(
            "RESULTS.CLOSURE.PENDING",
            f"binding {bid}: {b['path']} has no sha256 yet (refresh with --update)",
            pointer_join(ptr, "sha256"),
        )
    elif b["sha256"] != actual:
        sink.add(
            "RESULTS.CLOSURE.HASH_DRIFT",
            f"binding {bid}: {b['path']} changed: bound {b['sha256']}, now {actual}",
            pointer_join(ptr, "sha256"),
        )


def _check_case(
    evidence: _Evidence, bid: str, case: str, ptr: str, sink: FindingSink, code: str | None = None
) -> None:
    """The rejection case is named, inside a bound file that loaded, and (for a rule) declares
    the rule's finding code."""
    if case.startswith(PENDING_PREFIX):
        sink.add(
            "RESULTS.CLOSURE.PENDING",
            f"rejection case not yet named ({case}); bind it when its loop lands",
            pointer_join(ptr, "case"),
        )
        return
    if bid not in evidence.bindings:
        sink.add(
            "RESULTS.CLOSURE.UNKNOWN_EVIDENCE", f"no binding {bid!r}", pointer_join(ptr, "binding")
        )
        return
    if bid not in evidence.loaded:
        return  # already reported as missing or unreadable
    node = find_case(evidence.loaded[bid], case)
    if node is None:
        sink.add(
            "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
            f"rejection case {case!r} is not in {evidence.bindings[bid]['path']}",
            pointer_join(ptr, "case"),
        )
        return
    declared = node.get("expect") or node.get("expect_code") or node.get("code")
    if code is not None and declared != code:
        sink.add(
            "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
            f"case {case!r} declares {declared!r}, the rule closes with {code!r}",
            pointer_join(ptr, "case"),
        )


def _check_rules(
    rules: list[Any], evidence: _Evidence, sink: FindingSink
) -> dict[str, Mapping[str, Any]]:
    """The Loop 11 rules by id, each checked against the negative case that triggers it."""
    by_id: dict[str, Mapping[str, Any]] = {}
    for i, rule in enumerate(rules):
        by_id[str(rule["id"])] = rule
        _check_case(
            evidence,
            str(rule["binding"]),
            str(rule["case"]),
            pointer_join("/rules", i),
            sink,
            str(rule["code"]),
        )
    return by_id


def _check_classes(
    classes: list[Any],
    evidence: _Evidence,
    rules: Mapping[str, Any],
    expected: int,
    sink: FindingSink,
) -> tuple[list[dict[str, Any]], int]:
    """Every class once, each closed; exactly `expected` of them. Returns the closure rows and
    the number of prior rejection references."""
    ids: set[str] = set()
    prior_refs = 0
    rows: list[dict[str, Any]] = []
    for i, cls in enumerate(classes):
        ptr = pointer_join("/classes", i)
        cid = str(cls["id"])
        if cid in ids:
            sink.add("RESULTS.CLOSURE.CLASS_SET", f"class id {cid!r} appears twice", ptr)
        ids.add(cid)
        prior_refs += len(cls.get("prior", []))
        rows.append(_check_class(cls, cid, ptr, evidence, rules, sink))
    if len(ids) != expected or len(classes) != expected:
        sink.add(
            "RESULTS.CLOSURE.CLASS_SET",
            f"expected {expected} failure classes, found {len(classes)}",
            "/classes",
        )
    return rows, prior_refs


def _check_class(
    cls: Mapping[str, Any],
    cid: str,
    ptr: str,
    evidence: _Evidence,
    rules: Mapping[str, Any],
    sink: FindingSink,
) -> dict[str, Any]:
    """A class is closed by prior rejection cases or rules that exist, names only bound
    artifacts, and becomes one closure row."""
    prior = cls.get("prior", [])
    used_rules = cls.get("rules", [])
    if not prior and not used_rules:
        sink.add("RESULTS.CLOSURE.UNCLOSED", f"class {cid} has no closing case or rule", ptr)
    for j, ref in enumerate(prior):
        _check_case(
            evidence, str(ref["binding"]), str(ref["case"]), pointer_join(ptr, "prior", j), sink
        )
    for j, bid in enumerate(cls.get("artifacts", [])):
        if bid not in evidence.bindings:
            sink.add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"class {cid}: no binding {bid!r}",
                pointer_join(ptr, "artifacts", j),
            )
    for j, rid in enumerate(used_rules):
        if rid not in rules:
            sink.add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"class {cid}: no rule {rid!r}",
                pointer_join(ptr, "rules", j),
            )
    return {
        "id": cid,
        "name": cls["name"],
        "owner": cls["owner"],
        "closed_by": [f"{r['binding']}:{r['case']}" for r in prior] + list(used_rules),
        "artifacts": list(cls.get("artifacts", [])),
    }
