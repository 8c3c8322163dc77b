"""Fixture loading shared by the Loop 8 and Loop 9 oracles.

A fixture is a JSON or YAML mapping. A negative fixture may instead be a patch over a base:

    base: ../preemption_resume.yaml     # relative to this file, inside the bundle
    patch: [ {op: replace, path: /cases/0/declared/outcome, value: pending} ]   # RFC 6902
    expect_code: RESUME.TICKET.MISSING  # or a list; the gate check may declare it instead
    why: one line

Findings about a patched fixture point at the negative file with the pointer into the patched
document. The gate kinds that run these fixtures are in `cbaudit.oracles.gate_kinds`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.jsonpatch import PatchError, apply_patch
from cbaudit.io.loader import load_document
from cbaudit.model import Finding, InputError, Location

Locator = Callable[[str], Location]


@dataclass(frozen=True)
class LoadedFixture:
    data: Mapping[str, Any]
    path: str
    sha256: str
    locate: Locator
    expect_code: tuple[str, ...] = ()


def _codes(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(c, str) for c in raw):
        return tuple(raw)
    return ()


def load_fixture(path: Path, *, display: str, root: Path) -> LoadedFixture:
    """Load `path`, resolving a `base` + `patch` negative fixture (the base stays in `root`)."""
    doc = load_document(path, display=display)
    data = doc.data
    if not (isinstance(data, Mapping) and "base" in data and "patch" in data):
        return LoadedFixture(data, display, doc.sha256, doc.locate)
    base_rel = data["base"]
    if not isinstance(base_rel, str) or not isinstance(data["patch"], list):
        raise InputError.at(
            "FIXTURE.PATCH.INVALID", "base must be a path and patch a list", display, pointer=""
        )
    base_path = (path.parent / base_rel).resolve()
    if root.resolve() not in base_path.parents:
        raise InputError.at(
            "FIXTURE.BASE.ESCAPE",
            f"base {base_rel!r} lies outside {root}",
            display,
            pointer="/base",
        )
    base_doc = load_document(base_path, display=str(Path(display).parent / base_rel))
    if isinstance(base_doc.data, Mapping) and "patch" in base_doc.data:
        raise InputError.at(
            "FIXTURE.BASE.NESTED", "a base must be a plain fixture", display, pointer="/base"
        )
    try:
        patched = apply_patch(base_doc.data, data["patch"])
    except PatchError as err:
        raise InputError(
            Finding("FIXTURE.PATCH.INVALID", str(err), location=doc.locate(f"/patch/{err.index}"))
        ) from err
    if not isinstance(patched, Mapping):
        raise InputError.at(
            "FIXTURE.PATCH.INVALID", "the patched fixture is not a mapping", display
        )

    def locate(pointer: str) -> Location:
        return Location(file=display, pointer=pointer)

    return LoadedFixture(patched, display, doc.sha256, locate, _codes(data.get("expect_code")))
