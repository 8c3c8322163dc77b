"""Calculator-claim operators: break one printed figure, unit, output, input or formula binding.

The fixture is a check list (`checks.yaml`) that declares `calculator_claim` checks (target
`calculator-claims`, `cbaudit.oracles.calculator_claims`); each operator edits one claim and
the same evaluation the gate runs must reject the mutant with the operator's code.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from cbaudit.mutate.operators import Edit, Generator, Operator, add, remove, replace
from cbaudit.oracles.calculator_claims_names import NAME, TARGET

if TYPE_CHECKING:
    from cbaudit.oracles.calculator_table import Unit

LOOP = "lecture"
MISMATCH = "CALC.CLAIM.MISMATCH"

#: For each unit's dimension (`Dimension.TIME`, `Dimension.LABEL`), a unit of another one (the
#: claim then names a unit its output cannot be); any other dimension takes "ms".
_OTHER_DIMENSION = {"time": "B", "label": "ms"}
#: A unit of the same dimension and another scale: the figure then reads 1000x (or 1/1000x) off.
_RESCALE = {
    "ms": "s",
    "s": "ms",
    "us": "ms",
    "B": "KB",
    "KB": "B",
    "MB": "GB",
    "GB": "TB",
    "TB": "GB",
    "KiB": "MiB",
    "MiB": "KiB",
    "GiB": "MiB",
    "FLOP": "GFLOP",
    "GFLOP": "TFLOP",
    "TFLOP": "PFLOP",
    "PFLOP": "TFLOP",
    "tokens": "Ktokens",
    "Ktokens": "tokens",
}
#: Inputs every output of a claim depends on, where the calculator takes them.
_SENSITIVE = (
    "prefill",
    "budget",
    "prompt_len",
    "length",
    "kv_bytes_per_token",
    "batch",
    "max_batch",
    "replay_tokens_per_s",
    "link_bytes_per_s",
)
#: Outputs no model profile enters.
_MODEL_FREE = frozenset(
    {
        "chunk_steps",
        "replay_ms",
        "efficiency",
        "graphs",
        "mean_padding_tokens",
        "worst_padding_tokens",
        "worst_batch",
    }
)
_OTHER_MODEL = {
    "lecture4-dense-70b-fp16": "llama-3-8b-gqa-fp16",
    "llama-3-8b-gqa-fp16": "lecture4-dense-70b-fp16",
    "lecture4-kimi-k3-hybrid": "lecture4-dense-70b-fp16",
}


def _claims(data: Mapping[str, Any]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for i, entry in enumerate(data.get("checks") or []):
        if isinstance(entry, Mapping) and entry.get("kind") == NAME:
            yield i, entry


def _expects(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """(pointer of the expect entry, the entry, the claim's id) for every claim's figures."""
    for i, entry in _claims(data):
        for k, exp in enumerate(entry.get("expect") or []):
            if isinstance(exp, Mapping):
                yield f"/checks/{i}/expect/{k}", exp, str(entry.get("id"))


# The calculators' table (and `fractions`) load when an operator generates mutants, not when
# `cbaudit.mutate.registry` lists the operators: `cbaudit mutate` of a plan case never needs them.
def _unit(exp: Mapping[str, Any]) -> Unit | None:
    from cbaudit.oracles.calculator_table import UNITS

    return UNITS.get(str(exp.get("unit")))


def _numeric(exp: Mapping[str, Any]) -> bool:
    from cbaudit.oracles.calculator_table import Dimension

    unit = _unit(exp)
    return unit is not None and unit.dimension is not Dimension.LABEL


def _shifted(printed: str) -> str:
    """The figure doubled plus one unit of its last digit, printed with as many decimals:
    off by more than any tolerance a claim states (`56.5` -> `113.1`, `0` -> `1`)."""
    text = printed.replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    from fractions import Fraction

    unit = Fraction(1, 10**decimals)
    value = 2 * Fraction(text) + unit
    return f"{float(value):.{decimals}f}"


def _shift_printed(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, exp, cid in _expects(data):
        if _numeric(exp):
            new = _shifted(str(exp["printed"]))
            yield (replace(f"{ptr}/printed", new),), f"{cid}: {exp['output']} printed {new}"


def _flip_label(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, exp, cid in _expects(data):
        if not _numeric(exp):
            new = f"not-{exp['printed']}"
            yield (replace(f"{ptr}/printed", new),), f"{cid}: {exp['output']} is {new}"


def _unit_other_dimension(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, exp, cid in _expects(data):
        unit = _unit(exp)
        if unit is not None:
            new = _OTHER_DIMENSION.get(unit.dimension.value, "ms")
            yield (replace(f"{ptr}/unit", new),), f"{cid}: {exp['output']} in {new}"


def _unit_rescale(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    from fractions import Fraction

    for ptr, exp, cid in _expects(data):
        new = _RESCALE.get(str(exp.get("unit")))
        if new is not None and Fraction(str(exp["printed"]).replace(",", "")) != 0:
            yield (replace(f"{ptr}/unit", new),), f"{cid}: {exp['output']} read in {new}"


def _output_unknown(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, _exp, cid in _expects(data):
        yield (replace(f"{ptr}/output", "no_such_output"),), f"{cid}: an output it lacks"


def _formula_unknown(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, entry in _claims(data):
        if entry.get("formulas"):
            yield (
                (replace(f"/checks/{i}/formulas/0", "F999"),),
                f"{entry.get('id')}: bound to F999, which the registry lacks",
            )


def _input_unknown(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, entry in _claims(data):
        yield (add(f"/checks/{i}/inputs/bogus", 1),), f"{entry.get('id')}: an input it lacks"


def _input_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    from cbaudit.oracles.calculator_table import CALCULATORS

    for i, entry in _claims(data):
        calc = CALCULATORS.get(str(entry.get("calculator")))
        if calc is None:
            continue
        for name, decl in calc.inputs.items():
            if decl.required and name in (entry.get("inputs") or {}):
                yield (remove(f"/checks/{i}/inputs/{name}"),), f"{entry.get('id')}: no {name}"


def _input_double(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, entry in _claims(data):
        for name, value in (entry.get("inputs") or {}).items():
            if name in _SENSITIVE and isinstance(value, int | float) and value > 0:
                yield (
                    (replace(f"/checks/{i}/inputs/{name}", value * 2),),
                    f"{entry.get('id')}: {name} doubled to {value * 2}",
                )


def _reads_model(entry: Mapping[str, Any]) -> bool:
    """Whether some figure of the claim depends on the model (a chunk count, a replay at a
    given rate or a swap of given K/V bytes does not: another model is no mutant of those)."""
    inputs = entry.get("inputs") or {}
    free = _MODEL_FREE | ({"swap_ms"} if "kv_bytes_per_token" in inputs else set())
    return any(
        isinstance(e, Mapping) and e.get("output") not in free for e in entry.get("expect") or []
    )


def _model_swap(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, entry in _claims(data):
        other = _OTHER_MODEL.get(str((entry.get("inputs") or {}).get("model")))
        if other is not None and _reads_model(entry):
            yield (
                (replace(f"/checks/{i}/inputs/model", other),),
                f"{entry.get('id')}: computed for {other}",
            )


def _op(name: str, pointer: str, changes: str, expect: str, gen: Generator) -> Operator:
    return Operator(name, LOOP, TARGET, "calculator claim", pointer, changes, expect, gen)


OPERATORS: tuple[Operator, ...] = (
    _op(
        "calc.printed.shift",
        "/checks/*/expect/*/printed",
        "print a figure twice its value plus one unit of its last digit",
        MISMATCH,
        _shift_printed,
    ),
    _op(
        "calc.printed.wrong-label",
        "/checks/*/expect/*/printed",
        "claim another label (binding term, cheaper mode, crossover)",
        MISMATCH,
        _flip_label,
    ),
    _op(
        "calc.unit.other-dimension",
        "/checks/*/expect/*/unit",
        "state a figure in a unit of another dimension",
        "CALC.CLAIM.UNIT.MISMATCH",
        _unit_other_dimension,
    ),
    _op(
        "calc.unit.rescale",
        "/checks/*/expect/*/unit",
        "state a figure in a unit 1000x larger or smaller",
        MISMATCH,
        _unit_rescale,
    ),
    _op(
        "calc.output.unknown",
        "/checks/*/expect/*/output",
        "hold a figure to an output the calculator does not give",
        "CALC.CLAIM.OUTPUT.UNKNOWN",
        _output_unknown,
    ),
    _op(
        "calc.formula.unknown",
        "/checks/*/formulas/0",
        "bind the claim to a formula the registry lacks",
        "CALC.CLAIM.FORMULA.UNKNOWN",
        _formula_unknown,
    ),
    _op(
        "calc.input.unknown",
        "/checks/*/inputs/bogus",
        "give the calculator an input it does not take",
        "CALC.CLAIM.INPUT.UNKNOWN",
        _input_unknown,
    ),
    _op(
        "calc.input.missing",
        "/checks/*/inputs/*",
        "drop an input the calculator requires",
        "CALC.CLAIM.INPUT.MISSING",
        _input_missing,
    ),
    _op(
        "calc.input.double",
        "/checks/*/inputs/*",
        "double an input every output depends on (length, budget, batch, rate)",
        MISMATCH,
        _input_double,
    ),
    _op(
        "calc.input.other-model",
        "/checks/*/inputs/model",
        "compute the claim for another model",
        MISMATCH,
        _model_swap,
    ),
)
