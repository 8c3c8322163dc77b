"""The negative-fixture catalog: the article's floors per loop, and Loop 2's class list.

The article states how many negative fixtures each later loop carries (0x07: nineteen;
0x0C: twenty; 0x0D: twenty; 0x0E: twenty-eight) and, for Loop 2 (0x01A), the classes its
negatives must cover. `floor_results` counts what a bundle declares and fails a loop that is
below its floor or misses a class; whether each declared negative is *killed for its declared
reason* is the job of the check that declares it (the gate runs it; `cbaudit mutate` runs it
too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from cbaudit.model import CheckResult, EvidenceClass, Finding, Location
from cbaudit.mutate.bundle import DeclaredNegative

CLASSES = "classes"

#: Loop label -> minimum number of declared negatives, or CLASSES (every Loop 2 class).
ARTICLE_FLOORS: Mapping[str, int | str] = MappingProxyType(
    {"2": CLASSES, "7": 19, "9": 20, "10": 20, "11": 28}
)

#: Article 0x01A's negative list, one entry per class, with the codes that reject it.
LOOP2_CLASSES: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "interval before frontier": frozenset({"PLAN.INTERVAL.BEFORE_FRONTIER"}),
        "interval beyond prompt": frozenset({"PLAN.INTERVAL.BEYOND_PROMPT"}),
        "multi-row ordinary decode": frozenset({"PLAN.DECODE.MULTI_ROW"}),
        "duplicate request generation": frozenset({"PLAN.REQUEST.DUPLICATE"}),
        "stale request generation": frozenset({"PLAN.GENERATION.STALE", "RESULT.GENERATION.STALE"}),
        "stale M5.1 snapshot": frozenset({"PLAN.SNAPSHOT.STALE", "RESULT.SNAPSHOT.STALE"}),
        "stale scheduler-state version": frozenset(
            {"PLAN.STATE_VERSION.MISMATCH", "RESULT.STATE_VERSION.MISMATCH"}
        ),
        "unready queue member": frozenset({"PLAN.REQUEST.NOT_READY"}),
        "terminal queue member": frozenset({"PLAN.REQUEST.TERMINAL"}),
        "duplicated queue member": frozenset({"STATE.REQUEST.DUPLICATE"}),
        "token budget": frozenset({"PLAN.BUDGET.TOKEN_EXCEEDED"}),
        "sequence budget": frozenset({"PLAN.BUDGET.SEQUENCE_EXCEEDED"}),
        "ledger drift": frozenset(
            {
                "PLAN.LEDGER.TOKENS_DRIFT",
                "PLAN.LEDGER.SEQUENCES_DRIFT",
                "PLAN.LEDGER.BUDGET_MISMATCH",
            }
        ),
        "forged phase": frozenset({"PLAN.PHASE.FORGED"}),
        "forged position trace": frozenset({"PLAN.POSITIONS.FORGED"}),
        "forged policy version": frozenset({"PLAN.POLICY.VERSION_MISMATCH"}),
        "forged tie-break": frozenset({"PLAN.TIE_BREAK.FORGED", "PLAN.TIE_BREAK.ORDER"}),
        "realized-output leak": frozenset({"PLAN.LEAK.HIDDEN_TRUTH"}),
        "physical-block leak": frozenset({"PLAN.LEAK.PHYSICAL_BLOCK"}),
        "unplanned completion": frozenset(
            {"RESULT.ITEM.UNPLANNED", "RESULT.INTERVAL.OUTSIDE_PLAN"}
        ),
        "wrong output clock": frozenset({"RESULT.OUTPUT_CLOCK.WRONG"}),
        "planned-service debit": frozenset({"RESULT.DEBIT.PLANNED_SERVICE"}),
    }
)


def parse_floors(raw: Any, *, file: str | None = None, pointer: str = "") -> dict[str, int | str]:
    """Floors from a spec: `{loop: int >= 0 | "classes"}`; None means the article's floors."""
    from cbaudit.model import InputError

    if raw is None:
        return dict(ARTICLE_FLOORS)
    if not isinstance(raw, Mapping) or not raw:
        raise InputError.at(
            "MUTATE.SPEC.INVALID", "`floors` must map loop -> count", file, pointer=pointer
        )
    out: dict[str, int | str] = {}
    for key, value in raw.items():
        ok = value == CLASSES and str(key) == "2"
        ok = ok or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)
        if not ok:
            raise InputError.at(
                "MUTATE.SPEC.INVALID",
                f"floor of loop {key}: expected a count >= 0 (or 'classes' for loop 2)",
                file,
                pointer=f"{pointer}/{key}",
            )
        out[str(key)] = value
    return out


