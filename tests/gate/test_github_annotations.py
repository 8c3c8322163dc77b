"""GitHub annotations name files relative to the repository, whatever the working directory
and however the bundle was named on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_test_kinds import ALL

from cbaudit.gate.locations import repository_paths


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """repo/evidence/b with a check failing in data/x.json and one failing in its manifest."""
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)
    bundle = tmp_path / "repo" / "evidence" / "b"
    (bundle / "data").mkdir(parents=True)
    (bundle / "data" / "x.json").write_text("{}\n")
    (bundle / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: b\ntitle: B\nchecks:\n"
        "  - {id: at, kind: fail_at, at: data/x.json}\n"
        "  - {id: manifest, kind: echo, fail_code: TEST.MANIFEST.WRONG}\n"
    )
    return tmp_path / "repo"


def _annotations(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("::error")]


@pytest.mark.parametrize("how", ["relative", "absolute", "elsewhere"])
def test_annotations_carry_repository_relative_paths(
    repo: Path, cli, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:  # type: ignore[no-untyped-def]
    """From the checkout, from another folder, with a relative or absolute bundle path: the
    annotation's file= is the path from the repository root."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    if how == "elsewhere":
        other = repo.parent / "other"
        other.mkdir()
        monkeypatch.chdir(other)
        target = "../repo/evidence"
    else:
        monkeypatch.chdir(repo)
        target = "evidence" if how == "relative" else str(repo / "evidence")
    run = cli("gate", target, "-j", "1", "-q")
    assert run.code == 1
    lines = _annotations(run.err)
    assert lines[0].startswith("::error file=evidence/b/data/x.json,title=TEST.AT.WRONG,line=2::")
    assert lines[1].startswith("::error file=evidence/b/bundle.yaml,title=TEST.MANIFEST.WRONG")


def test_a_file_outside_the_repository_gets_no_file(tmp_path: Path) -> None:
    """A file that is not inside the repository is annotated without file=, never a wrong one."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "outside.json").write_text("{}")
    relpath = repository_paths({}, tmp_path / "repo", cwd=tmp_path)
    assert relpath("outside.json", "b:c") is None
    assert relpath(str(tmp_path / "outside.json"), "b:c") is None
    assert relpath("<mutant>", "b:c") is None
