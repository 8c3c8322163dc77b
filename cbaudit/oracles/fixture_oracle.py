"""Check kind `oracle`: one fixture judged by the fixture oracle its check names.

`oracles()` is the explicit table of fixture oracles the kind dispatches to (refusing
duplicates), built on first use so that declaring the kind loads none of them; `ORACLE_LOOPS`
names them with their loops (a test holds the names equal to each module's `NAME`). Each is
also a mutation target (`oracle:<name>`). An oracle is `Callable[[Fixture],
CheckResult]`: it validates its fixture (raising `InputError` with located findings when the
fixture is unusable), runs, and returns one result whose `metrics` are its JSON-ready report and
whose findings carry stable codes. It never prints, exits or reads the clock, and the same
fixture gives the same report.

To add an oracle: write `cbaudit/oracles/<name>.py` with a `run(fixture) -> CheckResult`,
add one entry to `oracles()` and `ORACLE_LOOPS` below, and declare fixtures in the loop's
`checks.yaml` with `kind: oracle`. The fixture's own `oracle:` field, when present, must name
the same oracle. Spec fields: `oracle` and those of `cbaudit.oracles.fixture_checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind, FixtureFile, Mutation, Target, Verdict
from cbaudit.checks.targets import error_codes, no_locate
from cbaudit.model import CheckResult, Finding, InputError
from cbaudit.oracles.fixture_checks import FixtureKind, FixtureSpec, run_fixture_check
from cbaudit.oracles.fixtures import Fixture, load_fixture

Oracle = Callable[[Fixture], CheckResult]


def build_registry(entries: Iterable[tuple[str, Oracle]]) -> dict[str, Oracle]:
    """A name -> oracle dict; a name given twice is a programming error (ValueError)."""
    table: dict[str, Oracle] = {}
    for name, func in entries:
        if name in table:
            raise ValueError(f"oracle {name!r} is registered twice")
        table[name] = func
    return table


#: name -> (loop, description) of every fixture oracle, in registry order.
ORACLE_LOOPS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "selective-batching": ("4", "Loop 4 selective batching: packed versus reference layer"),
        "admission-uncertainty": ("5", "Loop 5 admission under output uncertainty"),
        "chunked-prefill": ("6", "Loop 6 chunked prefill: causal pairs, reload, schedule"),
        "slo-overload": ("7", "Loop 7 SLO clocks, slack, goodput and overload"),
        "runtime-policy": ("10", "Loop 10 pinned runtime binding and the multi-policy oracle"),
    }
)


@cache
def oracles() -> Mapping[str, Oracle]:
    """name -> oracle, each module imported on first use (explicitly, no module paths)."""
    from cbaudit.oracles import (
        admission,
        chunked_prefill,
        runtime_policy,
        selective_batching,
        slo_oracle,
    )

    return MappingProxyType(
        build_registry(
            [
                (selective_batching.NAME, selective_batching.run),  # Loop 4, article 0x04
                (admission.NAME, admission.run),  # Loop 5, article 0x06
                (chunked_prefill.NAME, chunked_prefill.run),  # Loop 6, article 0x09
                (slo_oracle.NAME, slo_oracle.run),  # Loop 7, article 0x07
                (runtime_policy.NAME, runtime_policy.run),  # Loop 10, article 0x0D
            ]
        )
    )


def _unknown(name: str, file: str | None, pointer: str | None) -> InputError:
    known = ", ".join(sorted(ORACLE_LOOPS))
    message = f"unknown oracle {name!r} (known: {known})"
    return InputError.at("ORACLE.UNKNOWN", message, file, pointer=pointer)


def get_oracle(name: str, *, file: str | None = None, pointer: str | None = None) -> Oracle:
    """The oracle called `name`, or `InputError` (`ORACLE.UNKNOWN`) naming the known ones."""
    if name not in ORACLE_LOOPS:
        raise _unknown(name, file, pointer)
    return oracles()[name]


def run_fixture(name: str, fixture: Fixture) -> CheckResult:
    """Run oracle `name` on `fixture`, refusing a fixture that declares another oracle."""
    func = get_oracle(name)
    declared = fixture.data.get("oracle")
    if declared is not None and declared != name:
        raise InputError.at(
            "ORACLE.FIXTURE.MISMATCH",
            f"fixture is for oracle {declared!r}, not {name!r}",
            fixture.path,
            pointer="/oracle",
        )
    return func(fixture)


# --- the check kind ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OracleSpec(FixtureSpec):
    """Fields of `oracle`: the oracle's name, and a fixture check's fields."""

    oracle: str


def _known(spec: OracleSpec, ctx: GateContext) -> list[Finding]:
    """`ORACLE.UNKNOWN` when the named oracle is not one of `ORACLE_LOOPS` (at load)."""
    if spec.oracle in ORACLE_LOOPS:
        return []
    return list(_unknown(spec.oracle, ctx.manifest, f"{ctx.pointer}/oracle").findings)


@dataclass(frozen=True)
class _Load:
    """Load an oracle fixture (picklable, for the worker processes)."""

    oracle: str

    def __call__(
        self, path: Path, display: str, root: Path
    ) -> tuple[Callable[[], CheckResult], tuple[str, ...]]:
        fixture = load_fixture(path, display=display, root=root)
        declared = (fixture.expect_code,) if fixture.expect_code is not None else ()
        return (lambda: run_fixture(self.oracle, fixture)), declared


def run_oracle(spec: OracleSpec, ctx: GateContext) -> list[CheckResult]:
    """Run `spec.oracle` on `spec.fixture`; see `cbaudit.oracles.fixture_checks`."""
    kind = FixtureKind(spec.oracle, _Load(spec.oracle), "ORACLE.EXPECT_CODE.MISSING")
    return run_fixture_check(spec, ctx, kind)


# --- mutation: each fixture oracle judges its mutants in memory -----------------------------


@dataclass(frozen=True)
class _IsFixtureOf:
    """`matches`: a plain fixture naming this oracle."""

    oracle: str

    def __call__(self, data: Mapping[str, Any]) -> bool:
        return data.get("oracle") == self.oracle and "patch" not in data


@dataclass(frozen=True)
class _Evaluate:
    """`evaluate`: run the oracle on the in-memory mutant."""

    oracle: str

    def __call__(self, data: Mapping[str, Any], directory: Path | None = None) -> Verdict:
        fixture = Fixture(
            data=data, path="<mutant>", sha256="", locate=no_locate, directory=directory
        )
        try:
            result = run_fixture(self.oracle, fixture)
        except InputError as err:
            return Verdict(error_codes(err.findings), unusable=True)
        return Verdict(error_codes(result.findings))


ORACLE_TARGETS: tuple[Target, ...] = tuple(
    Target(f"oracle:{name}", loop, text, _IsFixtureOf(name), _Evaluate(name))
    for name, (loop, text) in ORACLE_LOOPS.items()
)


def _valid_fixture(spec: OracleSpec, ctx: GateContext) -> list[FixtureFile]:
    """A positive check's fixture, unless it is a patched or code-declaring negative file."""
    if spec.expect_code is not None:
        return []
    path = ctx.resolve(spec.fixture, field="fixture")
    fixture = load_fixture(path, root=ctx.read_root)
    if fixture.base is not None or fixture.expect_code is not None:
        return []
    return [FixtureFile(path, ctx.display(path))]


ORACLE: CheckKind[OracleSpec] = CheckKind(
    name="oracle",
    spec_type=OracleSpec,
    run=run_oracle,
    summary="Loops 4-7 and 10: one fixture judged by the fixture oracle the check names",
    validate=_known,
    mutation=Mutation(ORACLE_TARGETS, _valid_fixture),
)
