"""verify-pin / pin create with `--source ARCHIVE`: wheels, zips and source tarballs in place.

A release is published as archives (a wheel, an sdist). Reading members in place lets a user
verify a pin against the exact bytes a registry serves, without unpacking anything.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest
from _pin_trees import CONF, SCHED, manifest_data, write_manifest, write_tree

from cbaudit.io.schemas import validate


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[Path, Path]:
    src = write_tree(tmp_path / "src")
    return src, write_manifest(tmp_path / "pin.yaml", manifest_data(src))


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def _sdist(path: Path, files: dict[str, bytes], top: str = "toy-1.0") -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _files(src: Path) -> dict[str, bytes]:
    return {SCHED: (src / SCHED).read_bytes(), CONF: (src / CONF).read_bytes()}


def _codes(out: str) -> list[str]:
    return sorted(f["code"] for r in json.loads(out)["results"] for f in r["findings"])


@pytest.mark.parametrize("kind", ["whl", "tar.gz"])
def test_archive_verifies_like_the_tree(cli, tmp_path: Path, pinned, kind: str) -> None:  # type: ignore[no-untyped-def]
    """A wheel (members at the root) and an sdist (under one folder) both verify."""
    src, man = pinned
    make = _wheel if kind == "whl" else _sdist
    archive = make(tmp_path / f"toy-1.0.{kind}", _files(src))
    r = cli("verify-pin", man, "--source", archive, "--format", "json")
    assert r.code == 0, r.out
    report = json.loads(r.out)
    assert report["summary"]["source"] == "archive"
    assert report["summary"]["markers_ok"] == report["summary"]["markers_checked"] == 4


def test_changed_member_is_a_sha256_finding(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    src, man = pinned
    files = _files(src)
    files[CONF] = b"POLICY = 'lifo'\nMAX_SEQS = 4\n"
    archive = _sdist(tmp_path / "toy.tar.gz", files)
    r = cli("verify-pin", man, "--source", archive, "--format", "json")
    assert r.code == 1
    assert "PIN.FILE.SHA256" in _codes(r.out)
    assert "the archive member" in r.out


def test_missing_member_is_file_missing(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    src, man = pinned
    archive = _wheel(tmp_path / "toy.whl", {SCHED: _files(src)[SCHED]})
    r = cli("verify-pin", man, "--source", archive, "--format", "json")
    assert r.code == 1 and "PIN.FILE.MISSING" in _codes(r.out)


def test_link_member_is_refused(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    """A symlink inside a tarball is never followed: PIN.PATH.SYMLINK."""
    src, man = pinned
    path = tmp_path / "toy.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        data = _files(src)[SCHED]
        info = tarfile.TarInfo(f"toy-1.0/{SCHED}")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo(f"toy-1.0/{CONF}")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
    r = cli("verify-pin", man, "--source", path, "--format", "json")
    assert r.code == 1 and "PIN.PATH.SYMLINK" in _codes(r.out)


def test_unusable_archives_are_exit_2(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    """A corrupt archive, or a plain file that is no archive, is unusable input."""
    _, man = pinned
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    r = cli("verify-pin", man, "--source", broken)
    assert r.code == 2 and "not a readable archive" in r.err and "Traceback" not in r.err
    plain = tmp_path / "notes.txt"
    plain.write_text("hello")
    r = cli("verify-pin", man, "--source", plain)
    assert r.code == 2 and "not an archive" in r.err


def test_pin_create_from_an_archive_equals_the_tree(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    src, _ = pinned
    archive = _sdist(tmp_path / "toy.tar.gz", _files(src))
    args = ["--file", SCHED, "--file", CONF, "--marker", f"{SCHED}:4:cls"]
    meta = ["--runtime", "toy", "--runtime-version", "1.0"]
    a = cli("pin", "create", "--source", src, *args, *meta)
    b = cli("pin", "create", "--source", archive, *args, *meta)
    assert a.code == b.code == 0, (a.err, b.err)
    assert a.out == b.out


def test_attestation_names_the_archive_source(cli, tmp_path: Path, pinned) -> None:  # type: ignore[no-untyped-def]
    src, man = pinned
    archive = _wheel(tmp_path / "toy.whl", _files(src))
    att = tmp_path / "att.json"
    r = cli("verify-pin", man, "--source", archive, "--attest", att)
    assert r.code == 0, r.err
    statement = json.loads(att.read_text(encoding="utf-8"))
    assert validate(statement, "pin-attestation") == []
    assert "archive" in json.dumps(statement)
