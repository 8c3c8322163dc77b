"""What a campaign reads from an evidence bundle: its valid fixtures and declared negatives.

The bundle is read by the one loader (`cbaudit.checks.bundle.load_bundle`, every entry parsed
with the kinds the caller passes); each kind says which files of its checks are valid fixtures
to mutate (`CheckKind.mutation`). The check list's `loop:` label is what the negative floors
are counted by.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.checks.bundle import Bundle, DeclaredCheck
from cbaudit.checks.interface import CheckKind, Target, targets_of
from cbaudit.contract.cases import is_patch_case, load_case
from cbaudit.io import load_document
from cbaudit.model import InputError
from cbaudit.mutate.campaign import FixtureInput
from cbaudit.mutate.targets import detect

_LOOP = re.compile(r"(\d+)")
#: Spec fields that may name a `cbaudit.negative-fixtures` collection file.
COLLECTION_FIELDS = ("fixtures", "negatives", "negative_fixtures")


def loop_label(value: Any) -> str | None:
    """ "loop2", "2", "Loop 2" and 2 all name loop "2"; anything without digits names none."""
    if value is None or isinstance(value, bool):
        return None
    match = _LOOP.search(str(value))
    return match.group(1) if match else None


def load_fixture_file(
    path: Path, display: str, targets: Mapping[str, Target], target: str | None = None
) -> FixtureInput:
    """A valid fixture file as campaign input; the target is detected unless named."""
    doc = load_document(path, display=display)
    data = doc.data
    if is_patch_case(data):
        case = load_case(path, display=display)
        if case.error is not None:
            raise InputError(case.error)
        data = case.data
    chosen = targets.get(target) if target is not None else detect(data, targets)
    if chosen is None:
        known = ", ".join(targets)
        raise InputError.at(
            "MUTATE.FIXTURE.UNKNOWN_TARGET",
            f"no mutation target recognises this fixture (known: {known})",
            display,
        )
    return FixtureInput(
        display,
        data,
        chosen.name,
        source=doc.text,
        locate=doc.locate,
        directory=path.resolve().parent,
    )


def valid_fixtures(bundle: Bundle, kinds: Mapping[str, CheckKind[Any]]) -> list[FixtureInput]:
    """Every valid fixture the bundle declares that a mutation target can judge.

    A check that did not parse is unusable input here too: its fixtures cannot be known.
    """
    targets = targets_of(kinds)
    out: list[FixtureInput] = []
    seen: set[Path] = set()
    for check in bundle.checks:
        if check.spec is None or check.check_kind is None:
            raise InputError(check.errors)
        mutation = check.check_kind.mutation
        if mutation is None or mutation.fixtures is None:
            continue
        for found in mutation.fixtures(check.spec, check.context(kinds)):
            if found.path in seen:
                continue
            seen.add(found.path)
            out.append(load_fixture_file(found.path, found.display, targets))
    return out


@dataclass(frozen=True)
class DeclaredNegative:
    """One negative fixture a bundle declares, and the code(s) it must be rejected with."""

    loop: str | None
    check_id: str
    case: str  # the fixture (or collection case) it names
    codes: tuple[str, ...]
    kind: str


def _codes(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return ()


def _inside(check: DeclaredCheck, rel: Any) -> Path:
    return check.context({}).resolve(rel)


def _display(path: Path, check: DeclaredCheck) -> str:
    return check.context({}).display(path)


def declared_negatives(bundle: Bundle) -> list[DeclaredNegative]:
    """Every negative fixture the bundle declares, with its loop and declared code(s)."""
    out: list[DeclaredNegative] = []
    for check in bundle.checks:
        spec, loop = check.entry, loop_label(check.entry.get("loop"))
        if check.kind == "negative_case":
            path = _inside(check, spec.get("case"))
            codes = _codes(spec.get("expect_code"))
            if not codes and path.is_file():
                codes = _codes(load_document(path).data.get("expect_code"))
            out.append(
                DeclaredNegative(loop, check.check_id, _display(path, check), codes, check.kind)
            )
        elif "expect_code" in spec:  # any kind: a check that must be rejected with a code
            rel = spec.get("fixture", spec.get("case"))
            case = _display(_inside(check, rel), check) if rel else check.check_id
            out.append(
                DeclaredNegative(
                    loop, check.check_id, case, _codes(spec.get("expect_code")), check.kind
                )
            )
        elif check.kind == "oracle" and isinstance(spec.get("fixture"), str):
            path = _inside(check, spec.get("fixture"))
            raw = load_document(path).data if path.is_file() else {}
            codes = _codes(raw.get("expect_code")) if isinstance(raw, Mapping) else ()
            if codes:
                out.append(
                    DeclaredNegative(loop, check.check_id, _display(path, check), codes, check.kind)
                )
        for field in COLLECTION_FIELDS:
            rel = spec.get(field)
            if not isinstance(rel, str) or not rel.endswith((".yaml", ".yml", ".json")):
                continue
            path = _inside(check, rel)
            if not path.is_file():
                continue
            data = load_document(path).data
            if not isinstance(data, Mapping) or data.get("kind") != "cbaudit.negative-fixtures":
                continue
            for case in data.get("cases") or []:
                if isinstance(case, Mapping):
                    out.append(
                        DeclaredNegative(
                            loop,
                            check.check_id,
                            f"{_display(path, check)}#{case.get('id')}",
                            _codes(case.get("expect")),
                            check.kind,
                        )
                    )
    return out
