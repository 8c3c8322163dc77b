"""verify-pin --source: file identities, markers at their lines, path safety, attestations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _pin_trees import CONF, SCHED, TOY, manifest_data, write_manifest, write_tree

from cbaudit.io.schemas import validate
from cbaudit.pins.digests import git_blob_id


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[Path, Path]:
    """A toy tree and a manifest pinning it; returns (source root, manifest path)."""
    src = write_tree(tmp_path / "src")
    return src, write_manifest(tmp_path / "pin.yaml", manifest_data(src))


def _codes(out: str) -> list[str]:
    report = json.loads(out)
    return sorted(f["code"] for r in report["results"] for f in r["findings"])


def _report(out: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(out)
    return data


def test_unchanged_tree_passes(cli, pinned) -> None:
    """An untouched tree verifies: exit 0, every file verified, every marker at its line."""
    src, man = pinned
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 0, r.out
    summary = _report(r.out)["summary"]
    assert summary["files_verified"] == 2
    assert summary["markers_checked"] == summary["markers_ok"] == 4


def test_marker_moved_says_where(cli, pinned) -> None:
    """A line inserted above a marker gives PIN.MARKER.MOVED naming the new line."""
    src, man = pinned
    (src / SCHED).write_text("# new header\n" + TOY)
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 1
    codes = _codes(r.out)
    assert codes.count("PIN.MARKER.MOVED") == 3
    assert {"PIN.FILE.SHA256", "PIN.FILE.SIZE", "PIN.FILE.BLOB"} <= set(codes)
    moved = [
        f["message"]
        for res in json.loads(r.out)["results"]
        for f in res["findings"]
        if "marker budget" in f["message"]
    ]
    assert moved and "now at line 10" in moved[0]


def test_marker_gone(cli, pinned) -> None:
    """A marker whose text no longer exists anywhere gives PIN.MARKER.GONE."""
    src, man = pinned
    (src / SCHED).write_text(TOY.replace("budget = 8", "budget = 16"))
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 1
    assert "PIN.MARKER.GONE" in _codes(r.out)


def test_marker_whitespace_mismatch(cli, pinned) -> None:
    """A marker line that changed only in whitespace gives PIN.MARKER.MISMATCH."""
    src, man = pinned
    (src / SCHED).write_text(TOY.replace("        budget = 8", "        budget =  8"))
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert "PIN.MARKER.MISMATCH" in _codes(r.out)
    assert "PIN.MARKER.GONE" not in _codes(r.out)


def test_marker_is_checked_at_its_line_not_searched(cli, tmp_path: Path, pinned) -> None:
    """Text that occurs elsewhere does not satisfy a marker whose own line differs."""
    src, _ = pinned
    data = manifest_data(src)
    marker = data["files"][0]["markers"][2]  # type: ignore[index]
    assert marker["occurrences"] == [10, 14]
    marker["line"] = 11  # the text is on lines 10 and 14, not 11
    marker["occurrences"] = [11]
    man = write_manifest(tmp_path / "wrong-line.yaml", data)
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 1
    msgs = [f["message"] for res in _report(r.out)["results"] for f in res["findings"]]  # type: ignore[attr-defined]
    assert any("now at line 10, 14" in m for m in msgs)
    assert "PIN.MARKER.MOVED" in _codes(r.out)


def test_file_missing(cli, pinned) -> None:
    """A pinned file absent from the source gives PIN.FILE.MISSING."""
    src, man = pinned
    (src / CONF).unlink()
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 1
    assert _codes(r.out) == ["PIN.FILE.MISSING"]


def test_crlf_checkout_is_a_normalization_hint(cli, pinned) -> None:
    """A CRLF checkout of an LF blob gives PIN.FILE.CHECKOUT_EOL, not a hash mismatch."""
    src, man = pinned
    (src / SCHED).write_bytes(TOY.replace("\n", "\r\n").encode())
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 0, r.out
    assert _codes(r.out) == ["PIN.FILE.CHECKOUT_EOL"]


def test_crlf_and_edit_is_a_hash_mismatch(cli, pinned) -> None:
    """A CRLF checkout that also changed content is PIN.FILE.SHA256, not the EOL hint."""
    src, man = pinned
    (src / SCHED).write_bytes(TOY.replace("8", "9").replace("\n", "\r\n").encode())
    codes = _codes(cli("verify-pin", man, "--source", src, "--format", "json").out)
    assert "PIN.FILE.SHA256" in codes and "PIN.FILE.CHECKOUT_EOL" not in codes


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../outside.py", "PIN.PATH.ESCAPE"),
        ("pkg/../../outside.py", "PIN.PATH.ESCAPE"),
        ("/etc/hostname", "PIN.PATH.ABSOLUTE"),
        ("C:/x.py", "PIN.PATH.ABSOLUTE"),
        ("pkg//sched.py", "PIN.PATH.NOT_NORMAL"),
    ],
)
def test_unsafe_manifest_paths_make_it_unusable(cli, tmp_path: Path, pinned, path, code) -> None:
    """An absolute or escaping manifest path is never followed: the manifest is unusable
    (exit 2) with one located line for that path, and no file is verified."""
    src, _ = pinned
    (tmp_path / "outside.py").write_text(TOY)
    data = manifest_data(src)
    data["files"][0]["path"] = path  # type: ignore[index]
    man = write_manifest(tmp_path / "unsafe.yaml", data)
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 2
    assert r.out == ""
    (line,) = r.err.splitlines()
    assert f"#/files/0/path: error {code}: " in line


def test_symlink_outside_is_not_followed(cli, tmp_path: Path, pinned) -> None:
    """A symlink leaving the source root gives PIN.PATH.SYMLINK_OUTSIDE even with equal bytes."""
    src, man = pinned
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.py").write_bytes((src / CONF).read_bytes())
    (src / CONF).unlink()
    os.symlink(outside / "config.py", src / CONF)
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    assert r.code == 1
    assert _codes(r.out) == ["PIN.PATH.SYMLINK_OUTSIDE"]


def test_symlinked_directory_outside_is_not_followed(cli, tmp_path: Path, pinned) -> None:
    """A directory symlink leaving the root is refused for every path below it."""
    src, man = pinned
    moved = tmp_path / "moved-pkg"
    (src / "pkg").rename(moved)
    os.symlink(moved, src / "pkg")
    codes = _codes(cli("verify-pin", man, "--source", src, "--format", "json").out)
    assert codes == ["PIN.PATH.SYMLINK_OUTSIDE", "PIN.PATH.SYMLINK_OUTSIDE"]


def test_symlink_inside_root_is_followed(cli, pinned) -> None:
    """A symlink that stays inside the source root is read normally."""
    src, man = pinned
    (src / "real").mkdir()
    (src / CONF).rename(src / "real" / "config.py")
    os.symlink(src / "real" / "config.py", src / CONF)
    assert cli("verify-pin", man, "--source", src).code == 0


def test_manifest_consistency_findings(cli, tmp_path: Path, pinned) -> None:
    """Duplicate ids and paths, lines past the end and bad occurrences are located findings."""
    src, _ = pinned
    data = manifest_data(src)
    files = data["files"]
    files[0]["markers"][1]["id"] = "cls"  # type: ignore[index]
    files[0]["markers"][0]["line"] = 99  # type: ignore[index]
    files.append(dict(files[1]))  # type: ignore[attr-defined]
    man = write_manifest(tmp_path / "bad.yaml", data)
    r = cli("verify-pin", man, "--source", src, "--format", "json")
    manifest_result = _report(r.out)["results"][0]  # type: ignore[index]
    codes = sorted(f["code"] for f in manifest_result["findings"])
    assert codes == [
        "PIN.MANIFEST.DUPLICATE_ID",
        "PIN.MANIFEST.DUPLICATE_ID",
        "PIN.MANIFEST.DUPLICATE_PATH",
        "PIN.MANIFEST.LINE_RANGE",
        "PIN.MANIFEST.OCCURRENCES",
    ]
    pointers = {f["location"]["pointer"] for f in manifest_result["findings"]}
    assert "/files/0/markers/0/line" in pointers


def test_schema_invalid_manifest_exits_2(cli, tmp_path: Path, pinned) -> None:
    """A manifest failing its schema is unusable input: exit 2 with a located SCHEMA finding."""
    src, _ = pinned
    data = manifest_data(src)
    data["files"][0]["sha256"] = "not-a-hash"  # type: ignore[index]
    man = write_manifest(tmp_path / "bad.yaml", data)
    r = cli("verify-pin", man, "--source", src)
    assert r.code == 2
    assert "SCHEMA.PATTERN" in r.err and "/files/0/sha256" in r.err


def test_exactly_one_source_option(cli, pinned) -> None:
    """Giving both --source and --git-dir, or neither, is a usage error (exit 2)."""
    src, man = pinned
    assert cli("verify-pin", man).code == 2
    assert cli("verify-pin", man, "--source", src, "--git-dir", src).code == 2
    assert cli("verify-pin", man, "--source", src / "nope").code == 2


def test_attestation_is_an_in_toto_statement(cli, tmp_path: Path, pinned) -> None:
    """--attest writes a schema-valid in-toto Statement whose subjects carry both digests."""
    src, man = pinned
    out = tmp_path / "att.json"
    assert cli("verify-pin", man, "--source", src, "--attest", out).code == 0
    statement = json.loads(out.read_text())
    assert validate(statement, "pin-attestation") == []
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    digests = {s["name"]: s["digest"] for s in statement["subject"]}
    assert digests[SCHED]["gitBlob"] == git_blob_id((src / SCHED).read_bytes())
    assert statement["predicate"]["verdict"] == "pass"
    assert statement["predicate"]["manifest"]["sha256"] == _sha(man)


def test_attestation_lists_only_verified_files(cli, tmp_path: Path, pinned) -> None:
    """A failing file is not a subject, and the verdict says fail."""
    src, man = pinned
    (src / CONF).write_text("changed\n")
    out = tmp_path / "att.json"
    assert cli("verify-pin", man, "--source", src, "--attest", out).code == 1
    statement = json.loads(out.read_text())
    assert [s["name"] for s in statement["subject"]] == [SCHED]
    assert statement["predicate"]["verdict"] == "fail"
    assert "PIN.FILE.SHA256" in statement["predicate"]["findings"]


def test_no_attestation_without_a_verified_file(cli, tmp_path: Path, pinned) -> None:
    """When nothing verified, no statement is written and PIN.ATTEST.NO_SUBJECT says so."""
    src, man = pinned
    (src / CONF).unlink()
    (src / SCHED).unlink()
    out = tmp_path / "att.json"
    r = cli("verify-pin", man, "--source", src, "--attest", out, "--format", "json")
    assert not out.exists()
    assert "PIN.ATTEST.NO_SUBJECT" in _codes(r.out)


def test_json_report_is_deterministic(cli, pinned) -> None:
    """Two runs over the same inputs give byte-identical JSON."""
    src, man = pinned
    (src / SCHED).write_text("# shifted\n" + TOY)
    first = cli("verify-pin", man, "--source", src, "--format", "json").out
    assert first == cli("verify-pin", man, "--source", src, "--format", "json").out


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
