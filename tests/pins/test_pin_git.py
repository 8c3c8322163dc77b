"""verify-pin --git-dir: blobs read from the pinned commit, tag -> commit, line-ending filters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from _pin_trees import CONF, SCHED, git, make_repo, manifest_data, write_manifest

from cbaudit.pins.digests import git_blob_id

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _codes(out: str) -> list[str]:
    return sorted(f["code"] for r in json.loads(out)["results"] for f in r["findings"])


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository with the toy tree committed; returns (repo, commit)."""
    return make_repo(tmp_path / "repo")


def test_blob_id_matches_git(repo) -> None:
    """git_blob_id equals the id git stores for the same bytes."""
    root, _ = repo
    assert git_blob_id((root / SCHED).read_bytes()) == git(root, "rev-parse", f"HEAD:{SCHED}")


def test_git_dir_verifies_commit_and_annotated_tag(cli, tmp_path: Path, repo) -> None:
    """With commit, tag and tag object recorded, --git-dir passes with no finding."""
    root, commit = repo
    git(root, "tag", "-a", "v1.0", "-m", "release")
    tag_object = git(root, "rev-parse", "refs/tags/v1.0")
    data = manifest_data(root, tag="v1.0", commit=commit, tag_object=tag_object)
    man = write_manifest(tmp_path / "pin.yaml", data)
    r = cli("verify-pin", man, "--git-dir", root, "--format", "json")
    assert r.code == 0, r.out
    assert _codes(r.out) == []


def test_git_dir_reads_the_commit_not_the_worktree(cli, tmp_path: Path, repo) -> None:
    """Uncommitted edits in the work tree do not affect --git-dir verification."""
    root, commit = repo
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, commit=commit))
    (root / SCHED).write_text("edited but not committed\n")
    assert cli("verify-pin", man, "--git-dir", root).code == 0
    assert cli("verify-pin", man, "--source", root).code == 1


def test_commit_missing(cli, tmp_path: Path, repo) -> None:
    """A commit absent from the repository gives PIN.GIT.COMMIT_MISSING and checks no file."""
    root, _ = repo
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, commit="1" * 40))
    r = cli("verify-pin", man, "--git-dir", root, "--format", "json")
    assert r.code == 1
    assert _codes(r.out) == ["PIN.GIT.COMMIT_MISSING"]
    statuses = [res["status"] for res in json.loads(r.out)["results"]]
    assert statuses.count("not_run") == 2


def test_tag_pointing_elsewhere(cli, tmp_path: Path, repo) -> None:
    """A tag that names another commit gives PIN.GIT.TAG_MISMATCH."""
    root, commit = repo
    (root / "extra.txt").write_text("x\n")
    git(root, "add", "extra.txt")
    git(root, "commit", "-q", "-m", "later")
    git(root, "tag", "v1.0")  # lightweight, on the later commit
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, tag="v1.0", commit=commit))
    r = cli("verify-pin", man, "--git-dir", root, "--format", "json")
    assert r.code == 1
    assert _codes(r.out) == ["PIN.GIT.TAG_MISMATCH"]


def test_tag_object_mismatch_and_unrecorded(cli, tmp_path: Path, repo) -> None:
    """A wrong tag object is an error; an unrecorded annotated tag is only a note."""
    root, commit = repo
    git(root, "tag", "-a", "v1.0", "-m", "release")
    wrong = manifest_data(root, tag="v1.0", commit=commit, tag_object="2" * 40)
    r = cli(
        "verify-pin", write_manifest(tmp_path / "a.yaml", wrong), "--git-dir", root, "-f", "json"
    )
    assert r.code == 1 and _codes(r.out) == ["PIN.GIT.TAG_OBJECT_MISMATCH"]
    plain = manifest_data(root, tag="v1.0", commit=commit)
    r = cli(
        "verify-pin", write_manifest(tmp_path / "b.yaml", plain), "--git-dir", root, "-f", "json"
    )
    assert r.code == 0 and _codes(r.out) == ["PIN.GIT.TAG_OBJECT_UNRECORDED"]


def test_tag_missing_is_a_warning_when_commit_verified(cli, tmp_path: Path, repo) -> None:
    """A tag absent from the clone is a warning when the commit itself is present."""
    root, commit = repo
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, tag="v9", commit=commit))
    r = cli("verify-pin", man, "--git-dir", root, "--format", "json")
    assert r.code == 0 and _codes(r.out) == ["PIN.GIT.TAG_MISSING"]


def test_tag_alone_resolves_the_commit(cli, tmp_path: Path, repo) -> None:
    """A manifest with a tag and no commit is verified at the tag's commit."""
    root, _ = repo
    git(root, "tag", "v1.0")
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, tag="v1.0"))
    assert cli("verify-pin", man, "--git-dir", root).code == 0


def test_crlf_checkout_versus_stored_blob(cli, tmp_path: Path, repo) -> None:
    """A CRLF-filtered checkout gets the EOL hint with --source; --git-dir hashes the blob."""
    root, commit = repo
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, commit=commit))
    for rel in (SCHED, CONF):
        data = (root / rel).read_bytes()
        (root / rel).write_bytes(data.replace(b"\n", b"\r\n"))  # what core.autocrlf does
    r = cli("verify-pin", man, "--source", root, "--format", "json")
    assert r.code == 0 and _codes(r.out) == ["PIN.FILE.CHECKOUT_EOL"] * 2
    r = cli("verify-pin", man, "--git-dir", root, "--format", "json")
    assert r.code == 0 and _codes(r.out) == []


def test_git_symlink_is_not_followed(cli, tmp_path: Path, repo) -> None:
    """A pinned path that is a symlink in the commit gives PIN.PATH.SYMLINK."""
    root, _ = repo
    os.symlink("/etc/hostname", root / "link.py")
    git(root, "add", "link.py")
    git(root, "commit", "-q", "-m", "link")
    commit = git(root, "rev-parse", "HEAD")
    data = manifest_data(root, commit=commit)
    data["files"][1]["path"] = "link.py"  # type: ignore[index]
    data["files"][1]["markers"] = []  # type: ignore[index]
    r = cli(
        "verify-pin", write_manifest(tmp_path / "p.yaml", data), "--git-dir", root, "-f", "json"
    )
    assert _codes(r.out) == ["PIN.PATH.SYMLINK"]


def test_not_a_repository(cli, tmp_path: Path, repo) -> None:
    """--git-dir on a plain directory is a usage error (exit 2)."""
    root, commit = repo
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, commit=commit))
    plain = tmp_path / "plain"
    plain.mkdir()
    env_ceiling = os.environ.get("GIT_CEILING_DIRECTORIES")
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    try:
        assert cli("verify-pin", man, "--git-dir", plain).code == 2
    finally:
        if env_ceiling is None:
            del os.environ["GIT_CEILING_DIRECTORIES"]
        else:
            os.environ["GIT_CEILING_DIRECTORIES"] = env_ceiling


def test_bare_repository(cli, tmp_path: Path, repo) -> None:
    """A bare clone (no work tree at all) verifies from its objects."""
    root, commit = repo
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(bare)], check=True)
    man = write_manifest(tmp_path / "pin.yaml", manifest_data(root, commit=commit))
    assert cli("verify-pin", man, "--git-dir", bare).code == 0
