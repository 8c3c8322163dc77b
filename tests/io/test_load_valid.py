"""Valid inputs load to the right values, and Document.locate finds values by pointer."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from cbaudit.io import iter_jsonl, load_document, load_text
from cbaudit.io.yaml_strict import ScalarError, resolve_plain
from cbaudit.model import InputError

# -- YAML 1.2 core schema ---------------------------------------------------------------------

PLAIN_VALUES: list[tuple[str, Any]] = [
    ("true", True),
    ("True", True),
    ("TRUE", True),
    ("false", False),
    ("FALSE", False),
    ("null", None),
    ("Null", None),
    ("~", None),
    ("", None),
    ("0", 0),
    ("12", 12),
    ("-3", -3),
    ("+7", 7),
    ("0o17", 15),
    ("0x1F", 31),
    ("1.5", 1.5),
    (".5", 0.5),
    ("1.", 1.0),
    ("0.25", 0.25),
    ("1e3", 1000.0),
    ("-1.5e-3", -0.0015),
    ("2024-01-01", "2024-01-01"),
    ("2024-01-01T12:00:00Z", "2024-01-01T12:00:00Z"),
    ("1.2.3", "1.2.3"),
    ("v1", "v1"),
    ("yes please", "yes please"),
    ("nope", "nope"),
    ("-", "-"),
    (".", "."),
    ("0o8", "0o8"),
    ("req-B", "req-B"),
]


@pytest.mark.parametrize(("text", "value"), PLAIN_VALUES)
def test_plain_scalars_follow_yaml_1_2_core(text: str, value: Any) -> None:
    """Untagged plain scalars resolve by the YAML 1.2 core schema (timestamps stay strings)."""
    got = resolve_plain(text)
    assert got == value
    assert type(got) is type(value)


YAML11_SURPRISES = [
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "yEs",
    "0755",
    "-012",
    "00",
    "0b101",
    "-0x1F",
    "0x_1F",
    "1:20",
    "-1:20:30",
    "190:20:30.15",
    "12:30",
    "1_000",
    "1_000.5",
    "+1_0",
]


@pytest.mark.parametrize("text", YAML11_SURPRISES)
def test_yaml_1_1_surprises_are_refused(text: str) -> None:
    """Plain scalars YAML 1.1 reads as booleans or other numbers are refused, not guessed."""
    with pytest.raises(ScalarError) as info:
        resolve_plain(text)
    assert info.value.code == "LOAD.YAML_AMBIGUOUS_SCALAR"
    assert "quote it" in info.value.message


@pytest.mark.parametrize("text", [".nan", ".NaN", ".inf", "-.Inf", "+.INF", "1e999"])
def test_yaml_nonfinite_is_refused(text: str) -> None:
    """YAML's .nan/.inf and overflowing floats give LOAD.NONFINITE."""
    with pytest.raises(ScalarError) as info:
        resolve_plain(text)
    assert info.value.code == "LOAD.NONFINITE"


def test_quoted_and_tagged_scalars() -> None:
    """Quoted scalars are strings; core tags convert; `!` forces a string."""
    text = (
        'a: "no"\n'
        "b: '0755'\n"
        "c: !!str 12\n"
        "d: !!float 3\n"
        "e: !!int 0x10\n"
        "f: !!bool true\n"
        "g: !!null null\n"
        "h: ! 12\n"
        "i: !!map {k: v}\n"
        "j: !!seq [1]\n"
        "k: |\n  on\n"
        "l: !!str on\n"
    )
    data = load_text(text, name="t.yaml", fmt="yaml").data
    assert data == {
        "a": "no",
        "b": "0755",
        "c": "12",
        "d": 3.0,
        "e": 16,
        "f": True,
        "g": None,
        "h": "12",
        "i": {"k": "v"},
        "j": [1],
        "k": "on\n",
        "l": "on",
    }
    assert type(data["d"]) is float


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("a: !!int 0755\n", "LOAD.YAML_AMBIGUOUS_SCALAR"),
        ("a: !!bool yes\n", "LOAD.YAML_TAG_VALUE"),
        ("a: !!null x\n", "LOAD.YAML_TAG_VALUE"),
        ("a: !!float .nan\n", "LOAD.NONFINITE"),
        ("a: !!seq {b: 1}\n", "LOAD.YAML_TAG_VALUE"),
        ("a: !!map x\n", "LOAD.YAML_TAG_VALUE"),
        ("a: !!set {b}\n", "LOAD.YAML_TAG"),
        ("a: !!binary aGk=\n", "LOAD.YAML_TAG"),
        ("a: !!timestamp 2024-01-01\n", "LOAD.YAML_TAG"),
        ("%TAG !e! tag:example.com,2000:\n---\na: !e!thing x\n", "LOAD.YAML_TAG"),
    ],
)
def test_tag_refusals(text: str, code: str) -> None:
    """Tags outside the core set, and values that do not fit their core tag, are refused."""
    with pytest.raises(InputError) as info:
        load_text(text, name="t.yaml", fmt="yaml")
    assert info.value.findings[0].code == code


