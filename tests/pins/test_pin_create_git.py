"""`cbaudit pin create --git-dir DIR [--rev REV]`: a manifest from the blobs of a commit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from _pin_trees import CONF, SCHED, git, make_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

_PIN = ("--runtime", "toy", "--runtime-version", "1.0", "--file", SCHED, "--marker",
        f"{SCHED}:9", "--marker", f"{SCHED}:4:cls", "--marker", f"{CONF}:2")  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A git repository with the two toy files in one commit; returns (repo, commit)."""
    for var, value in {
        "GIT_AUTHOR_NAME": "cbaudit tests",
        "GIT_AUTHOR_EMAIL": "tests@cbaudit.invalid",
        "GIT_COMMITTER_NAME": "cbaudit tests",
        "GIT_COMMITTER_EMAIL": "tests@cbaudit.invalid",
    }.items():
        monkeypatch.setenv(var, value)
    return make_repo(tmp_path / "repo")


def test_git_dir_output_is_byte_identical_to_source(cli, tmp_path: Path, repo) -> None:
    """--git-dir at a commit writes the same bytes as --source on its checkout (+ --commit)."""
    root, commit = repo
    from_dir = cli("pin", "create", "--source", root, "--commit", commit, *_PIN)
    from_git = cli("pin", "create", "--git-dir", root, *_PIN)
    assert from_dir.code == 0 and from_git.code == 0, from_git.err
    assert from_git.out == from_dir.out
    assert yaml.safe_load(from_git.out)["commit"] == commit
    for suffix in (".yaml", ".json"):
        a, b = tmp_path / f"dir{suffix}", tmp_path / f"git{suffix}"
        assert cli("pin", "create", "--source", root, "--commit", commit, *_PIN, "-o", a).code == 0
        assert cli("pin", "create", "--git-dir", root, "--rev", commit, *_PIN, "-o", b).code == 0
        assert a.read_bytes() == b.read_bytes()


def test_git_dir_reads_the_rev_not_the_worktree(cli, tmp_path: Path, repo) -> None:
    """--rev picks an older commit; uncommitted edits are never read; the pin verifies."""
    root, first = repo
    before = cli("pin", "create", "--git-dir", root, *_PIN).out
    (root / SCHED).write_text((root / SCHED).read_text() + "# later\n")
    git(root, "commit", "-q", "-am", "later")
    (root / CONF).write_text("edited, not committed\n")
    older = cli("pin", "create", "--git-dir", root, "--rev", "HEAD~1", *_PIN)
    assert older.code == 0 and older.out == before
    out = tmp_path / "pin.yaml"
    assert cli("pin", "create", "--git-dir", root, "--rev", "HEAD~1", *_PIN, "-o", out).code == 0
    assert yaml.safe_load(out.read_text())["commit"] == first
    assert cli("verify-pin", out, "--git-dir", root).code == 0


@pytest.mark.parametrize(
    "where",
    [("--source", "{root}", "--git-dir", "{root}"), (), ("--source", "{root}", "--rev", "HEAD")],
    ids=["both", "neither", "rev-without-git-dir"],
)
def test_source_options_exit_2(cli, tmp_path: Path, repo, where: tuple[str, ...]) -> None:
    """Both --source and --git-dir, neither, or --rev without --git-dir: usage error."""
    root, _ = repo
    out = tmp_path / "pin.yaml"
    r = cli("pin", "create", *(w.format(root=root) for w in where), *_PIN, "-o", out)
    assert r.code == 2 and "Traceback" not in r.err
    assert not out.exists()


def test_unknown_rev_is_commit_missing(cli_proc, tmp_path: Path, repo) -> None:
    """A rev that names no commit: PIN.GIT.COMMIT_MISSING, exit 2, no traceback."""
    root, _ = repo
    out = tmp_path / "pin.yaml"
    r = cli_proc("pin", "create", "--git-dir", root, "--rev", "no-such-rev", *_PIN, "-o", out)
    assert r.code == 2
    assert "PIN.GIT.COMMIT_MISSING" in r.err and "no-such-rev" in r.err
    assert "Traceback" not in r.err
    assert not out.exists()


def test_path_missing_at_rev(cli, tmp_path: Path, repo) -> None:
    """A path that exists only in a later commit is PIN.FILE.MISSING (exit 2) at the older."""
    root, _ = repo
    (root / "pkg" / "new.py").write_text("X = 1\n")
    git(root, "add", "pkg/new.py")
    git(root, "commit", "-q", "-m", "add new.py")
    r = cli("pin", "create", "--git-dir", root, "--rev", "HEAD~1", *_PIN, "--file", "pkg/new.py")
    assert r.code == 2 and "PIN.FILE.MISSING" in r.err
    assert cli("pin", "create", "--git-dir", root, *_PIN, "--file", "pkg/new.py").code == 0


def test_commit_disagreeing_with_rev(cli, repo) -> None:
    """--commit must be the commit --rev names; another id is a usage error."""
    root, commit = repo
    assert cli("pin", "create", "--git-dir", root, "--commit", commit, *_PIN).code == 0
    r = cli("pin", "create", "--git-dir", root, "--commit", "1" * 40, *_PIN)
    assert r.code == 2 and commit in r.err


def test_tag_is_checked_and_its_object_recorded(cli, tmp_path: Path, repo) -> None:
    """--tag must name the pinned commit; an annotated tag's object id is recorded."""
    root, commit = repo
    git(root, "tag", "-a", "v1.0", "-m", "release")
    git(root, "tag", "light", commit)
    r = cli("pin", "create", "--git-dir", root, "--tag", "v1.0", *_PIN)
    assert r.code == 0, r.err
    pin = yaml.safe_load(r.out)
    assert pin["tag"] == "v1.0" and pin["commit"] == commit
    assert pin["tag_object"] == git(root, "rev-parse", "refs/tags/v1.0")
    assert (
        yaml.safe_load(cli("pin", "create", "--git-dir", root, "--tag", "light", *_PIN).out)[
            "tag_object"
        ]
        is None
    )
    out = tmp_path / "pin.yaml"
    assert cli("pin", "create", "--git-dir", root, "--tag", "v1.0", *_PIN, "-o", out).code == 0
    assert cli("verify-pin", out, "--git-dir", root).code == 0


def test_tag_errors_have_their_codes(cli, repo) -> None:
    """A missing tag, one naming another commit, or a wrong --tag-object is exit 2."""
    root, _ = repo
    r = cli("pin", "create", "--git-dir", root, "--tag", "v9", *_PIN)
    assert r.code == 2 and "PIN.GIT.TAG_MISSING" in r.err
    (root / "later.txt").write_text("x")
    git(root, "add", "later.txt")
    git(root, "commit", "-q", "-m", "later")
    git(root, "tag", "-a", "v2", "-m", "later release")
    r = cli("pin", "create", "--git-dir", root, "--rev", "HEAD~1", "--tag", "v2", *_PIN)
    assert r.code == 2 and "PIN.GIT.TAG_MISMATCH" in r.err
    r = cli("pin", "create", "--git-dir", root, "--tag", "v2", "--tag-object", "2" * 40, *_PIN)
    assert r.code == 2 and "PIN.GIT.TAG_OBJECT_MISMATCH" in r.err
