"""Check kinds of the mutate package: `mutation`, `negative_floor` and `metamorphic`.

Spec fields (paths relative to the declaring file; schemas/check-<kind>.schema.json):

- `mutation`: `target` (a fixture file, or a bundle directory such as `..`: every valid
  fixture it declares), optional `operators` (names or dotted prefixes; default all),
  `min_score` (percent, default 100), `seed` (default 0), `limit` (mutants per operator and
  fixture, default all). Fails on any oracle error, on a score below `min_score`, and (when
  `min_score` is 100) on any survivor; survivors are warnings below that.
- `negative_floor`: optional `floors` (`{loop: count}`, `"classes"` for loop 2; default the
  article's: Loop 2 every 0x01A class, Loop 7 19, Loop 9 20, Loop 10 20, Loop 11 28). Counts
  the negative fixtures the whole bundle declares per loop; one result line per loop.
- `metamorphic`: optional `relations` (default all four), `seed`, `policies`, `workload`
  (a workload manifest with hidden truth; default a seeded built-in one), `scale` (k, an
  integer >= 2), `partitions`. One result line per relation.

Names a schema cannot list (operators that match nothing, unknown relations, floors) are
`MUTATE.SPEC.INVALID` when the bundle loads. The kinds read a whole bundle with the registry
the gate runs with (`GateContext.kinds`): `mutate` never imports the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cbaudit.checks.bundle import BUNDLE_FILE, load_bundle
from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, targets_of
from cbaudit.checks.spec import CheckSpec, converted
from cbaudit.io import load_document
from cbaudit.model import CheckResult, Finding, InputError

if TYPE_CHECKING:
    from cbaudit.mutate.campaign import FixtureInput

# The campaign, the operators and the relations load when a check of these kinds is parsed or
# run: declaring the kinds (`cbaudit.kinds` imports them all) loads none of them.

SPEC_CODE = "MUTATE.SPEC.INVALID"


@dataclass(frozen=True, kw_only=True)
class MutationSpec(CheckSpec):
    """Fields of `mutation`."""

    target: str
    operators: tuple[str, ...] = field(default=(), metadata=converted(tuple))
    min_score: float = 100
    seed: int = 0
    limit: int = 0


@dataclass(frozen=True, kw_only=True)
class NegativeFloorSpec(CheckSpec):
    """Fields of `negative_floor`."""

    floors: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class MetamorphicSpec(CheckSpec):
    """Fields of `metamorphic`."""

    relations: tuple[str, ...] = field(default=(), metadata=converted(tuple))
    seed: int = 0
    policies: tuple[str, ...] = field(default=(), metadata=converted(tuple))
    workload: str | None = None
    scale: int = 3
    partitions: int = 8


def _bad(ctx: GateContext, field: str, message: str) -> InputError:
    return ctx.error(SPEC_CODE, message, field)


def _operators_match(spec: MutationSpec, ctx: GateContext) -> list[Finding]:
    from cbaudit.mutate.registry import OPERATORS

    if spec.operators and not OPERATORS.select(list(spec.operators)):
        return list(_bad(ctx, "operators", f"no operator matches {list(spec.operators)}").findings)
    return []


def _fixtures(spec: MutationSpec, ctx: GateContext) -> tuple[list[FixtureInput], str]:
    from cbaudit.mutate.bundle import load_fixture_file, valid_fixtures

    path = ctx.resolve(spec.target, field="target")
    targets = targets_of(ctx.kinds)
    if path.is_dir():
        if not (path / BUNDLE_FILE).is_file():
            raise _bad(ctx, "target", f"{spec.target!r} is a directory without {BUNDLE_FILE}")
        return valid_fixtures(load_bundle(path, ctx.kinds), ctx.kinds), spec.target
    if not path.is_file():
        raise _bad(ctx, "target", f"{spec.target!r} does not exist")
    return [load_fixture_file(path, ctx.display(path), targets)], spec.target


def run_mutation(spec: MutationSpec, ctx: GateContext) -> list[CheckResult]:
    """A mutation campaign over a fixture or a whole bundle; see the module docstring."""
    from cbaudit.mutate.campaign import run_campaign
    from cbaudit.mutate.registry import OPERATORS
    from cbaudit.mutate.reporting import campaign_result

    fixtures, _ = _fixtures(spec, ctx)
    ops = OPERATORS.select(list(spec.operators))
    campaign = run_campaign(
        fixtures, ops, targets=targets_of(ctx.kinds), seed=spec.seed, limit=spec.limit or None
    )
    result = campaign_result(
        campaign,
        fixtures,
        subject=spec.id,
        min_score=float(spec.min_score),
        survivors_fail=float(spec.min_score) >= 100.0,
    )
    return [result]


def _floors_valid(spec: NegativeFloorSpec, ctx: GateContext) -> list[Finding]:
    from cbaudit.mutate.negatives import parse_floors

    try:
        parse_floors(spec.floors, file=ctx.manifest, pointer=f"{ctx.pointer}/floors")
    except InputError as err:
        return list(err.findings)
    return []


def run_negative_floor(spec: NegativeFloorSpec, ctx: GateContext) -> list[CheckResult]:
    """Per loop: are at least the article's number of negative fixtures declared?"""
    from cbaudit.mutate.bundle import declared_negatives
    from cbaudit.mutate.negatives import floor_results, parse_floors

    floors = parse_floors(spec.floors, file=ctx.manifest, pointer=f"{ctx.pointer}/floors")
    negatives = declared_negatives(load_bundle(ctx.bundle_root, ctx.kinds))
    return floor_results(negatives, floors, where=ctx.location())


def _relations_known(spec: MetamorphicSpec, ctx: GateContext) -> list[Finding]:
    from cbaudit.mutate.metamorphic import RELATIONS

    unknown = [r for r in spec.relations if r not in RELATIONS]
    if unknown:
        message = f"unknown relation(s) {unknown} (known: {', '.join(RELATIONS)})"
        return list(_bad(ctx, "relations", message).findings)
    return []


def run_metamorphic(spec: MetamorphicSpec, ctx: GateContext) -> list[CheckResult]:
    """The named metamorphic relations, one result line each."""
    from cbaudit.mutate.metamorphic import DEFAULT_POLICIES, MetamorphicOptions, run_relations

    workload = None
    if spec.workload is not None:
        workload = load_document(ctx.resolve(spec.workload, field="workload")).data
    options = MetamorphicOptions(
        seed=spec.seed,
        policies=spec.policies or tuple(DEFAULT_POLICIES),
        workload=workload,
        scale=spec.scale,
        partitions=spec.partitions,
    )
    return run_relations(list(spec.relations), options)


MUTATION: CheckKind[MutationSpec] = CheckKind(
    name="mutation",
    spec_type=MutationSpec,
    run=run_mutation,
    summary="a mutation campaign over a fixture or every valid fixture of a bundle",
    validate=_operators_match,
    heavy=True,
)
NEGATIVE_FLOOR: CheckKind[NegativeFloorSpec] = CheckKind(
    name="negative_floor",
    spec_type=NegativeFloorSpec,
    run=run_negative_floor,
    summary="each loop declares at least the article's number of negative fixtures",
    validate=_floors_valid,
)
METAMORPHIC: CheckKind[MetamorphicSpec] = CheckKind(
    name="metamorphic",
    spec_type=MetamorphicSpec,
    run=run_metamorphic,
    summary="metamorphic relations: what must not change does not change",
    validate=_relations_known,
    heavy=True,
)
