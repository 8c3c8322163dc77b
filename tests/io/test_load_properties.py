"""Properties: no input crashes the loader, and locate always points at the right value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cbaudit.io import load_text
from cbaudit.io.json_locate import escape_token
from cbaudit.model import InputError

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEED_JSON = b'{"a": [1, 2.5, "x\\u00e9"], "b": {"c": null, "d": true}, "e": -3}\n'
SEED_YAML = b'a: [1, 2.5, "x"]\nb:\n  c: ~\n  d: true\n  e: &k [1]\nf: *k\ng: "on"\n'

# Bytes drawn mostly from the characters that matter to the parsers.
_TOKENS = st.sampled_from(
    [b"{", b"}", b"[", b"]", b":", b",", b'"', b"\\", b"\n", b" ", b"-", b"&a", b"*a", b"!!",
     b"0", b"1e999", b"NaN", b"\xff", b"\xc3", b"\x00", b"\t", b"---", b"? ", b"<<", b"#"]
)  # fmt: skip


def _mutate(seed: bytes, data: st.DataObject) -> bytes:
    raw = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw)))
        action = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        token = data.draw(_TOKENS)
        if action == "insert":
            raw[pos:pos] = token
        elif action == "delete":
            del raw[pos : pos + len(token)]
        else:
            raw[pos : pos + len(token)] = token
    return bytes(raw)


def _only_input_errors(raw: bytes, fmt: str) -> None:
    try:
        doc = load_text(raw, name="fuzz", fmt=fmt, expect=None)
    except InputError as err:
        for finding in err.findings:
            assert finding.code.startswith("LOAD.")
            assert finding.location.file == "fuzz"
            assert finding.location.line is None or finding.location.line >= 1
            assert "\n" not in finding.message
        return
    json.dumps(doc.data)  # whatever loads is plain JSON-ready data
    doc.locate("/a/0")


@FAST
@given(st.binary(max_size=200), st.sampled_from(["json", "yaml", "jsonl"]))
def test_random_bytes_never_crash(raw: bytes, fmt: str) -> None:
    """Arbitrary bytes either load or raise InputError with a LOAD.* finding; nothing else."""
    _only_input_errors(raw, fmt)


@FAST
@given(st.data(), st.sampled_from([(SEED_JSON, "json"), (SEED_YAML, "yaml"), (SEED_JSON, "jsonl")]))
def test_mutated_documents_never_crash(data: st.DataObject, seed: tuple[bytes, str]) -> None:
    """A valid document with random token edits loads or raises InputError; nothing else."""
    raw, fmt = seed
    _only_input_errors(_mutate(raw, data), fmt)


_KEYS = st.text(min_size=0, max_size=6)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


def _pointers(value: Any, base: str = "") -> list[tuple[str, Any]]:
    out = [(base, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _pointers(child, base + "/" + escape_token(key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _pointers(child, f"{base}/{index}")
    return out


def _offset(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    return sum(len(part) + 1 for part in lines[: line - 1]) + column - 1


@FAST
@given(_JSON.filter(lambda v: isinstance(v, dict)), st.sampled_from([None, 2]))
def test_json_round_trip_and_locate(value: dict[str, Any], indent: int | None) -> None:
    """Any JSON object loads back equal, and every pointer locates the text of its value."""
    text = json.dumps(value, indent=indent)
    doc = load_text(text, name="p.json")
    assert doc.data == value
    decoder = json.JSONDecoder()
    for pointer, expected in _pointers(value):
        loc = doc.locate(pointer)
        assert loc.line is not None and loc.column is not None
        found, _ = decoder.raw_decode(text, _offset(text, loc.line, loc.column))
        assert found == expected


_PRINTABLE = st.text(
    # No C0/C1 controls: YAML does not allow them raw, and JSON would escape them anyway.
    st.characters(
        min_codepoint=0x20,
        max_codepoint=0x2FF,
        exclude_characters="".join(chr(c) for c in range(0x7F, 0xA0)),
    ),
    max_size=8,
)
_YAMLABLE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _PRINTABLE,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_PRINTABLE, inner, max_size=4),
    max_leaves=20,
)


@FAST
@given(_YAMLABLE.filter(lambda v: isinstance(v, dict)))
def test_json_text_is_yaml_1_2(value: dict[str, Any]) -> None:
    """JSON text read as YAML gives the same data (YAML 1.2 is a superset of JSON)."""
    text = json.dumps(value, ensure_ascii=False)
    assert load_text(text, name="p.yaml", fmt="yaml").data == value