def class_coverage(negatives: Sequence[DeclaredNegative]) -> dict[str, list[str]]:
    """Loop 2 class -> the declared negatives (check ids) that reject it."""
    out: dict[str, list[str]] = {name: [] for name in LOOP2_CLASSES}
    for neg in negatives:
        if neg.loop != "2":
            continue
        for name, codes in LOOP2_CLASSES.items():
            if codes & set(neg.codes):
                out[name].append(neg.check_id)
    return out


def floor_results(
    negatives: Sequence[DeclaredNegative],
    floors: Mapping[str, int | str],
    *,
    where: Location,
) -> list[CheckResult]:
    """One result per floored loop: declared count (and, for Loop 2, class coverage)."""
    results: list[CheckResult] = []
    for loop in sorted(floors, key=lambda k: (len(k), k)):
        floor = floors[loop]
        mine = [n for n in negatives if n.loop == loop]
        codes: dict[str, int] = {}
        for neg in mine:
            for code in neg.codes:
                codes[code] = codes.get(code, 0) + 1
        findings: list[Finding] = []
        metrics: dict[str, Any] = {
            "loop": loop,
            "declared": len(mine),
            "floor": floor,
            "codes": dict(sorted(codes.items())),
        }
        undeclared = [n.check_id for n in mine if not n.codes]
        if undeclared:
            findings.append(
                Finding(
                    "MUTATE.NEGATIVE.NO_CODE",
                    f"loop {loop}: negatives without a declared code: {', '.join(undeclared)}",
                    location=where,
                )
            )
        if floor == CLASSES:
            coverage = class_coverage(mine)
            missing = [name for name, ids in coverage.items() if not ids]
            metrics["classes"] = {name: len(ids) for name, ids in coverage.items()}
            metrics["classes_covered"] = len(coverage) - len(missing)
            metrics["classes_total"] = len(coverage)
            for name in missing:
                wanted = ", ".join(sorted(LOOP2_CLASSES[name]))
                findings.append(
                    Finding(
                        "MUTATE.FLOOR.CLASS_MISSING",
                        f"loop 2: no negative fixture for the class '{name}' ({wanted})",
                        location=where,
                    )
                )
            summary = f"{len(coverage) - len(missing)} of {len(coverage)} article classes covered"
        else:
            assert isinstance(floor, int)
            if len(mine) < floor:
                findings.append(
                    Finding(
                        "MUTATE.FLOOR.BELOW",
                        f"loop {loop}: {len(mine)} negative fixtures declared; the article"
                        f" states {floor}",
                        location=where,
                    )
                )
            summary = f"{len(mine)} declared, floor {floor}"
        results.append(
            CheckResult(
                check="negative-floor",
                subject=f"loop {loop}",
                findings=tuple(findings),
                metrics=metrics,
                evidence_class=EvidenceClass.DERIVED,
                reason=summary,
            )
        )
    return results


def declared_results(
    negatives: Sequence[DeclaredNegative],
    outcomes: Mapping[str, Sequence[CheckResult]],
    *,
    where: Location,
) -> list[CheckResult]:
    """Per loop: how many declared negatives were rejected for their declared reason.

    `outcomes` maps a check id to what running that check gave (a negative check passes
    exactly when its fixture is rejected with its declared code). A collection check (one
    check, many cases) counts all its cases as rejected only when it passes.
    """
    loops = sorted({n.loop or "?" for n in negatives}, key=lambda k: (len(k), k))
    results: list[CheckResult] = []
    for loop in loops:
        mine = [n for n in negatives if (n.loop or "?") == loop]
        findings: list[Finding] = []
        rejected = 0
        for neg in mine:
            ran = outcomes.get(neg.check_id)
            if ran is None:
                findings.append(
                    Finding(
                        "MUTATE.NEGATIVE.NOT_RUN",
                        f"{neg.check_id}: declared negative {neg.case} was not run",
                        location=where,
                    )
                )
                continue
            if all(r.outcome.value == "passed" for r in ran):
                rejected += 1
                continue
            detail = "; ".join(f.render() for r in ran for f in r.findings[:2])
            findings.append(
                Finding(
                    "MUTATE.NEGATIVE.SURVIVED",
                    f"{neg.check_id}: {neg.case} was not rejected with"
                    f" {', '.join(neg.codes) or 'its declared code'}: {detail}",
                    location=where,
                )
            )
        results.append(
            CheckResult(
                check="declared-negatives",
                subject=f"loop {loop}",
                findings=tuple(findings),
                metrics={"loop": loop, "declared": len(mine), "rejected_as_declared": rejected},
                evidence_class=EvidenceClass.DERIVED,
                reason=f"{rejected} of {len(mine)} negative fixtures rejected as declared",
            )
        )
    return results
