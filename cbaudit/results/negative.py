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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.schemas import validate
from cbaudit.model import Finding, Location
from cbaudit.model.findings import Locator, pointer_join

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
