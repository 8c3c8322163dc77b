"""A check kind: a frozen spec parsed from its entry by a JSON Schema of its own, plus `run`.

Everything the gate, `mutate` and the CLI need to know about a kind is one `CheckKind` value,
defined beside the oracle it runs (`cbaudit/oracles/`, `cbaudit/mutate/kinds.py`,
`cbaudit/checks/negative.py`) and listed once in `cbaudit.kinds` (docs/architecture.md).

Mutation support lives here too, as types only: a `Target` is a fixture type (how to recognise
one, and the oracle that judges it in memory), and a kind's `Mutation` says which targets its
fixtures are and which files of a declared check are valid fixtures to mutate. `mutate`
receives targets by parameter; it never imports the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from cbaudit.checks.context import GateContext
from cbaudit.checks.spec import CheckSpec, S
from cbaudit.io.schemas import load_schema
from cbaudit.model import CheckResult, Finding


@dataclass(frozen=True)
class Verdict:
    """What an oracle said about one document: error codes, and whether its shape was unusable."""

    codes: frozenset[str]
    unusable: bool = False  # schema (shape) rejection: no semantic check could run


class Evaluator(Protocol):
    """Judge in-memory fixture data; `directory` is the fixture file's folder, for oracles that
    read files the fixture names relative to itself (pins, snapshots, closure bindings)."""

    def __call__(self, data: Mapping[str, Any], directory: Path | None = None) -> Verdict: ...


@dataclass(frozen=True)
class Target:
    """One fixture type a mutation campaign can mutate, and the oracle that judges it.

    `matches` and `evaluate` are module-level functions (or picklable callables): a campaign
    hands targets to its worker processes.
    """

    name: str
    loop: str
    description: str
    matches: Callable[[Mapping[str, Any]], bool]
    evaluate: Evaluator


@dataclass(frozen=True)
class FixtureFile:
    """A valid fixture a declared check names, as a campaign shows it."""

    path: Path
    display: str


@dataclass(frozen=True)
class Mutation(Generic[S]):
    """How a kind's checks take part in mutation campaigns.

    `targets`: the fixture types its fixtures are (their order is the order `detect` tries);
    `fixtures(spec, ctx)`: the valid fixture files one check names (none for a negative).
    """

    targets: tuple[Target, ...]
    fixtures: Callable[[S, GateContext], list[FixtureFile]] | None = None


@dataclass(frozen=True)
class CheckKind(Generic[S]):
    """One check kind (see the module docstring and docs/architecture.md).

    `schema` is the name of a shipped schema (`check-<name>`, with `-` for `_`, by default) or,
    for a kind defined outside cbaudit (a plugin, a test), a schema document that may `$ref`
    the shipped `check-common.schema.json`.
    """

    name: str
    spec_type: type[S]
    run: Callable[[S, GateContext], list[CheckResult]]
    summary: str = ""
    schema: str | Mapping[str, Any] = ""
    validate: Callable[[S, GateContext], list[Finding]] | None = None
    # Build the spec from the validated entry instead of `build_spec` (a kind whose entry holds
    # another check parses it here); raise InputError to refuse the entry.
    build: Callable[[Mapping[str, Any], GateContext], S] | None = None
    mutation: Mutation[S] | None = None
    heavy: bool = False  # takes seconds: the gate starts it first, in a worker of its own

    @property
    def schema_name(self) -> str | None:
        """The shipped schema's name, or None for an inline schema document."""
        if isinstance(self.schema, str):
            return self.schema or "check-" + self.name.replace("_", "-")
        return None

    def schema_document(self) -> Mapping[str, Any]:
        """The kind's JSON Schema."""
        name = self.schema_name
        return load_schema(name) if name is not None else self.schema  # type: ignore[return-value]


T = TypeVar("T")


