"""`cbaudit new bundle`: a bundle that passes the gate as generated; refusals; atomic writes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cbaudit.gate.runner import run_gate
from cbaudit.gate.scaffold import bundle_files, write_bundle
from cbaudit.model import CheckStatus, InputError


def test_a_new_bundle_passes_the_gate_as_generated(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Its replay check passes and its negative is rejected for the declared reason."""
    run = cli("new", "bundle", "mine", "--dir", tmp_path)
    assert run.code == 0
    report = run_gate([tmp_path / "mine"], jobs=1)
    assert [(r.check, r.outcome) for r in report.results] == [
        ("replay", CheckStatus.PASSED),
        ("negative_check", CheckStatus.PASSED),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no temporary left


def test_the_article_is_hashed_not_copied(tmp_path: Path, cli: Callable[..., Any]) -> None:
    article = tmp_path / "article.md"
    article.write_text("One claim: \\[ x = 1 \\]\n", encoding="utf-8")
    assert cli("new", "bundle", "doc", "--article", article, "--dir", tmp_path).code == 0
    text = (tmp_path / "doc" / "bundle.yaml").read_text(encoding="utf-8")
    assert f"sha256: {hashlib.sha256(article.read_bytes()).hexdigest()}" in text
    assert "formula-audit" in (tmp_path / "doc" / "README.md").read_text(encoding="utf-8")
    assert not any(p.name == "article.md" for p in (tmp_path / "doc").rglob("*"))


def test_an_empty_folder_is_filled(tmp_path: Path, cli: Callable[..., Any]) -> None:
    (tmp_path / "mine").mkdir()
    assert cli("new", "bundle", "mine", "--dir", tmp_path).code == 0
    assert (tmp_path / "mine" / "claims" / "checks.yaml").is_file()


def test_an_existing_folder_is_never_overwritten(
    tmp_path: Path, cli_proc: Callable[..., Any]
) -> None:
    """A non-empty target (or a file) is refused with a located one-line error, exit 2."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me", encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    for name in ("mine", "afile"):
        run = cli_proc("new", "bundle", name, "--dir", tmp_path)
        assert run.code == 2
        assert "NEW.TARGET.EXISTS" in run.err and "Traceback" not in run.err
        assert len(run.err.strip().splitlines()) == 1
    assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["new", "bundle", "Bad Name"], "bundle name"),
        (["new", "bundle", "ok", "--dir", "no-such-parent"], "NEW.PARENT.MISSING"),
        (["new", "bundle", "ok", "--article", "no-such-article.md"], "LOAD.NOT_FOUND"),
    ],
)
def test_unusable_invocations_exit_2(
    tmp_path: Path, cli_proc: Callable[..., Any], args: list[str], needle: str, monkeypatch: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    run = cli_proc(*args)
    assert run.code == 2 and needle in run.err and "Traceback" not in run.err
    assert list(tmp_path.iterdir()) == []


def test_a_write_that_fails_leaves_nothing(tmp_path: Path) -> None:
    """The files go to a hidden folder renamed into place at the end; a failure on the way
    removes it and leaves no target."""

    class Boom(dict[str, str]):
        def items(self) -> Any:
            yield "bundle.yaml", "x"
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_bundle(tmp_path, "mine", Boom())
    assert list(tmp_path.iterdir()) == []


def test_names_follow_the_bundle_schema() -> None:
    with pytest.raises(ValueError, match="bundle name"):
        bundle_files("../escape")
    assert "bundle: a.b-c_1" in bundle_files("a.b-c_1")["bundle.yaml"]
    with pytest.raises(InputError):
        write_bundle(Path("/no/such/parent"), "x", {})


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o077, 0o700)])
def test_the_new_folder_gets_mkdirs_mode_under_the_umask(
    tmp_path: Path, umask: int, mode: int
) -> None:
    """The bundle is staged in a mkdtemp folder (0700) and renamed into place: it gets the mode
    mkdir() would give, so a private umask keeps it private."""
    import os

    old = os.umask(umask)
    try:
        target = write_bundle(tmp_path, "mine", {"a.txt": "x"})
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == mode
