"""The shipped profiles' parsed index: what naming a shipped profile reads instead of its YAML.

The index must be exactly what the YAML files parse to (a stale or hand-edited index fails
here); a file whose bytes the index does not hold is parsed as any other; a position asked of
an indexed document is the parsed document's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cbaudit.io.loader import load_document, load_recorded
from cbaudit.sim import profiles
from cbaudit.sim.profiles import (
    DATA_DIR,
    PARSED_INDEX,
    SHIPPED,
    load_hardware_profile,
    load_model_profile,
    parsed_index_text,
    shipped_profiles,
)


def test_the_index_is_what_the_shipped_yaml_parses_to() -> None:
    assert PARSED_INDEX.read_text(encoding="utf-8") == parsed_index_text(), (
        "cbaudit/sim/data/parsed-profiles.json is stale: regenerate it with"
        ' python -c "from cbaudit.sim.profiles import write_parsed_index; write_parsed_index()"'
    )
    index = json.loads(PARSED_INDEX.read_text(encoding="utf-8"))
    assert sorted(index["profiles"]) == sorted(name for _, name in SHIPPED.values())


@pytest.mark.parametrize("profile_id", sorted(SHIPPED))
def test_a_shipped_profile_reads_the_index_and_gets_the_parsed_data(profile_id: str) -> None:
    path = shipped_profiles()[profile_id]
    parsed = load_document(path)
    indexed = profiles._shipped_document(path)
    assert indexed._marks is None  # from the index: not parsed
    # type for type (1 and 1.0 and True differ in JSON)
    assert json.dumps(indexed.data) == json.dumps(parsed.data)
    assert (indexed.path, indexed.text, indexed.fmt, indexed.sha256) == (
        parsed.path,
        parsed.text,
        parsed.fmt,
        parsed.sha256,
    )
    for pointer in ("", "/kind", "/profile_id", "/sources/0/title", "/no/such/key"):
        assert indexed.locate(pointer) == parsed.locate(pointer)


def test_bytes_the_index_does_not_hold_are_parsed(tmp_path: Path) -> None:
    source = DATA_DIR / SHIPPED["nvidia-h100-sxm"][1]
    raw = source.read_bytes() + b"# one more comment\n"
    doc = load_recorded(raw, name="x.yaml", fmt="yaml", recorded={})
    assert doc._marks is not None
    assert doc.data == load_document(source).data


def test_a_stale_index_entry_is_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An index whose sha256 is not the file's: the YAML is parsed, the profile is the same."""
    index = json.loads(PARSED_INDEX.read_text(encoding="utf-8"))
    for entry in index["profiles"].values():
        entry["sha256"] = "0" * 64
        entry["data"] = {"kind": "model-profile", "profile_id": "wrong"}
    stale = tmp_path / "parsed-profiles.json"
    stale.write_text(json.dumps(index), encoding="utf-8")
    expected = (load_model_profile("llama-3-8b-gqa-fp16"), load_hardware_profile("nvidia-h100-sxm"))
    monkeypatch.setattr(profiles, "PARSED_INDEX", stale)
    model = load_model_profile("llama-3-8b-gqa-fp16")
    hardware = load_hardware_profile("nvidia-h100-sxm")
    assert (model, hardware) == expected
    assert model.profile_id == "llama-3-8b-gqa-fp16"


@pytest.mark.parametrize(
    "text", [None, "", "{not json", "[]", '{"profiles": 3}', '{"profiles": {"a": 1}}']
)
def test_a_missing_or_unreadable_index_falls_back_to_the_yaml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str | None
) -> None:
    """An installation whose index is gone or damaged still loads every shipped profile, by
    parsing its YAML (the same profile, positions included), never an internal error."""
    expected = (load_model_profile("llama-3-8b-gqa-fp16"), load_hardware_profile("nvidia-h100-sxm"))
    index = tmp_path / "parsed-profiles.json"
    if text is not None:
        index.write_text(text, encoding="utf-8")
    monkeypatch.setattr(profiles, "PARSED_INDEX", index)
    parsed: list[bool] = []
    real = profiles.load_recorded

    def spy(raw: bytes, **kw: object) -> object:
        parsed.append(not kw["recorded"])
        return real(raw, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(profiles, "load_recorded", spy)
    model = load_model_profile("llama-3-8b-gqa-fp16")
    hardware = load_hardware_profile("nvidia-h100-sxm")
    assert (model, hardware) == expected
    assert parsed == [True, True]
