"""Every rule vllm-v1 mirrors is pinned: its markers exist in the rules pin, every marker backs
a rule, every code name is real, and docs/runtime-policy.md shows the same table."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from repo_paths import CONFORMANCE, REPO

from cbaudit.pins.manifest import consistency_findings, load_manifest
from cbaudit.policies.vllm_v1_rules import MANIFEST, RULES, MirroredRule, rules_table

PIN = REPO / MANIFEST
BUNDLE_PIN = CONFORMANCE / "pins" / "vllm-v0.23.0-scheduler-rules.yaml"


def _markers() -> dict[str, Any]:
    m = load_manifest(PIN).manifest
    return {k.id: (f, k) for f in m.files for k in f.markers}


def test_the_rules_pin_is_consistent_and_the_bundles_copy() -> None:
    """17 files, 143 markers, no consistency finding; the bundle binds the same bytes."""
    loaded = load_manifest(PIN)
    assert consistency_findings(loaded) == []
    m = loaded.manifest
    assert (m.version, m.tag, m.commit) == (
        "0.23.0", "v0.23.0", "0fc695fc6d1d82e9a5ac6835ac8e4e1c83703665",
    )  # fmt: skip
    assert len(m.files) == 17 and sum(len(f.markers) for f in m.files) == 143
    assert BUNDLE_PIN.read_bytes() == PIN.read_bytes()


@pytest.mark.parametrize("rule", list(RULES), ids=lambda r: r.rule)
def test_each_rule_cites_markers_of_the_pin_and_real_code(rule: MirroredRule) -> None:
    """A rule has markers that the manifest holds and code names that resolve."""
    markers = _markers()
    assert rule.markers and rule.code and rule.statement
    assert [m for m in rule.markers if m not in markers] == []
    for ref in rule.code:
        module, _, qualname = ref.partition(":")
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)


def test_every_marker_backs_a_rule() -> None:
    """The pin holds no line that no rule rests on."""
    cited = {m for r in RULES for m in r.markers}
    assert sorted(set(_markers()) - cited) == []


def test_the_docs_table_is_the_rule_table() -> None:
    """docs/runtime-policy.md shows exactly the table the code lists."""
    where = {i: f"{f.path.removeprefix('vllm/')}:{k.line}" for i, (f, k) in _markers().items()}
    text = (REPO / "docs" / "runtime-policy.md").read_text(encoding="utf-8")
    begin, end = "<!-- vllm-v1-rules:begin -->\n", "<!-- vllm-v1-rules:end -->"
    shown = text[text.index(begin) + len(begin) : text.index(end)]
    assert shown == rules_table(where), "regenerate the table with rules_table()"


def test_the_rule_table_refuses_a_second_rule_under_one_id() -> None:
    """The table is an explicit registry: a duplicate id is an error."""
    with pytest.raises(ValueError, match="already listed"):
        RULES.add("config.token_budget", "again", "C01", "x:y")
