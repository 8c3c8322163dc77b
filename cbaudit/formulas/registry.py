"""Formula registry records: load, schema-check and build frozen records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, load_document
from cbaudit.io.schemas import validate
from cbaudit.model import InputError, Location

SCHEMA = "formula-registry"


@dataclass(frozen=True, slots=True)
class Binding:
    """A formula's claim on one display equation: its 1-based order and normalized hash."""

    index: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Example:
    """Worked numbers: bindings, the expected value, and what is evaluated."""

    bindings: Mapping[str, Any]
    expect: Any
    target: str | None = None
    tolerance: float | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Formula:
    """One registry entry."""

    id: str
    name: str
    family: str
    plain: str
    unit_family: str
    owner: str
    equations: tuple[Binding, ...]
    examples: tuple[Example, ...] = ()


@dataclass(frozen=True, slots=True)
class Unbound:
    """A display equation that no formula binds, declared on purpose."""

    index: int
    sha256: str
    unbound_ok: bool
    reason: str | None


@dataclass(frozen=True, slots=True)
class UnitFamily:
    owner: str
    description: str


@dataclass(frozen=True)
class Registry:
    """The whole registry plus its source document."""

    normalization_id: str
    rules: tuple[str, ...]
    families: Mapping[str, str]
    unit_families: Mapping[str, UnitFamily]
    formulas: tuple[Formula, ...]
    unbound: tuple[Unbound, ...]
    article_name: str | None
    article_sha256: str | None
    document: Document

    def locate(self, pointer: str) -> Location:
        return self.document.locate(pointer)


def _formula(raw: Mapping[str, Any]) -> Formula:
    return Formula(
        id=raw["id"],
        name=raw["name"],
        family=raw["family"],
        plain=raw["plain"],
        unit_family=raw["unit_family"],
        owner=raw["owner"],
        equations=tuple(Binding(b["index"], b["sha256"]) for b in raw["equations"]),
        examples=tuple(
            Example(
                bindings=dict(e["bindings"]),
                expect=e["expect"],
                target=e.get("target"),
                tolerance=e.get("tolerance"),
                source=e.get("source"),
            )
            for e in raw.get("examples", ())
        ),
    )


def load_registry(path: Path | str, *, display: str | None = None) -> Registry:
    """Load and schema-check a registry; InputError (exit 2) when unusable."""
    doc = load_document(path, display=display)
    findings = validate(doc.data, SCHEMA, file=doc.path, locate=doc.locate)
    if findings:
        raise InputError(findings)
    data = doc.data
    article = data.get("article") or {}
    return Registry(
        normalization_id=data["normalization"]["id"],
        rules=tuple(data["normalization"]["rules"]),
        families={k: v["title"] for k, v in data["families"].items()},
        unit_families={
            k: UnitFamily(v["owner"], v["description"]) for k, v in data["unit_families"].items()
        },
        formulas=tuple(_formula(f) for f in data["formulas"]),
        unbound=tuple(
            Unbound(u["index"], u["sha256"], u["unbound_ok"], u.get("reason"))
            for u in data.get("unbound", ())
        ),
        article_name=article.get("name"),
        article_sha256=article.get("sha256"),
        document=doc,
    )
