"""Mutation operators and their registry.

An operator names one invariant of one record type and how to break it: the JSON pointer
pattern it touches, what it changes, and the finding code the oracle must answer with. Its
generator yields concrete edits of a valid fixture as RFC 6902 patches, so every mutant (and
every survivor) can be shown and replayed as a patch.

Each loop contributes its operators from its own module (`ops_loop2`, `ops_loop4`, ...);
`cbaudit.mutate.registry` assembles them into one explicit registry that refuses duplicates.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Patch = tuple[Mapping[str, Any], ...]
#: One concrete edit: the patch, and a one-line description of what it broke.
Edit = tuple[Patch, str]
#: A generator gets the (read-only) fixture data and a seeded Random, and yields edits.
Generator = Callable[[Mapping[str, Any], random.Random], Iterable[Edit]]


@dataclass(frozen=True)
class Operator:
    """One mutation operator: where it applies, what it breaks, what must reject it."""

    name: str  # unique, kebab/dotted: "plan.interval.before-frontier"
    loop: str  # the article loop whose oracle must kill it: "2", "4", ...
    target: str  # the fixture type it applies to (a key of cbaudit.mutate.targets.TARGETS)
    record: str  # the record type it edits: "IterationPlan", "SchedulerState", ...
    pointer: str  # JSON pointer pattern; "*" stands for any array index or member
    changes: str  # what it changes, in one line
    expect: str  # the finding code the oracle must produce
    generate: Generator

    def describe(self) -> dict[str, Any]:
        """JSON-ready description (for `--list-operators`, docs and reports)."""
        return {
            "name": self.name,
            "loop": self.loop,
            "target": self.target,
            "record": self.record,
            "pointer": self.pointer,
            "changes": self.changes,
            "expect": self.expect,
        }


class OperatorRegistry(Mapping[str, Operator]):
    """An explicit name -> operator mapping; a second operator under one name is refused."""

    def __init__(self, operators: Iterable[Operator] = ()) -> None:
        self._items: dict[str, Operator] = {}
        for op in operators:
            self.add(op)

    def add(self, op: Operator) -> None:
        if op.name in self._items:
            raise ValueError(f"mutation operator {op.name!r} is registered twice")
        self._items[op.name] = op

    def __getitem__(self, name: str) -> Operator:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def for_target(self, target: str) -> list[Operator]:
        """Operators for one fixture type, in registration order."""
        return [op for op in self._items.values() if op.target == target]

    def select(self, patterns: Sequence[str]) -> list[Operator]:
        """Operators whose name equals a pattern or starts with `pattern.` (or matches `*`)."""
        if not patterns:
            return list(self._items.values())
        out: list[Operator] = []
        for op in self._items.values():
            for pat in patterns:
                if pat in ("*", op.name) or op.name.startswith(pat.rstrip(".") + "."):
                    out.append(op)
                    break
                if pat.endswith("*") and op.name.startswith(pat[:-1]):
                    out.append(op)
                    break
        return out


def replace(path: str, value: Any) -> dict[str, Any]:
    """A `replace` operation."""
    return {"op": "replace", "path": path, "value": value}


def add(path: str, value: Any) -> dict[str, Any]:
    """An `add` operation."""
    return {"op": "add", "path": path, "value": value}


def remove(path: str) -> dict[str, Any]:
    """A `remove` operation."""
    return {"op": "remove", "path": path}
