"""Check kind `calculator_claim`: a printed figure of an article, reproduced by a calculator.

A check names one calculator of `cbaudit.oracles.calculator_table` (`step-time`,
`preemption-cost`, `graph-padding`, `hybrid-pools`, `static-batching`), its inputs, and what
the article prints for some of its outputs. Each `expect` entry holds the figure as printed
(a string, so `2.50` keeps its last digit), its unit and the tolerance the claim states:

* `exact`: the figure is the exact value (`3.5` tokens, `256` graphs);
* `rounds`: the exact value rounds to the figure, within half a unit of its last digit;
* `one_unit`: within one unit of the last digit (a figure that was truncated, or whose
  rounding the article added up: 145 ms for 145.502 ms);
* `{abs: X}` or `{rel: X}`: an absolute tolerance in the figure's unit, or a relative one.

Labels (`binding_term: memory`, `cheaper: swap`) compare exactly. `formulas` binds the claim
to its formulas in a formula registry (`registry`, the file `formula_audit` checks against
the article): an id the registry lacks is `CALC.CLAIM.FORMULA.UNKNOWN`. A figure the
calculator contradicts is `CALC.CLAIM.MISMATCH`.

The check list that declares these checks is also a mutation fixture (target
`calculator-claims`): the operators of `cbaudit.mutate.ops_calc` shift printed figures, swap
units and outputs, and drop formula bindings, and the same evaluation must reject each mutant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, FixtureFile, Mutation, Target, Verdict
from cbaudit.checks.spec import CheckSpec, converted
from cbaudit.checks.targets import error_codes, no_locate
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location
from cbaudit.oracles.calculator_claims_names import NAME, TARGET
from cbaudit.oracles.calculator_table import (
    CALCULATORS,
    UNITS,
    Calculator,
    Dimension,
    Inputs,
    Value,
    load_input,
)

SCHEMA = "check-calculator-claim"

CODES = {
    "CALC.CLAIM.MISMATCH": "the calculator's value disagrees with the printed figure",
    "CALC.CLAIM.UNIT.MISMATCH": "the figure's unit is not of the output's dimension",
    "CALC.CLAIM.OUTPUT.UNKNOWN": "the calculator gives no such output",
    "CALC.CLAIM.OUTPUT.NOT_COMPUTED": "the output is not computed for these inputs",
    "CALC.CLAIM.CALCULATOR.UNKNOWN": "no calculator of that name",
    "CALC.CLAIM.INPUT.UNKNOWN": "the calculator takes no such input",
    "CALC.CLAIM.INPUT.MISSING": "a required input is missing",
    "CALC.CLAIM.INPUT.INVALID": "the calculator refuses an input's value",
    "CALC.CLAIM.PRINTED.INVALID": "a numeric figure that is not a plain decimal, or a label"
    " held to a numeric tolerance",
    "CALC.CLAIM.FORMULA.UNKNOWN": "a bound formula id is not in the registry",
}


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


@dataclass(frozen=True, kw_only=True)
class CalculatorClaimSpec(CheckSpec):
    """Fields of `calculator_claim` (schemas/check-calculator-claim.schema.json)."""

    calculator: str
    inputs: Mapping[str, Any]
    expect: tuple[Mapping[str, Any], ...] = field(metadata=converted(_tuple))
    formulas: tuple[str, ...] = field(metadata=converted(_tuple))
    registry: str


Locate = Callable[[str], Location]


# --------------------------------------------------------------------------- static checks


def _under(at: Locate, prefix: str) -> Locate:
    """A locator of the fields under `prefix`."""

    def locate(suffix: str) -> Location:
        return at(prefix + suffix)

    return locate


def static_findings(
    calculator: str, inputs: Mapping[str, Any], expect: Sequence[Mapping[str, Any]], at: Locate
) -> list[Finding]:
    """What can be refused before computing: the calculator, input names, outputs, units,
    printed figures. `at(suffix)` locates a field of the check (`/inputs/x`)."""
    calc = CALCULATORS.get(calculator)
    if calc is None:
        known = ", ".join(sorted(CALCULATORS))
        return [
            Finding(
                "CALC.CLAIM.CALCULATOR.UNKNOWN",
                f"no calculator {calculator!r} (known: {known})",
                location=at("/calculator"),
            )
        ]
    out: list[Finding] = []
    for name in inputs:
        if name not in calc.inputs:
            known = ", ".join(calc.inputs)
            out.append(
                Finding(
                    "CALC.CLAIM.INPUT.UNKNOWN",
                    f"{calculator} takes no input {name!r} (it takes: {known})",
                    location=at(f"/inputs/{name}"),
                )
            )
    for name, decl in calc.inputs.items():
        if decl.required and name not in inputs:
            out.append(
                Finding(
                    "CALC.CLAIM.INPUT.MISSING",
                    f"{calculator} needs input {name!r} ({decl.help})",
                    location=at("/inputs"),
                )
            )
    for k, exp in enumerate(expect):
        out.extend(_expect_findings(calc, exp, _under(at, f"/expect/{k}")))
    return out


def _expect_findings(calc: Calculator, exp: Mapping[str, Any], at: Locate) -> list[Finding]:
    output, unit = exp["output"], exp["unit"]
    if output not in calc.outputs:
        known = ", ".join(calc.outputs)
        return [
            Finding(
                "CALC.CLAIM.OUTPUT.UNKNOWN",
                f"{calc.name} gives no output {output!r} (it gives: {known})",
                location=at("/output"),
            )
        ]
    want = calc.dimension(output)
    if UNITS[unit].dimension is not want:
        units = ", ".join(u for u, d in UNITS.items() if d.dimension is want)
        return [
            Finding(
                "CALC.CLAIM.UNIT.MISMATCH",
                f"{output} is a {want.value}; {unit!r} is a {UNITS[unit].dimension.value}"
                f" (use one of: {units})",
                location=at("/unit"),
            )
        ]
    if want is Dimension.LABEL:
        if exp["tolerance"] != "exact":
            return [
                Finding(
                    "CALC.CLAIM.PRINTED.INVALID",
                    f"{output} is a label: it can only be held exactly (tolerance: exact)",
                    location=at("/tolerance"),
                )
            ]
        return []
    try:
        _figure(exp["printed"])
    except ValueError as err:
        return [Finding("CALC.CLAIM.PRINTED.INVALID", str(err), location=at("/printed"))]
    return []


_DECIMAL = re.compile(r"^-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?$")


def _figure(printed: str) -> tuple[Fraction, Fraction]:
    """A printed figure and one unit of its last digit: `2.50` -> (5/2, 1/100); commas
    only as thousands separators (`1,203`)."""
    text = printed.strip()
    if not _DECIMAL.match(text):
        raise ValueError(f"the figure {printed!r} is not a plain decimal as printed (56.5, 1,203)")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return Fraction(text.replace(",", "")), Fraction(1, 10**decimals)


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class Outcome:
    """What one claim's evaluation found, and the metrics its result carries."""

    findings: tuple[Finding, ...]
    metrics: Mapping[str, Any]
    reason: str