class Table(Mapping[str, T]):
    """A read-only name -> value registry that refuses a name given twice (ValueError).

    Unlike `MappingProxyType` it can be pickled, so the gate can hand it to worker processes.
    """

    def __init__(self, what: str, items: Iterable[tuple[str, T]]) -> None:
        self._table: dict[str, T] = {}
        for name, value in items:
            if name in self._table:
                raise ValueError(f"{what} {name!r} is registered twice")
            self._table[name] = value

    def __getitem__(self, name: str) -> T:
        return self._table[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"Table({sorted(self._table)})"


def build_kinds(kinds: Iterable[CheckKind[Any]]) -> Table[CheckKind[Any]]:
    """The registry of `kinds` by name; a name given twice is a programming error."""
    return Table("check kind", ((k.name, k) for k in kinds))


@dataclass(frozen=True)
class KindEntry:
    """One entry of a lazy registry: a kind's name, the names of the mutation targets it
    declares, and `load`, a module-level function that imports the kind's module and returns
    its `CheckKind` (a plain import in code: no module-path string, no importlib).

    Naming the kind and its targets here lets a command list them, and look one up, without
    importing any kind's module; `resolve` refuses a kind that disagrees with its entry.
    """

    name: str
    load: Callable[[], CheckKind[Any]]
    targets: tuple[str, ...] = ()

    def resolve(self) -> CheckKind[Any]:
        """The kind `load` returns; ValueError when its name or targets are not the entry's."""
        kind = self.load()
        declared = tuple(t.name for t in kind.mutation.targets) if kind.mutation else ()
        if kind.name != self.name or declared != self.targets:
            raise ValueError(
                f"registry entry {self.name!r} (targets {list(self.targets)}) loads kind"
                f" {kind.name!r} (targets {list(declared)})"
            )
        return kind


class LazyKinds(Mapping[str, CheckKind[Any]]):
    """A read-only name -> `CheckKind` registry of `KindEntry`s, each loaded on first look-up.

    Names (and their order) are known without loading anything; a name given twice, or a
    target name given twice, raises ValueError at construction. `targets` is the registry of
    their mutation targets, loaded the same way. It pickles as its entries (module-level
    functions travel by reference): a worker process loads only the kinds it looks up.
    """

    def __init__(self, entries: Iterable[KindEntry]) -> None:
        self._entries = Table("check kind", ((e.name, e) for e in entries))
        self._loaded: dict[str, CheckKind[Any]] = {}
        self.targets = LazyTargets(self)

    def entries(self) -> tuple[KindEntry, ...]:
        """The entries, in registry order."""
        return tuple(self._entries.values())

    def __getitem__(self, name: str) -> CheckKind[Any]:
        kind = self._loaded.get(name)
        if kind is None:
            kind = self._loaded[name] = self._entries[name].resolve()
        return kind

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyKinds, (self.entries(),))

    def __repr__(self) -> str:
        return f"LazyKinds({sorted(self._entries)})"


class LazyTargets(Mapping[str, Target]):
    """The mutation targets of a `LazyKinds`, in registry order; a look-up loads one kind."""

    def __init__(self, kinds: LazyKinds) -> None:
        self._kinds = kinds
        self._owner = Table(
            "mutation target", ((t, e.name) for e in kinds.entries() for t in e.targets)
        )

    def __getitem__(self, name: str) -> Target:
        mutation = self._kinds[self._owner[name]].mutation
        assert mutation is not None  # the entry's targets were checked against the kind's
        return next(t for t in mutation.targets if t.name == name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._owner)

    def __len__(self) -> int:
        return len(self._owner)

    def __contains__(self, name: object) -> bool:
        return name in self._owner

    def __reduce__(self) -> tuple[Any, ...]:
        return (_targets_of_lazy, (self._kinds,))

    def __repr__(self) -> str:
        return f"LazyTargets({list(self._owner)})"


def _targets_of_lazy(kinds: LazyKinds) -> LazyTargets:
    return kinds.targets


def targets_of(kinds: Mapping[str, CheckKind[Any]]) -> Mapping[str, Target]:
    """Every mutation target of `kinds`, in registry order; a name given twice is refused.

    For a `LazyKinds` these are its lazy `targets`: no kind is loaded until one is looked up.
    """
    if isinstance(kinds, LazyKinds):
        return kinds.targets
    return Table(
        "mutation target",
        ((t.name, t) for k in kinds.values() if k.mutation is not None for t in k.mutation.targets),
    )


__all__ = [
    "CheckKind",
    "CheckSpec",
    "Evaluator",
    "FixtureFile",
    "KindEntry",
    "LazyKinds",
    "LazyTargets",
    "Mutation",
    "Table",
    "Target",
    "Verdict",
    "build_kinds",
    "targets_of",
]
