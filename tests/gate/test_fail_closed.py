"""The gate fails closed: every check of the shipped bundles (M5.2, the vLLM conformance corpus)
refuses an unknown key, a misspelled known key and a path that leaves the bundle, each with its
code, when the bundle loads."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from repo_paths import CONFORMANCE, M52

from cbaudit.checks.bundle import DeclaredCheck, declare, load_bundle
from cbaudit.checks.parse import path_fields
from cbaudit.gate.runner import run_gate
from cbaudit.kinds import KINDS
from cbaudit.model import ExitCode, InputError

CHECKS = load_bundle(M52, KINDS).checks + load_bundle(CONFORMANCE, KINDS).checks
OUTSIDE = Path(__file__).resolve()  # an absolute path outside the bundle (this file)


def _redeclare(check: DeclaredCheck, entry: dict[str, Any]) -> DeclaredCheck:
    return declare(
        entry,
        bundle=check.bundle,
        base_dir=check.base_dir,
        manifest=check.manifest,
        pointer=check.pointer,
        bundle_root=check.bundle_root,
        root=check.root,
        kinds=KINDS,
    )


def _found(check: DeclaredCheck) -> set[tuple[str, str]]:
    return {(f.code, f.location.pointer or "") for f in check.errors}


def _misspelled(key: str) -> str:
    """A deterministic typo: the second-to-last character dropped (`expected` -> `expectd`)."""
    return key[:-2] + key[-1] if len(key) > 2 else key + key[-1]


def _keyed(entry: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(pointer suffix, mapping) of the entry and of a negative check's inner check."""
    out = [("", entry)]
    if isinstance(entry.get("check"), dict):
        out.append(("/check", entry["check"]))
    return out


def test_every_check_of_the_bundle_parses() -> None:
    """The bundle as shipped: every entry parses (the mutations below start from a clean one)."""
    assert len(CHECKS) == 305 + 4  # M5.2 and the conformance corpus (some report several parts)
    assert [c.check_id for c in CHECKS if c.errors] == []


@pytest.mark.parametrize("check", CHECKS, ids=[c.check_id for c in CHECKS])
def test_unknown_and_misspelled_keys_are_refused(check: DeclaredCheck) -> None:
    """An unknown key, and each key the check uses misspelled, is GATE.SPEC.UNKNOWN_FIELD at
    that key (in the entry, and in a negative check's inner check)."""
    for where, mapping in _keyed(dict(check.entry)):
        keys = [k for k in mapping if k not in ("id", "kind")]
        for old, new in [("", "zz_unknown"), *((k, _misspelled(k)) for k in keys)]:
            entry = copy.deepcopy(dict(check.entry))
            target = entry if not where else entry["check"]
            if old:
                target[new] = target.pop(old)
            else:
                target[new] = 1
            pointer = f"{check.pointer}{where}/{new}"
            found = _found(_redeclare(check, entry))
            assert ("GATE.SPEC.UNKNOWN_FIELD", pointer) in found, (old, new, found)


def _path_cases() -> list[tuple[DeclaredCheck, str, str]]:
    out = []
    for check in CHECKS:
        assert check.check_kind is not None
        schema = check.check_kind.schema_document()
        found = list(path_fields(schema, check.entry))
        inner = check.entry.get("check")
        if isinstance(inner, dict):
            kind = KINDS[inner["kind"]]
            found += [
                ("/check" + at, v, f) for at, v, f in path_fields(kind.schema_document(), inner)
            ]
        out += [(check, at, form) for at, _, form in found]
    return out


PATH_CASES = _path_cases()


def test_every_kind_that_reads_files_has_path_fields_here() -> None:
    """The path cases cover every kind of the bundle that names a file in its spec."""
    kinds = {c.kind for c, _, _ in PATH_CASES}
    assert kinds >= {
        "plan_case",
        "negative_case",
        "trace",
        "replay",
        "replay_report",
        "policy_snapshots",
        "static_efficiency",
        "oracle",
        "fairness_starvation",
        "fairness_replay",
        "preemption_resume",
        "incident_replay",
        "compare_results",
        "result_registry_audit",
        "one_control_sensitivity",
        "failure_closure",
        "loop11_negative",
        "pin",
        "formula_audit",
        "bench_results",
        "mutation",
        "negative_check",
    }
    assert len(PATH_CASES) > len(CHECKS)


def _set(entry: dict[str, Any], pointer: str, value: Any) -> None:
    *parents, last = pointer.strip("/").split("/")
    node: Any = entry
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


@pytest.mark.parametrize(
    ("check", "at", "form"),
    PATH_CASES,
    ids=[f"{c.check_id}{at}" for c, at, _ in PATH_CASES],
)
@pytest.mark.parametrize("escape", ["../../../../outside.json", str(OUTSIDE)])
def test_paths_out_of_the_bundle_are_refused(
    check: DeclaredCheck, at: str, form: str, escape: str
) -> None:
    """Each path-valued field pointed outside the bundle (relative or absolute) is
    GATE.PATH.ESCAPE at that field, before anything runs."""
    entry = copy.deepcopy(dict(check.entry))
    _set(entry, at, escape)
    found = _found(_redeclare(check, entry))
    assert ("GATE.PATH.ESCAPE", f"{check.pointer}{at}") in found, found


# -------------------------------------------------------------- manifests and a whole run


@pytest.fixture
def bundle_copy(tmp_path: Path) -> Path:
    """A private copy of the M5.2 bundle."""
    root = tmp_path / "m52"
    shutil.copytree(M52, root)
    return root


def test_renamed_expected_key_no_longer_passes(bundle_copy: Path) -> None:
    """The issue's example: `expected:` renamed `expectd:` in lesson/checks.yaml, and a number of
    lesson/expected/static.json changed, is GATE.SPEC.UNKNOWN_FIELD (exit 2), not a pass."""
    checks = bundle_copy / "lesson" / "checks.yaml"
    text = checks.read_text(encoding="utf-8")
    checks.write_text(
        text.replace("expected: expected/static.json", "expectd: expected/static.json")
    )
    static = bundle_copy / "lesson" / "expected" / "static.json"
    data = json.loads(static.read_text(encoding="utf-8"))
    data["iterations"] = data["iterations"] + 7
    static.write_text(json.dumps(data), encoding="utf-8")
    report = run_gate([bundle_copy], jobs=2, select="lesson-static")
    [result] = report.results
    assert [(f.code, f.location.pointer) for f in result.findings] == [
        ("GATE.SPEC.UNKNOWN_FIELD", "/checks/0/expectd")
    ]
    assert "did you mean 'expected'" in result.findings[0].message
    assert result.findings[0].location.line is not None
    assert report.exit_code is ExitCode.UNUSABLE


@pytest.mark.parametrize(
    ("file", "old", "new", "pointer"),
    [
        ("bundle.yaml", "title:", "titel: x\ntitle:", "/titel"),
        ("loop3/checks.yaml", "loop:", "lop: x\nloop:", "/lop"),
    ],
)
def test_unknown_keys_in_manifests_are_refused(
    bundle_copy: Path, file: str, old: str, new: str, pointer: str
) -> None:
    """bundle.yaml and an included check list refuse an unknown key (exit 2, located)."""
    path = bundle_copy / file
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_bundle(bundle_copy, KINDS)
    assert [(f.code, f.location.pointer) for f in err.value.findings] == [
        ("GATE.SPEC.UNKNOWN_FIELD", pointer)
    ]