def compute(
    calculator: str, inputs: Mapping[str, Any], base_dir: Path | None, at: Locate
) -> dict[str, Value]:
    """The calculator's outputs for `inputs` (loaded); InputError located at the input that
    does not load or that the calculator refuses."""
    calc = CALCULATORS[calculator]
    loaded: dict[str, Any] = {}
    for name, value in inputs.items():
        try:
            loaded[name] = load_input(calc.inputs[name], value, base_dir)
        except ValueError as err:
            raise InputError(
                Finding(
                    "CALC.CLAIM.INPUT.INVALID", f"{name}: {err}", location=at(f"/inputs/{name}")
                )
            ) from None
    try:
        return calc.compute(Inputs(loaded))
    except ValueError as err:
        raise InputError(
            Finding(
                "CALC.CLAIM.INPUT.INVALID",
                f"{calculator} refuses these inputs: {err}",
                location=at("/inputs"),
            )
        ) from None


def _cached(
    calculator: str, inputs_json: str, base_dir: Path | None, at: Locate
) -> Mapping[str, Value]:
    """`compute`, remembered per process (a mutation campaign evaluates the same claims
    many times); a refusal is raised again, never remembered."""
    key = (calculator, inputs_json, base_dir)
    if key not in _OUTPUTS:
        if len(_OUTPUTS) > 4096:
            _OUTPUTS.clear()
        _OUTPUTS[key] = compute(calculator, json.loads(inputs_json), base_dir, at)
    return _OUTPUTS[key]


_OUTPUTS: dict[tuple[str, str, Path | None], Mapping[str, Value]] = {}