def test_aliases_expand_to_plain_values() -> None:
    """Aliases within the bound load as the anchored value (quoted `<<` is an ordinary key)."""
    text = 'base: &b {x: 1, y2: [1, 2]}\ncopy: *b\n"<<": merge-free\n'
    data = load_text(text, name="a.yaml", fmt="yaml").data
    assert data == {
        "base": {"x": 1, "y2": [1, 2]},
        "copy": {"x": 1, "y2": [1, 2]},
        "<<": "merge-free",
    }


# -- JSON ---------------------------------------------------------------------------------


def test_json_values() -> None:
    """Strict JSON still reads every ordinary value, escapes and surrogate pairs included."""
    text = (
        '{"s": "caf\\u00e9 \\ud83d\\ude00 \\"q\\"", "i": -12, "f": 1.5e308, '
        '"big": ' + "9" * 4300 + ', "l": [true, false, null, {}], "u": "é"}'
    )
    data = load_text(text, name="v.json").data
    assert data["s"] == 'café 😀 "q"'
    assert data["i"] == -12
    assert data["f"] == 1.5e308
    assert data["big"] == int("9" * 4300)
    assert data["l"] == [True, False, None, {}]
    assert data["u"] == "é"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_depth_limit_is_inclusive(fmt: str) -> None:
    """Nesting of exactly max_depth levels loads; one more is LOAD.DEPTH."""
    ok = '{"a": ' + "[" * 9 + "]" * 9 + "}"
    deep = '{"a": ' + "[" * 10 + "]" * 10 + "}"
    assert load_text(ok, name="d", fmt=fmt, max_depth=10).data["a"] == [[[[[[[[[]]]]]]]]]
    with pytest.raises(InputError) as info:
        load_text(deep, name="d", fmt=fmt, max_depth=10)
    assert info.value.findings[0].code == "LOAD.DEPTH"


def test_expect_controls_top_level_type() -> None:
    """`expect` names the accepted top-level type(s); None accepts any."""
    assert load_text("[1]", name="x", expect=list).data == [1]
    assert load_text("3", name="x", expect=None).data == 3
    assert load_text("[1]", name="x", expect=(dict, list)).data == [1]
    with pytest.raises(InputError) as info:
        load_text('"s"', name="x", expect=(dict, list))
    (finding,) = info.value.findings
    assert finding.code == "LOAD.TOP_LEVEL_TYPE"
    assert "a string" in finding.message
    assert "an object (mapping) or an array (sequence)" in finding.message


# -- files, formats, encodings --------------------------------------------------------------


def test_bom_is_stripped_and_hashed(tmp_path: Path) -> None:
    """A UTF-8 BOM is tolerated; sha256 is of the file's bytes as they are."""
    raw = b'\xef\xbb\xbf{"a": 1}'
    path = tmp_path / "bom.json"
    path.write_bytes(raw)
    doc = load_document(path)
    assert doc.data == {"a": 1}
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()
    yaml_path = tmp_path / "bom.yaml"
    yaml_path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert load_document(yaml_path).data == {"a": 1}


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("case.json", '{"a": 1}', "json"),
        ("case.yaml", "a: 1\n", "yaml"),
        ("case.yml", "a: 1\n", "yaml"),
        ("case.txt", '  {"a": 1}', "json"),
        ("case.txt", "a: 1\n", "yaml"),
        ("case", "[1]", "json"),
        ("case.JSON", '{"a": 1}', "json"),
    ],
)
def test_format_from_suffix_or_content(tmp_path: Path, name: str, content: str, fmt: str) -> None:
    """The suffix picks the format; an unknown suffix sniffs `{`/`[` for JSON, else YAML."""
    path = tmp_path / name
    path.write_text(content)
    doc = load_document(path, expect=None)
    assert doc.fmt == fmt


def test_json_suffix_is_not_read_as_yaml(tmp_path: Path) -> None:
    """A .json file holding YAML is a JSON syntax error, not silently YAML."""
    path = tmp_path / "case.json"
    path.write_text("a: 1\n")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert info.value.findings[0].code == "LOAD.SYNTAX"


