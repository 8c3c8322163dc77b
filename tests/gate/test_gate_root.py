"""What a check may read: its bundle, plus a root the bundle declares or `--root` permits.

Nothing is resolved from the working directory or from where a `pyproject.toml` happens to be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_test_kinds import ALL

from cbaudit.contract.cases import load_case
from cbaudit.gate.runner import run_gate
from cbaudit.model import ExitCode, InputError


@pytest.fixture(autouse=True)
def _test_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)


def _repo(tmp_path: Path, *, git: bool = True, root: str | None = None, file: object) -> Path:
    """repo/{.git, pyproject.toml, pinned/data.txt, evidence/b/bundle.yaml}; returns the bundle."""
    repo = tmp_path / "repo"
    (repo / "pinned").mkdir(parents=True)
    (repo / "pinned" / "data.txt").write_text("ok\n")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    if git:
        (repo / ".git").mkdir()
    bundle = repo / "evidence" / "b"
    bundle.mkdir(parents=True)
    head = "schema_version: 1\nbundle: b\ntitle: B\n"
    if root is not None:
        head += f"root: {json.dumps(root)}\n"
    check = {"id": "r", "kind": "read", "file": file}
    (bundle / "bundle.yaml").write_text(head + f"checks:\n  - {json.dumps(check)}\n")
    return bundle


def _codes(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.code for f in report.findings}


def _raised(bundle: Path, **kw: object) -> str:
    with pytest.raises(InputError) as err:
        run_gate([bundle], jobs=1, **kw)  # type: ignore[arg-type]
    return err.value.findings[0].code


def test_repo_path_without_a_root_is_an_escape_even_beside_pyproject(tmp_path: Path) -> None:
    """A pyproject.toml above the bundle is no root: repo_path is GATE.PATH.ESCAPE, exit 2."""
    bundle = _repo(tmp_path, file={"repo_path": "pinned/data.txt"})
    report = run_gate([bundle], jobs=1)
    assert _codes(report) == {"GATE.PATH.ESCAPE"}
    assert report.exit_code is ExitCode.UNUSABLE


def test_a_relative_path_out_of_the_bundle_is_an_escape(tmp_path: Path) -> None:
    """Without a root, `../../pinned/data.txt` leaves the bundle: GATE.PATH.ESCAPE."""
    bundle = _repo(tmp_path, file="../../pinned/data.txt")
    assert _codes(run_gate([bundle], jobs=1)) == {"GATE.PATH.ESCAPE"}


@pytest.mark.parametrize("file", [{"repo_path": "pinned/data.txt"}, "../../pinned/data.txt"])
def test_a_declared_root_may_be_read(tmp_path: Path, file: object) -> None:
    """`root: ../..` lets the bundle's checks read in the repository above it."""
    bundle = _repo(tmp_path, root="../..", file=file)
    report = run_gate([bundle], jobs=1)
    assert report.exit_code is ExitCode.OK, _codes(report)


def test_the_root_confines_what_is_read(tmp_path: Path) -> None:
    """A repo_path leaving the declared root is GATE.PATH.ESCAPE."""
    bundle = _repo(tmp_path, root="../..", file={"repo_path": "../outside.txt"})
    (tmp_path / "outside.txt").write_text("ok\n")
    assert _codes(run_gate([bundle], jobs=1)) == {"GATE.PATH.ESCAPE"}


@pytest.mark.parametrize(
    ("root", "git"),
    [
        ("../..", False),  # no git work tree: a root above the bundle needs --root
        ("../../..", True),  # above the git work tree
        ("../sibling", True),  # not the bundle's folder or one above it
        ("/tmp", True),  # absolute
    ],
)
def test_an_unconfined_declared_root_is_refused(tmp_path: Path, root: str, git: bool) -> None:
    """A declared root must lie between the bundle and the top of its git work tree."""
    bundle = _repo(tmp_path, git=git, root=root, file={"repo_path": "pinned/data.txt"})
    (bundle.parent / "sibling").mkdir()
    assert _raised(bundle) == "GATE.ROOT.INVALID"


def test_root_option_permits_and_overrides(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`--root DIR` permits reading in DIR without a declaration (and without git)."""
    bundle = _repo(tmp_path, git=False, file={"repo_path": "pinned/data.txt"})
    assert cli("gate", bundle, "-j", "1", "-q").code == 2
    assert cli("gate", bundle, "-j", "1", "-q", "--root", tmp_path / "repo").code == 0


def test_root_option_must_hold_the_bundle(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A --root that does not contain the bundle is GATE.ROOT.INVALID, exit 2."""
    bundle = _repo(tmp_path, file={"repo_path": "pinned/data.txt"})
    other = tmp_path / "other"
    other.mkdir()
    assert _raised(bundle, root=other) == "GATE.ROOT.INVALID"
    run = cli("gate", bundle, "--root", other)
    assert run.code == 2 and "GATE.ROOT.INVALID" in run.err


def test_a_case_base_outside_the_bundle_is_refused(tmp_path: Path) -> None:
    """In the gate a negative case's base must stay in the bundle: CASE.BASE.ESCAPE."""
    (tmp_path / "valid.case.json").write_text("{}")
    bundle = tmp_path / "b"
    bundle.mkdir()
    op = {"op": "replace", "path": "/plan", "value": {}}
    patch = {"base": "../valid.case.json", "patch": [op], "expect_code": "PLAN.X"}
    (bundle / "neg.case.json").write_text(json.dumps(patch))
    case = load_case(bundle / "neg.case.json", root=bundle)
    assert case.error is not None
    assert [f.code for f in case.error] == ["CASE.BASE.ESCAPE"]
    assert case.error[0].location.pointer == "/base"