def _tolerance_text(tol: Any) -> str:
    if isinstance(tol, Mapping):
        ((name, value),) = tol.items()
        return f"{name} {value}"
    return str(tol)


def _agrees(value: Fraction, printed: str, tol: Any) -> bool:
    target, unit = _figure(printed)
    gap = abs(value - target)
    if tol == "exact":
        return gap == 0
    if tol == "rounds":
        return gap <= unit / 2
    if tol == "one_unit":
        return gap <= unit
    ((name, limit),) = tol.items()
    limit = Fraction(str(limit))
    return gap <= limit if name == "abs" else gap <= limit * abs(target)


def _judge(
    calc: Calculator, outputs: Mapping[str, Value], exp: Mapping[str, Any], at: Locate
) -> tuple[dict[str, Any], Finding | None]:
    """One expectation: its metrics row, and the finding when the value disagrees."""
    output, unit, printed, tol = exp["output"], exp["unit"], exp["printed"], exp["tolerance"]
    row: dict[str, Any] = {
        "output": output,
        "printed": printed,
        "unit": unit,
        "tolerance": _tolerance_text(tol),
    }
    if output not in outputs:
        return row, Finding(
            "CALC.CLAIM.OUTPUT.NOT_COMPUTED",
            f"{calc.name} does not compute {output} for these inputs"
            f" (it computed: {', '.join(outputs)})",
            location=at("/output"),
        )
    value = outputs[output]
    if isinstance(value, str):
        row["value"] = value
        ok = value == printed
    else:
        scaled = value / UNITS[unit].factor
        row["value"] = float(scaled)
        row["difference"] = float(scaled - Fraction(printed.replace(",", "")))
        ok = _agrees(scaled, printed, tol)
    row["agrees"] = ok
    if ok:
        return row, None
    return row, Finding(
        "CALC.CLAIM.MISMATCH",
        f"{output} = {_shown(row['value'])} {unit}, the article prints {printed} {unit}"
        f" (tolerance: {_tolerance_text(tol)})",
        location=at("/printed"),
    )


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else f"{value:.6g}"


def formula_findings(
    formulas: Sequence[str], registry: Mapping[str, str], at: Locate
) -> list[Finding]:
    """Every bound formula id is in the registry (id -> plain form)."""
    known = ", ".join(sorted(registry)) or "none"
    return [
        Finding(
            "CALC.CLAIM.FORMULA.UNKNOWN",
            f"formula {fid!r} is not in the registry (it has: {known})",
            location=at(f"/formulas/{k}"),
        )
        for k, fid in enumerate(formulas)
        if fid not in registry
    ]


@lru_cache(maxsize=8)
def _registry_formulas(path: Path) -> Mapping[str, str]:
    """A formula registry's ids and plain forms (loaded once per process)."""
    from cbaudit.formulas.registry import load_registry

    return {f.id: f.plain for f in load_registry(path).formulas}


def evaluate(
    calculator: str,
    inputs: Mapping[str, Any],
    expect: Sequence[Mapping[str, Any]],
    formulas: Sequence[str],
    registry: Mapping[str, str],
    base_dir: Path | None,
    at: Locate,
) -> Outcome:
    """Compute the claim's outputs and hold each printed figure to them."""
    calc = CALCULATORS[calculator]
    outputs = _cached(calculator, json.dumps(dict(inputs), sort_keys=True), base_dir, at)
    findings: list[Finding] = formula_findings(formulas, registry, at)
    rows: list[dict[str, Any]] = []
    for k, exp in enumerate(expect):
        row, finding = _judge(calc, outputs, exp, _under(at, f"/expect/{k}"))
        rows.append(row)
        if finding is not None:
            findings.append(finding)
    parts = [
        f"{r['output']} = {_shown(r['value'])} {r['unit']} ~ {r['printed']}"
        for r in rows
        if "value" in r
    ]
    metrics = {
        "calculator": calculator,
        "inputs": dict(inputs),
        "formulas": {fid: registry.get(fid) for fid in formulas},
        "expect": rows,
    }
    return Outcome(tuple(findings), metrics, "; ".join(parts))


# --------------------------------------------------------------------------- the kind


def _at(ctx: GateContext) -> Locate:
    return ctx.location


