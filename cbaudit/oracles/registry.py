"""The oracle registry: an explicit dict from oracle name to function, refusing duplicates.

An oracle is `Callable[[Fixture], CheckResult]`: it validates its fixture (raising
`InputError` with located findings when the fixture is unusable), runs, and returns one
result whose `metrics` are its JSON-ready report and whose findings carry stable codes.
It never prints, exits or reads the clock, and the same fixture gives the same report.

To add an oracle: write `cbaudit/oracles/<name>.py` with a `run(fixture) -> CheckResult`,
add one entry to `_ENTRIES` below, and declare fixtures in the loop's `checks.yaml` with
`kind: oracle`. The fixture's own `oracle:` field, when present, must name the same oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from cbaudit.model import CheckResult, InputError
from cbaudit.oracles import chunked_prefill, runtime_policy, selective_batching
from cbaudit.oracles.fixtures import Fixture
from cbaudit.sim import admission, slo_oracle

Oracle = Callable[[Fixture], CheckResult]


def build_registry(entries: Iterable[tuple[str, Oracle]]) -> dict[str, Oracle]:
    """A name -> oracle dict; a name given twice is a programming error (ValueError)."""
    table: dict[str, Oracle] = {}
    for name, func in entries:
        if name in table:
            raise ValueError(f"oracle {name!r} is registered twice")
        table[name] = func
    return table


_ENTRIES: tuple[tuple[str, Oracle], ...] = (
    (selective_batching.NAME, selective_batching.run),  # Loop 4, article 0x04
    (chunked_prefill.NAME, chunked_prefill.run),  # Loop 6, article 0x09
    (admission.NAME, admission.run),  # Loop 5, article 0x06
    (slo_oracle.NAME, slo_oracle.run),  # Loop 7, article 0x07
    (runtime_policy.NAME, runtime_policy.run),  # Loop 10, article 0x0D
)

ORACLES: Mapping[str, Oracle] = MappingProxyType(build_registry(_ENTRIES))


def get_oracle(name: str, *, file: str | None = None, pointer: str | None = None) -> Oracle:
    """The oracle called `name`, or `InputError` (`ORACLE.UNKNOWN`) naming the known ones."""
    func = ORACLES.get(name)
    if func is None:
        known = ", ".join(sorted(ORACLES))
        raise InputError.at(
            "ORACLE.UNKNOWN", f"unknown oracle {name!r} (known: {known})", file, pointer=pointer
        )
    return func


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
