"""Negative fixtures: one mutation of a valid Loop 11 input, one declared finding code.

A case is a JSON Patch (add / remove / replace) applied to one base input (the contract
registry, the result registry, the sensitivity fixture or the failure-closure registry). The
case is *rejected as declared* when the mutant produces a finding with the declared code at a
location where the unmutated base produced none; anything else is a surviving mutant.

Codes: RESULTS.NEGATIVE.NOT_REJECTED (a surviving mutant), RESULTS.NEGATIVE.PATCH_INVALID (the
patch does not apply), RESULTS.NEGATIVE.TOO_FEW (fewer cases than required),
RESULTS.NEGATIVE.CATEGORY_MISSING (a category of article 0x0E has no case),
RESULTS.REGISTRY.DUPLICATE_ID.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cbaudit.io.schemas import validate
from cbaudit.model import Finding, Location
from cbaudit.model.findings import pointer_join

Locator = Callable[[str], Location]
Runner = Callable[[Any], Iterable[Finding]]

CATEGORIES = (
    "source drift",
    "missing contract fields",
    "local-measurement overclaim",
    "universal ranking",
    "theorem transfer",
    "owner collapse",
    "hidden-truth leakage",
    "compound sensitivity",
    "expectation drift",
    "unknown failure evidence",
)


class PatchError(ValueError):
    """A patch operation that cannot be applied."""


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"pointer {pointer!r} must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _step(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"no member {token!r}")
        return node[token]
    if isinstance(node, list):
        if not token.isdigit() or int(token) >= len(node):
            raise PatchError(f"bad array index {token!r}")
        return node[int(token)]
    raise PatchError(f"cannot descend into a scalar at {token!r}")


def apply_patch(doc: Any, ops: Iterable[Mapping[str, Any]]) -> Any:
    """A copy of `doc` with the RFC 6902 add/remove/replace operations applied."""
    out = copy.deepcopy(doc)
    for op in ops:
        tokens = _tokens(str(op["path"]))
        if not tokens:
            if op["op"] == "remove":
                raise PatchError("cannot remove the whole document")
            out = copy.deepcopy(op.get("value"))
            continue
        parent = out
        for token in tokens[:-1]:
            parent = _step(parent, token)
        last = tokens[-1]
        kind = op["op"]
        if isinstance(parent, dict):
            if kind in ("remove", "replace") and last not in parent:
                raise PatchError(f"no member {last!r} to {kind}")
            if kind == "remove":
                del parent[last]
            else:
                parent[last] = copy.deepcopy(op.get("value"))
        elif isinstance(parent, list):
            if kind == "add" and last == "-":
                parent.append(copy.deepcopy(op.get("value")))
                continue
            if not last.isdigit():
                raise PatchError(f"bad array index {last!r}")
            idx = int(last)
            limit = len(parent) + (1 if kind == "add" else 0)
            if idx >= limit:
                raise PatchError(f"array index {idx} out of range")
            if kind == "add":
                parent.insert(idx, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                del parent[idx]
            else:
                parent[idx] = copy.deepcopy(op.get("value"))
        else:
            raise PatchError("cannot patch inside a scalar")
    return out


@dataclass(frozen=True)
class Base:
    """A valid base input and the audit that judges it."""

    data: Any
    run: Runner


@dataclass(frozen=True)
class NegativeRun:
    findings: tuple[Finding, ...]
    summary: Mapping[str, Any]


def _keys(findings: Iterable[Finding]) -> set[tuple[str, str | None]]:
    return {(f.code, f.location.pointer) for f in findings}


def run_negatives(
    data: Any,
    bases: Mapping[str, Base],
    *,
    file: str,
    locate: Locator | None = None,
    min_cases: int = 28,
) -> NegativeRun:
    """Apply every case to its base and check that its declared code appears."""
    findings = validate(data, "negative-fixtures", file=file, locate=locate)
    if findings:
        return NegativeRun(tuple(findings), {"valid": False})

    def add(code: str, message: str, pointer: str) -> None:
        loc = locate(pointer) if locate else Location(file=file, pointer=pointer)
        findings.append(Finding(code, message, location=loc))

    base_keys = {name: _keys(base.run(base.data)) for name, base in bases.items()}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, case in enumerate(data["cases"]):
        ptr = pointer_join("/cases", i)
        cid = str(case["id"])
        if cid in seen:
            add("RESULTS.REGISTRY.DUPLICATE_ID", f"negative case {cid!r} appears twice", ptr)
        seen.add(cid)
        target = str(case["target"])
        if target not in bases:
            add(
                "RESULTS.NEGATIVE.PATCH_INVALID",
                f"case {cid}: no base input for {target!r}",
                pointer_join(ptr, "target"),
            )
            continue
        try:
            mutant = apply_patch(bases[target].data, case["patch"])
        except PatchError as err:
            add("RESULTS.NEGATIVE.PATCH_INVALID", f"case {cid}: {err}", pointer_join(ptr, "patch"))
            continue
        new = _keys(bases[target].run(mutant)) - base_keys[target]
        produced = sorted({code for code, _ in new})
        killed = case["expect"] in produced
        if not killed:
            add(
                "RESULTS.NEGATIVE.NOT_REJECTED",
                f"case {cid}: expected {case['expect']},"
                f" the mutant produced {produced or 'nothing new'}",
                pointer_join(ptr, "expect"),
            )
        rows.append(
            {
                "id": cid,
                "category": case["category"],
                "target": target,
                "expect": case["expect"],
                "rejected_as_declared": killed,
                "new_codes": produced,
            }
        )
    if len(data["cases"]) < min_cases:
        add(
            "RESULTS.NEGATIVE.TOO_FEW",
            f"{len(data['cases'])} cases; at least {min_cases} required",
            "/cases",
        )
    counts = {c: sum(1 for case in data["cases"] if case["category"] == c) for c in CATEGORIES}
    for category, n in counts.items():
        if n == 0:
            add("RESULTS.NEGATIVE.CATEGORY_MISSING", f"no negative case for {category!r}", "/cases")
    summary = {
        "valid": True,
        "cases": len(data["cases"]),
        "rejected_as_declared": sum(1 for r in rows if r["rejected_as_declared"]),
        "categories": counts,
        "results": rows,
    }
    return NegativeRun(tuple(findings), summary)
