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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.loader import load_document
from cbaudit.io.schemas import validate
from cbaudit.model import CbauditError, Finding, Location
from cbaudit.model.findings import Locator, pointer_join

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

    def add(code: str, message: str, pointer: str) -> None:
        loc = locate(pointer) if locate else Location(file=file, pointer=pointer)
        findings.append(Finding(code, message, location=loc))

    doc = copy.deepcopy(data) if update else data
    bindings: dict[str, Mapping[str, Any]] = {}
    loaded: dict[str, Any] = {}
    pending: list[str] = []
    for i, b in enumerate(doc["bindings"]):
        ptr = pointer_join("/bindings", i)
        bid = str(b["id"])
        if bid in bindings:
            add("RESULTS.CLOSURE.UNKNOWN_EVIDENCE", f"binding id {bid!r} appears twice", ptr)
        bindings[bid] = b
        try:
            path = resolve(str(b["path"]))
        except CbauditError as err:
            add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"binding {bid}: {err}",
                pointer_join(ptr, "path"),
            )
            continue
        if not path.is_file():
            pending.append(bid)
            add(
                "RESULTS.CLOSURE.ARTIFACT_MISSING",
                f"binding {bid}: {b['path']} does not exist (yet)",
                pointer_join(ptr, "path"),
            )
            continue
        actual = sha256_file(path)
        if update:
            b["sha256"] = actual
        elif b.get("sha256") is None:
            pending.append(bid)
            add(
                "RESULTS.CLOSURE.PENDING",
                f"binding {bid}: {b['path']} has no sha256 yet (refresh with --update)",
                pointer_join(ptr, "sha256"),
            )
        elif b["sha256"] != actual:
            add(
                "RESULTS.CLOSURE.HASH_DRIFT",
                f"binding {bid}: {b['path']} changed: bound {b['sha256']}, now {actual}",
                pointer_join(ptr, "sha256"),
            )
        try:
            loaded[bid] = load_document(path, expect=None, display=str(b["path"])).data
        except CbauditError as err:
            add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"binding {bid}: unreadable: {err}",
                pointer_join(ptr, "path"),
            )

    def check_case(bid: str, case: str, ptr: str, code: str | None = None) -> bool:
        if case.startswith(PENDING_PREFIX):
            add(
                "RESULTS.CLOSURE.PENDING",
                f"rejection case not yet named ({case}); bind it when its loop lands",
                pointer_join(ptr, "case"),
            )
            return False
        if bid not in bindings:
            add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"no binding {bid!r}",
                pointer_join(ptr, "binding"),
            )
            return False
        if bid not in loaded:
            return False  # already reported as missing or unreadable
        node = find_case(loaded[bid], case)
        if node is None:
            add(
                "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                f"rejection case {case!r} is not in {bindings[bid]['path']}",
                pointer_join(ptr, "case"),
            )
            return False
        if code is not None:
            declared = node.get("expect") or node.get("expect_code") or node.get("code")
            if declared != code:
                add(
                    "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                    f"case {case!r} declares {declared!r}, the rule closes with {code!r}",
                    pointer_join(ptr, "case"),
                )
                return False
        return True

    rules: dict[str, Mapping[str, Any]] = {}
    for i, rule in enumerate(doc["rules"]):
        ptr = pointer_join("/rules", i)
        rules[str(rule["id"])] = rule
        check_case(str(rule["binding"]), str(rule["case"]), ptr, str(rule["code"]))
    ids: set[str] = set()
    prior_refs = 0
    rows: list[dict[str, Any]] = []
    for i, cls in enumerate(doc["classes"]):
        ptr = pointer_join("/classes", i)
        cid = str(cls["id"])
        if cid in ids:
            add("RESULTS.CLOSURE.CLASS_SET", f"class id {cid!r} appears twice", ptr)
        ids.add(cid)
        prior = cls.get("prior", [])
        used_rules = cls.get("rules", [])
        if not prior and not used_rules:
            add("RESULTS.CLOSURE.UNCLOSED", f"class {cid} has no closing case or rule", ptr)
        for j, ref in enumerate(prior):
            prior_refs += 1
            check_case(str(ref["binding"]), str(ref["case"]), pointer_join(ptr, "prior", j))
        for j, bid in enumerate(cls.get("artifacts", [])):
            if bid not in bindings:
                add(
                    "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                    f"class {cid}: no binding {bid!r}",
                    pointer_join(ptr, "artifacts", j),
                )
        for j, rid in enumerate(used_rules):
            if rid not in rules:
                add(
                    "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
                    f"class {cid}: no rule {rid!r}",
                    pointer_join(ptr, "rules", j),
                )
        rows.append(
            {
                "id": cid,
                "name": cls["name"],
                "owner": cls["owner"],
                "closed_by": [f"{r['binding']}:{r['case']}" for r in prior] + list(used_rules),
                "artifacts": list(cls.get("artifacts", [])),
            }
        )
    if len(ids) != expected_classes or len(doc["classes"]) != expected_classes:
        add(
            "RESULTS.CLOSURE.CLASS_SET",
            f"expected {expected_classes} failure classes, found {len(doc['classes'])}",
            "/classes",
        )
    summary = {
        "valid": True,
        "classes": len(doc["classes"]),
        "bindings": len(doc["bindings"]),
        "prior_rejection_references": prior_refs,
        "loop11_rules": len(doc["rules"]),
        "pending_bindings": sorted(pending),
        "closure": rows,
    }
    return ClosureAudit(tuple(findings), summary, doc if update else None)
