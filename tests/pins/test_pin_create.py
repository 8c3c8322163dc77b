"""`cbaudit pin create`: a manifest from a source tree that verify-pin then accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from _pin_trees import CONF, SCHED, write_tree

from cbaudit.io.schemas import validate
from cbaudit.pins.create import infer_symbol, parse_marker_spec


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """The toy source tree."""
    return write_tree(tmp_path / "src")


def _create(cli, src: Path, out: Path, *extra: str):
    return cli(
        "pin", "create", "--source", src, "--runtime", "toy", "--runtime-version", "1.0",
        "--file", SCHED, "--marker", f"{SCHED}:9", "--marker", f"{SCHED}:4:cls",
        "--marker", f"{CONF}:2", "--output", out, *extra,
    )  # fmt: skip


def test_create_then_verify(cli, tmp_path: Path, src: Path) -> None:
    """A created manifest is schema-valid, records markers and verifies against its tree."""
    out = tmp_path / "pin.yaml"
    assert _create(cli, src, out).code == 0
    data = yaml.safe_load(out.read_text())
    assert validate(data, "pin-manifest") == []
    markers = data["files"][0]["markers"]
    assert [(m["id"], m["line"], m["symbol"]) for m in markers] == [
        ("M01", 9, "Scheduler.schedule"),
        ("cls", 4, "Scheduler"),
    ]
    assert markers[0]["text"] == "        budget = 8"
    assert [f["path"] for f in data["files"]] == [SCHED, CONF]
    assert data["files"][1]["markers"][0]["id"] == "M02"
    assert cli("verify-pin", out, "--source", src).code == 0


def test_create_json_and_refuse_overwrite(cli, tmp_path: Path, src: Path) -> None:
    """A .json output is JSON; an existing output is kept unless --force."""
    out = tmp_path / "pin.json"
    assert _create(cli, src, out).code == 0
    first = json.loads(out.read_text())
    assert first["runtime"] == "toy"
    out.write_text("keep me")
    assert _create(cli, src, out).code == 2
    assert out.read_text() == "keep me"
    assert _create(cli, src, out, "--force").code == 0


@pytest.mark.parametrize(
    "marker", ["pkg/sched.py:99", "pkg/sched.py:2", "pkg/sched.py", "pkg/sched.py:x"]
)
def test_bad_markers_exit_2(cli, tmp_path: Path, src: Path, marker: str) -> None:
    """A marker past the end, on a blank line, or malformed is a usage error; nothing written."""
    out = tmp_path / "pin.yaml"
    r = cli("pin", "create", "--source", src, "--runtime", "t", "--runtime-version", "1",
            "--marker", marker, "--output", out)  # fmt: skip
    assert r.code == 2
    assert not out.exists()


def test_escaping_file_is_refused(cli, tmp_path: Path, src: Path) -> None:
    """pin create refuses a path that escapes the source root (PIN.PATH.ESCAPE, exit 2)."""
    r = cli("pin", "create", "--source", src, "--runtime", "t", "--runtime-version", "1",
            "--file", "../x.py")  # fmt: skip
    assert r.code == 2 and "PIN.PATH.ESCAPE" in r.err


def test_duplicate_marker_ids_refused(cli, src: Path) -> None:
    """Two markers with one id are a usage error."""
    r = cli("pin", "create", "--source", src, "--runtime", "t", "--runtime-version", "1",
            "--marker", f"{SCHED}:4:a", "--marker", f"{SCHED}:9:a")  # fmt: skip
    assert r.code == 2


def test_parse_marker_spec_forms() -> None:
    """PATH:LINE and PATH:LINE:ID parse; the id is optional."""
    assert parse_marker_spec("a/b.py:12").line == 12
    spec = parse_marker_spec("a/b.py:12:M7")
    assert (spec.path, spec.line, spec.id) == ("a/b.py", 12, "M7")


def test_infer_symbol_nesting() -> None:
    """The enclosing class and function are found by indentation."""
    lines = ["class A:", "    def f(self):", "        x = (", "            1)", "", "y = 2"]
    assert infer_symbol(lines, 4) == "A.f"
    assert infer_symbol(lines, 2) == "A.f"
    assert infer_symbol(lines, 6) is None
