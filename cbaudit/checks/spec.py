"""The fields every check entry may carry, and building a kind's frozen spec from its entry.

A kind's spec is a frozen, keyword-only dataclass that subclasses `CheckSpec`; its fields are
the entry's keys (a field may read another key: `field(metadata={"key": "assert"})`). The
entry has been validated against the kind's JSON Schema before `build_spec` runs, so building
never guesses: a key the schema does not know never reaches it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from cbaudit.model import EvidenceClass


@dataclass(frozen=True, slots=True)
class Binding:
    """An artifact a check consumes, bound by sha256 (`consumes:`)."""

    path: str
    sha256: str
    role: str | None = None


def _evidence(value: Any) -> EvidenceClass:
    return EvidenceClass(value)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _bindings(value: Any) -> tuple[Binding, ...]:
    return tuple(Binding(str(b["path"]), str(b["sha256"]), b.get("role")) for b in value)


def key(name: str) -> dict[str, Any]:
    """Field metadata: the entry key this field reads, when it is not the field's name."""
    return {"key": name}


#: Field metadata of a field the kind fills in itself (`CheckKind.build`), read from no key.
NOT_AN_ENTRY_KEY: dict[str, Any] = {"key": None}


def converted(convert: Callable[[Any], Any], **extra: Any) -> dict[str, Any]:
    """Field metadata: how to turn the entry's (validated) value into the field's value."""
    return {"convert": convert, **extra}


@dataclass(frozen=True, kw_only=True)
class CheckSpec:
    """The common fields of a check entry (`schemas/check-common.schema.json`).

    `loop` is the label the gate shows (`Loop 7`): the entry's own, else its check list's.
    """

    id: str
    kind: str
    title: str | None = None
    claim: str | None = None
    loop: str | None = None
    evidence_class: EvidenceClass | None = field(default=None, metadata=converted(_evidence))
    requires: tuple[str, ...] = field(default=(), metadata=converted(_strings))
    consumes: tuple[Binding, ...] = field(default=(), metadata=converted(_bindings))
    timeout_s: float | None = None


#: Entry keys of the common fields.
COMMON_KEYS: tuple[str, ...] = tuple(f.name for f in fields(CheckSpec))

S = TypeVar("S", bound=CheckSpec)


def entry_key(f: Any) -> str | None:
    """The entry key a dataclass field reads (None: no key, see NOT_AN_ENTRY_KEY)."""
    name = f.metadata.get("key", f.name)
    return None if name is None else str(name)


def build_spec(spec_type: type[S], entry: Mapping[str, Any]) -> S:
    """The frozen spec of a validated entry: each field from its key, converted if declared."""
    values: dict[str, Any] = {}
    for f in fields(spec_type):
        name = entry_key(f)
        if name is None or name not in entry:
            continue
        convert = f.metadata.get("convert")
        values[f.name] = convert(entry[name]) if convert is not None else entry[name]
    return spec_type(**values)


def spec_keys(spec_type: type[CheckSpec]) -> frozenset[str]:
    """Every entry key a spec type reads (its schema's properties must be exactly these)."""
    return frozenset(k for f in fields(spec_type) if (k := entry_key(f)) is not None)