def validate(spec: CalculatorClaimSpec, ctx: GateContext) -> list[Finding]:
    """Refuse, when the bundle loads, what needs no computation."""
    return static_findings(spec.calculator, spec.inputs, spec.expect, _at(ctx))


def _registry(spec: CalculatorClaimSpec, ctx: GateContext) -> Mapping[str, str]:
    return _registry_formulas(ctx.resolve(spec.registry, field="registry"))


def run(spec: CalculatorClaimSpec, ctx: GateContext) -> list[CheckResult]:
    """One result: every printed figure of the claim against the calculator's value."""
    outcome = evaluate(
        spec.calculator,
        spec.inputs,
        spec.expect,
        spec.formulas,
        _registry(spec, ctx),
        ctx.base_dir,
        _at(ctx),
    )
    outputs = ", ".join(dict.fromkeys(e["output"] for e in spec.expect))
    return [
        CheckResult(
            check="calculator.claim",
            subject=f"{spec.calculator}: {outputs}",
            findings=outcome.findings,
            metrics=outcome.metrics,
            evidence_class=_class(spec.evidence_class),
            reason=outcome.reason,
        )
    ]


#: What arithmetic on declared inputs can be: a derivation, a model's prediction, or a
#: derivation from a figure the source reports. A measured or synthetic class is never
#: granted (the gate reports GATE.EVIDENCE.CLASS_MISMATCH: a report never upgrades a class).
CLASSES = frozenset({EvidenceClass.DERIVED, EvidenceClass.MODELED, EvidenceClass.SOURCE_REPORTED})


def _class(declared: EvidenceClass | None) -> EvidenceClass:
    return declared if declared in CLASSES else EvidenceClass.DERIVED


# --------------------------------------------------------------------------- mutation


def matches(data: Mapping[str, Any]) -> bool:
    """A check list (a `checks.yaml`) that declares calculator claims."""
    checks = data.get("checks")
    return isinstance(checks, list) and any(
        isinstance(c, Mapping) and c.get("kind") == NAME for c in checks
    )


def judge_list(data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
    """Every calculator claim of a check list, judged as the gate would (schema, static
    checks, formula binding, values); other kinds in the list are not this target's."""
    from cbaudit.checks.targets import schema_codes

    codes: set[str] = set()
    unusable = False
    for k, entry in enumerate(data.get("checks") or []):
        if not isinstance(entry, Mapping) or entry.get("kind") != NAME:
            continue
        schema = schema_codes(entry, SCHEMA)
        if schema:
            codes |= schema
            unusable = True
            continue
        at = _under(no_locate, f"/checks/{k}")
        found = static_findings(entry["calculator"], entry["inputs"], entry["expect"], at)
        if not found:
            found = _judge_entry(entry, directory, at)
        codes |= error_codes(found)
    return Verdict(frozenset(codes), unusable=unusable)


def _judge_entry(entry: Mapping[str, Any], directory: Path | None, at: Locate) -> list[Finding]:
    registry_ref = entry["registry"]
    if not isinstance(registry_ref, str) or directory is None:
        registry: Mapping[str, str] = {}
    else:
        try:
            registry = _registry_formulas((directory / registry_ref).resolve())
        except InputError as err:
            return list(err.findings)
    try:
        outcome = evaluate(
            entry["calculator"],
            entry["inputs"],
            entry["expect"],
            entry["formulas"],
            registry,
            directory,
            at,
        )
    except InputError as err:
        return list(err.findings)
    return list(outcome.findings)


def _fixtures(spec: CalculatorClaimSpec, ctx: GateContext) -> list[FixtureFile]:
    """The check list that declares this claim (once per list: the campaign deduplicates)."""
    path = ctx.base_dir / Path(ctx.manifest).name
    return [FixtureFile(path, ctx.manifest)]


CALCULATOR_CLAIMS_TARGET = Target(
    name=TARGET,
    loop="lecture",
    description="calculator claims: printed figures reproduced by the lecture's calculators",
    matches=matches,
    evaluate=judge_list,
)

CALCULATOR_CLAIM: CheckKind[CalculatorClaimSpec] = CheckKind(
    name=NAME,
    spec_type=CalculatorClaimSpec,
    run=run,
    validate=validate,
    summary="a printed figure reproduced by a named calculator within a stated tolerance",
    mutation=Mutation(targets=(CALCULATOR_CLAIMS_TARGET,), fixtures=_fixtures),
)
