"""Fixture loading shared by the Loop 8 and Loop 9 oracles.

A fixture is a JSON or YAML mapping. A negative fixture may instead be a patch over a base:

    base: ../preemption_resume.yaml     # relative to this file, inside the bundle
    patch: [ {op: replace, path: /cases/0/declared/outcome, value: pending} ]   # RFC 6902
    expect_code: RESUME.TICKET.MISSING  # or a list; the gate check may declare it instead
    why: one line

Findings about a patched fixture point at the negative file with the pointer into the patched
document (the resolving is shared with the oracle fixtures in `cbaudit.io.patched`). The gate
kinds that run these fixtures are in `cbaudit.oracles.gate_kinds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.io.patched import PatchCodes, load_patched
from cbaudit.model.findings import Locator


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


CODES = PatchCodes(
    escape="FIXTURE.BASE.ESCAPE",
    nested="FIXTURE.BASE.NESTED",
    invalid="FIXTURE.PATCH.INVALID",
    nested_keys=("patch",),
    nested_message="a base must be a plain fixture",
)


def load_fixture(path: Path, *, display: str, root: Path) -> LoadedFixture:
    """Load `path`, resolving a `base` + `patch` negative fixture (the base stays in `root`)."""
    loaded = load_patched(path, display=display, root=root, codes=CODES)
    return LoadedFixture(
        loaded.data, loaded.path, loaded.sha256, loaded.locate, _codes(loaded.expect_code)
    )
