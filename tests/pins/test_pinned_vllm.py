"""pinned/vllm-v0.23.0.yaml: schema-valid, consistent, and equal to the verified facts."""

from __future__ import annotations

import json

import pytest
from repo_paths import REPO, SHARED

from cbaudit.pins.manifest import consistency_findings, load_manifest

PIN = REPO / "pinned" / "vllm-v0.23.0.yaml"
FACTS = SHARED / "pins" / "vllm-v0.23.0.facts.json"


def test_pin_loads_and_is_consistent() -> None:
    """The shipped pin passes its schema and its consistency checks."""
    loaded = load_manifest(PIN)
    assert consistency_findings(loaded) == []
    m = loaded.manifest
    assert (m.runtime, m.version, m.tag) == ("vllm", "0.23.0", "v0.23.0")
    assert m.commit == "0fc695fc6d1d82e9a5ac6835ac8e4e1c83703665"
    assert sum(len(f.markers) for f in m.files) == 52


def test_pin_matches_the_facts() -> None:
    """Every file identity and all 52 markers equal the facts file, in order."""
    if not FACTS.is_file():
        pytest.skip(f"{FACTS} is not present in this checkout")
    facts = json.loads(FACTS.read_text())
    m = load_manifest(PIN).manifest
    assert m.commit == facts["commit"] and m.tag == facts["tag"]
    want_files = [(f["path"], f["sha256"], f["bytes"], f["lines"], f["git_blob_sha1"])
                  for f in facts["files"]]  # fmt: skip
    got_files = [(f.path, f.sha256, f.size, f.lines, f.git_blob) for f in m.files]
    assert got_files == want_files
    got = {(f.path, k.line): k for f in m.files for k in f.markers}
    assert len(got) == len(facts["markers"]) == 52
    for fact in facts["markers"]:
        marker = got[(fact["file"], fact["line"])]
        assert (marker.text, marker.symbol, marker.claim) == (
            fact["text"], fact["symbol"], fact["claim"],
        )  # fmt: skip
        assert list(marker.occurrences) == fact["occurrences"]


def test_pin_holds_no_source_text_beyond_markers() -> None:
    """The pin stores hashes and marker lines only: far smaller than the pinned sources."""
    assert PIN.stat().st_size < 40_000
