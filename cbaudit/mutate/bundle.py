"""What a campaign reads from an evidence bundle: its valid fixtures and declared negatives.

This is a read-only view of `bundle.yaml` and its `include:` files (the gate owns running
them). It keeps the check list's `loop:` label, which the negative floors are counted by.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.contract.cases import is_patch_case, load_case
from cbaudit.io import load_document
from cbaudit.model import Finding, InputError, Location
from cbaudit.mutate.campaign import FixtureInput
from cbaudit.mutate.targets import KIND_FIELD_DEFAULTS, KIND_FIXTURE_FIELDS, TARGETS, detect
from cbaudit.oracles.fixtures import load_fixture
from cbaudit.results.paths import REGISTRY_PREFIX, shipped

BUNDLE_FILE = "bundle.yaml"
_LOOP = re.compile(r"(\d+)")
#: Spec fields that may name a `cbaudit.negative-fixtures` collection file.
COLLECTION_FIELDS = ("fixtures", "negatives", "negative_fixtures")


@dataclass(frozen=True)
class DeclaredCheck:
    """One check of a bundle, with the loop its check list belongs to."""

    check_id: str
    kind: str
    loop: str | None
    spec: Mapping[str, Any]
    base_dir: Path
    manifest: str
    pointer: str


@dataclass(frozen=True)
class Bundle:
    """The checks of one bundle and the manifest files they came from."""

    name: str
    root: Path
    checks: tuple[DeclaredCheck, ...]
    files: tuple[Path, ...]


def loop_label(value: Any) -> str | None:
    """ "loop2", "2" and 2 all name loop "2"; anything without digits names none."""
    if value is None or isinstance(value, bool):
        return None
    match = _LOOP.search(str(value))
    return match.group(1) if match else None


def _checked(path: Path, schema: str) -> tuple[Any, str]:
    doc = load_document(path, schema=schema)
    return doc.data, doc.path


def read_bundle(root: Path) -> Bundle:
    """Read `root/bundle.yaml` and its includes (InputError for an unusable manifest)."""
    data, display = _checked(root / BUNDLE_FILE, "bundle")
    files = [root / BUNDLE_FILE]
    checks: list[DeclaredCheck] = []

    def add(items: list[Any], loop: str | None, base: Path, manifest: str) -> None:
        for i, item in enumerate(items):
            checks.append(
                DeclaredCheck(
                    check_id=str(item["id"]),
                    kind=str(item["kind"]),
                    loop=loop_label(item.get("loop")) or loop,
                    spec=item,
                    base_dir=base,
                    manifest=manifest,
                    pointer=f"/checks/{i}",
                )
            )

    add(data.get("checks", []), None, root, display)
    resolved = root.resolve()
    for j, rel in enumerate(data.get("include", [])):
        target = (root / rel).resolve()
        if resolved not in target.parents or not target.is_file():
            raise InputError.at(
                "MUTATE.BUNDLE.INCLUDE",
                f"include {rel!r} is missing or escapes the bundle",
                display,
                pointer=f"/include/{j}",
            )
        inc, inc_display = _checked(root / rel, "check-list")
        files.append(root / rel)
        add(inc["checks"], loop_label(inc.get("loop")), (root / rel).parent, inc_display)
    return Bundle(str(data["bundle"]), root, tuple(checks), tuple(files))


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _inside(check: DeclaredCheck, rel: Any, root: Path) -> Path:
    if not isinstance(rel, str) or not rel:
        raise InputError.at(
            "MUTATE.BUNDLE.PATH", "expected a relative path", check.manifest, pointer=check.pointer
        )
    path = (check.base_dir / rel).resolve()
    if root.resolve() not in path.parents:
        raise InputError.at(
            "MUTATE.BUNDLE.PATH",
            f"path {rel!r} escapes the bundle",
            check.manifest,
            pointer=check.pointer,
        )
    return path


def load_fixture_file(path: Path, display: str, target: str | None = None) -> FixtureInput:
    """A valid fixture file as campaign input; the target is detected unless named."""
    doc = load_document(path, display=display)
    data = doc.data
    if is_patch_case(data):
        case = load_case(path, display=display)
        if case.error is not None:
            raise InputError(case.error)
        data = case.data
    chosen = TARGETS.get(target) if target is not None else detect(data)
    if chosen is None:
        known = ", ".join(TARGETS)
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


def _kind_fixtures(check: DeclaredCheck, root: Path) -> list[tuple[Path, str]]:
    """The valid fixture file(s) a Loop 8-11 check names, with their display names."""
    out: list[tuple[Path, str]] = []
    for name in KIND_FIXTURE_FIELDS[check.kind]:
        rel = check.spec.get(name, KIND_FIELD_DEFAULTS.get(name))
        if isinstance(rel, str) and rel.startswith(REGISTRY_PREFIX):
            file = rel[len(REGISTRY_PREFIX) :]
            if not file or "/" in file or file.startswith("."):
                raise InputError.at(
                    "MUTATE.BUNDLE.PATH",
                    f"bad registry name {file!r}",
                    check.manifest,
                    pointer=check.pointer,
                )
            out.append((shipped(file), f"registry/{file}"))
            continue
        path = _inside(check, rel, root)
        raw = load_document(path).data if path.is_file() else None
        if isinstance(raw, Mapping) and "patch" in raw:
            continue  # a patched fixture is a negative, not a base to mutate
        out.append((path, _display(path, root)))
    return out


def valid_fixtures(bundle: Bundle) -> list[FixtureInput]:
    """Every valid fixture the bundle declares that a mutation target can judge."""
    out: list[FixtureInput] = []
    seen: set[Path] = set()
    for check in bundle.checks:
        found: list[tuple[Path, str]] = []
        if check.kind == "plan_case":
            path = _inside(check, check.spec.get("case"), bundle.root)
            found = [(path, _display(path, bundle.root))]
        elif check.kind == "oracle" and "expect_code" not in check.spec:
            if f"oracle:{check.spec.get('oracle')}" not in TARGETS:
                continue
            path = _inside(check, check.spec.get("fixture"), bundle.root)
            fixture = load_fixture(path, root=bundle.root)
            if fixture.base is not None or fixture.expect_code is not None:
                continue  # a patched fixture is a negative, not a base to mutate
            found = [(path, _display(path, bundle.root))]
        elif check.kind in KIND_FIXTURE_FIELDS and "expect_code" not in check.spec:
            found = _kind_fixtures(check, bundle.root)
        for path, display in found:
            if path in seen:
                continue
            seen.add(path)
            out.append(load_fixture_file(path, display))
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


def declared_negatives(bundle: Bundle) -> list[DeclaredNegative]:
    """Every negative fixture the bundle declares, with its loop and declared code(s)."""
    out: list[DeclaredNegative] = []
    for check in bundle.checks:
        spec = check.spec
        if check.kind == "negative_case":
            path = _inside(check, spec.get("case"), bundle.root)
            codes = _codes(spec.get("expect_code"))
            if not codes and path.is_file():
                codes = _codes(load_document(path).data.get("expect_code"))
            out.append(
                DeclaredNegative(
                    check.loop, check.check_id, _display(path, bundle.root), codes, check.kind
                )
            )
        elif "expect_code" in spec:  # any kind: a check that must be rejected with a code
            rel = spec.get("fixture", spec.get("case"))
            case = (
                _display(_inside(check, rel, bundle.root), bundle.root) if rel else check.check_id
            )
            out.append(
                DeclaredNegative(
                    check.loop, check.check_id, case, _codes(spec.get("expect_code")), check.kind
                )
            )
        elif check.kind == "oracle" and isinstance(spec.get("fixture"), str):
            path = _inside(check, spec.get("fixture"), bundle.root)
            raw = load_document(path).data if path.is_file() else {}
            codes = _codes(raw.get("expect_code")) if isinstance(raw, Mapping) else ()
            if codes:
                out.append(
                    DeclaredNegative(
                        check.loop, check.check_id, _display(path, bundle.root), codes, check.kind
                    )
                )
        for field in COLLECTION_FIELDS:
            rel = spec.get(field)
            if not isinstance(rel, str) or not rel.endswith((".yaml", ".yml", ".json")):
                continue
            path = _inside(check, rel, bundle.root)
            if not path.is_file():
                continue
            data = load_document(path).data
            if not isinstance(data, Mapping) or data.get("kind") != "cbaudit.negative-fixtures":
                continue
            for case in data.get("cases") or []:
                if isinstance(case, Mapping):
                    out.append(
                        DeclaredNegative(
                            check.loop,
                            check.check_id,
                            f"{_display(path, bundle.root)}#{case.get('id')}",
                            _codes(case.get("expect")),
                            check.kind,
                        )
                    )
    return out


def locate_check(check: DeclaredCheck) -> Location:
    """Where a declared check is, for findings about it."""
    return Location(file=check.manifest, pointer=check.pointer)


def problem(code: str, message: str, where: Location) -> Finding:
    """A finding located at a declared check."""
    return Finding(code, message, location=where)
