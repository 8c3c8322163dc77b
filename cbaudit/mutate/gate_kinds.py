"""Gate kinds of the mutate package: `mutation`, `negative_floor` and `metamorphic`.

Spec fields (paths relative to the declaring file):

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
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.io import load_document
from cbaudit.model import CheckResult, InputError
from cbaudit.mutate.bundle import BUNDLE_FILE, load_fixture_file, read_bundle, valid_fixtures
from cbaudit.mutate.campaign import FixtureInput, run_campaign
from cbaudit.mutate.metamorphic import (
    DEFAULT_POLICIES,
    RELATIONS,
    MetamorphicOptions,
    run_relations,
)
from cbaudit.mutate.negatives import floor_results, parse_floors
from cbaudit.mutate.registry import OPERATORS
from cbaudit.mutate.reporting import campaign_result

if TYPE_CHECKING:  # the gate imports this module; a runtime import would point upwards
    from cbaudit.checks.context import GateContext


def _bad(ctx: GateContext, field: str, message: str) -> InputError:
    return InputError.at(
        "MUTATE.SPEC.INVALID", message, ctx.manifest, pointer=f"{ctx.pointer}/{field}"
    )


def _int(spec: Mapping[str, Any], ctx: GateContext, field: str, default: int, minimum: int) -> int:
    value = spec.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _bad(ctx, field, f"`{field}` must be an integer >= {minimum}")
    return value


def _names(spec: Mapping[str, Any], ctx: GateContext, field: str) -> list[str]:
    raw = spec.get(field, [])
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise _bad(ctx, field, f"`{field}` must be a list of names")
    return list(raw)


def _fixtures(ctx: GateContext, rel: Any) -> tuple[list[FixtureInput], str]:
    if not isinstance(rel, str) or not rel:
        raise _bad(ctx, "target", "`target` must be a fixture file or a bundle directory")
    path = ctx.resolve(rel, field="target")
    display = rel
    if path.is_dir():
        if not (path / BUNDLE_FILE).is_file():
            raise _bad(ctx, "target", f"{rel!r} is a directory without {BUNDLE_FILE}")
        return valid_fixtures(read_bundle(path)), display
    if not path.is_file():
        raise _bad(ctx, "target", f"{rel!r} does not exist")
    return [load_fixture_file(path, ctx.display(path))], display


def run_mutation(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """A mutation campaign over a fixture or a whole bundle; see the module docstring."""
    fixtures, display = _fixtures(ctx, spec.get("target"))
    patterns = _names(spec, ctx, "operators")
    ops = OPERATORS.select(patterns)
    if patterns and not ops:
        raise _bad(ctx, "operators", f"no operator matches {patterns}")
    min_score = spec.get("min_score", 100)
    if (
        isinstance(min_score, bool)
        or not isinstance(min_score, int | float)
        or not 0 <= min_score <= 100
    ):
        raise _bad(ctx, "min_score", "`min_score` must be a percentage between 0 and 100")
    seed = _int(spec, ctx, "seed", 0, 0)
    limit = _int(spec, ctx, "limit", 0, 0) or None
    campaign = run_campaign(fixtures, ops, seed=seed, limit=limit)
    result = campaign_result(
        campaign,
        fixtures,
        subject=str(spec.get("id", display)),
        min_score=float(min_score),
        survivors_fail=float(min_score) >= 100.0,
    )
    return [result]


def run_negative_floor(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """Per loop: are at least the article's number of negative fixtures declared?"""
    floors = parse_floors(spec.get("floors"), file=ctx.manifest, pointer=f"{ctx.pointer}/floors")
    from cbaudit.mutate.bundle import declared_negatives

    negatives = declared_negatives(read_bundle(ctx.bundle_root))
    return floor_results(negatives, floors, where=ctx.location())


def run_metamorphic(spec: Mapping[str, Any], ctx: GateContext) -> list[CheckResult]:
    """The named metamorphic relations, one result line each."""
    relations = _names(spec, ctx, "relations")
    unknown = [r for r in relations if r not in RELATIONS]
    if unknown:
        raise _bad(
            ctx, "relations", f"unknown relation(s) {unknown} (known: {', '.join(RELATIONS)})"
        )
    policies = _names(spec, ctx, "policies") or list(DEFAULT_POLICIES)
    workload = None
    if "workload" in spec:
        path: Path = ctx.resolve(str(spec["workload"]), field="workload")
        workload = load_document(path).data
    options = MetamorphicOptions(
        seed=_int(spec, ctx, "seed", 0, 0),
        policies=tuple(policies),
        workload=workload,
        scale=_int(spec, ctx, "scale", 3, 2),
        partitions=_int(spec, ctx, "partitions", 8, 1),
    )
    return run_relations(relations, options)