def test_jsonl_document_locates_records(tmp_path: Path) -> None:
    """A whole .jsonl file loads as a list; `/<i>/...` pointers find the record's line."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n{"b": [1, 2]}\r\n')
    doc = load_document(path)
    assert doc.fmt == "jsonl"
    assert doc.data == [{"a": 1}, {"b": [1, 2]}]
    loc = doc.locate("/1/b/1")
    assert (loc.line, loc.column) == (3, 11)


# -- iter_jsonl ---------------------------------------------------------------------------


def test_iter_jsonl_streams_records_with_lines(tmp_path: Path) -> None:
    """Records come one per non-blank line, with line offsets, before a later bad line fails."""
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"i": 0}\r\n\n  \n{"i": 1, "v": [7]}\n{"i": }\n')
    records = iter_jsonl(path)
    first = next(records)
    second = next(records)
    assert (first.data, first.line_offset) == ({"i": 0}, 0)
    assert (second.data, second.line_offset) == ({"i": 1, "v": [7]}, 3)
    loc = second.locate("/v/0")
    assert (loc.file, loc.line, loc.column, loc.pointer) == (str(path), 4, 16, "/v/0")
    assert second.sha256 == hashlib.sha256(b'{"i": 1, "v": [7]}').hexdigest()
    with pytest.raises(InputError) as info:
        next(records)
    assert info.value.findings[0].location.line == 5


def test_iter_jsonl_without_final_newline(tmp_path: Path) -> None:
    """A last line without a newline is still a record."""
    path = tmp_path / "trace.jsonl"
    path.write_text('{"i": 0}\n{"i": 1}')
    assert [d.data["i"] for d in iter_jsonl(path)] == [0, 1]


def test_iter_jsonl_expect_none(tmp_path: Path) -> None:
    """`expect=None` lets records of any type through."""
    path = tmp_path / "trace.jsonl"
    path.write_text("1\n[2]\n")
    assert [d.data for d in iter_jsonl(path, expect=None)] == [1, [2]]


# -- locate ---------------------------------------------------------------------------------

JSON_TEXT = '{\n  "a": {"b~/c": [10, {"x": 1}]},\n  "z": "q"\n}\n'
YAML_TEXT = 'a:\n  "b~/c":\n    - 10\n    - x: 1\nz: &q q\nw: *q\n'


@pytest.mark.parametrize(
    ("pointer", "line", "column"),
    [
        ("", 1, 1),
        ("/a", 2, 8),
        ("/a/b~0~1c", 2, 17),
        ("/a/b~0~1c/1", 2, 22),
        ("/a/b~0~1c/1/x", 2, 28),
        ("/z", 3, 8),
        ("/missing", 1, 1),
        ("/a/b~0~1c/7", 2, 17),
        ("/a/b~0~1c/x", 2, 17),
    ],
)
def test_json_locate(pointer: str, line: int, column: int) -> None:
    """JSON pointers resolve to the value's line/column, or to the deepest existing ancestor."""
    loc = load_text(JSON_TEXT, name="x.json").locate(pointer)
    assert (loc.file, loc.pointer, loc.line, loc.column) == ("x.json", pointer, line, column)


@pytest.mark.parametrize(
    ("pointer", "line", "column"),
    [
        ("", 1, 1),
        ("/a/b~0~1c", 3, 5),
        ("/a/b~0~1c/0", 3, 7),
        ("/a/b~0~1c/1/x", 4, 10),
        ("/z", 5, 4),
        ("/w", 6, 4),
        ("/a/nothing", 2, 3),
    ],
)
def test_yaml_locate(pointer: str, line: int, column: int) -> None:
    """YAML pointers resolve through the marks kept while composing (aliases at their use)."""
    loc = load_text(YAML_TEXT, name="x.yaml", fmt="yaml").locate(pointer)
    assert (loc.pointer, loc.line, loc.column) == (pointer, line, column)


def test_every_load_code_is_documented() -> None:
    """Each LOAD.* code the loader can raise is listed in docs/loading.md."""
    import re

    root = Path(__file__).resolve().parents[2]
    files = [*(root / "cbaudit" / "io").glob("*.py"), root / "cbaudit" / "model" / "errors.py"]
    source = "".join(p.read_text() for p in files)  # errors.py: the shared file-read mapping
    codes = set(re.findall(r'"(LOAD\.[A-Z_]+)"', source))
    doc = (root / "docs" / "loading.md").read_text()
    assert len(codes) >= 20
    assert sorted(c for c in codes if f"`{c}`" not in doc) == []
