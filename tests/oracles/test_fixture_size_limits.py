"""Size fields that drive an oracle's enumeration are bounded by the fixture schemas.

Setting one of them to 10**9 once made the gate check run for hours (found by fuzzing the
shipped fixtures). Each bound is 100 to 1,000 times the article's value and runs in seconds;
past it the fixture is SCHEMA.MAXIMUM, unusable input (exit 2), not a hung CI job.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from repo_paths import M52

from cbaudit.io.schemas import validate

CASES = [
    ("loop6/chunked_prefill.yaml", "chunked-prefill-fixture", ("reload_sweep", "sequence_length")),
    ("loop6/chunked_prefill.yaml", "chunked-prefill-fixture", ("schedule", "prompt_tokens")),
    ("loop6/chunked_prefill.yaml", "chunked-prefill-fixture", ("schedule", "chunks", 0)),
    ("loop8/fairness_starvation.yaml", "fairness-fixture", ("client_flood", "clients", "A")),
    ("loop8/fairness_starvation.yaml", "fairness-fixture", ("priority", "horizon")),
    ("loop8/fairness_starvation.yaml", "fairness-fixture", ("prefix_quota", "cold_requests")),
    ("loop8/fairness_starvation.yaml", "fairness-fixture", ("prefix_quota", "horizon")),
    (
        "loop8/fairness_starvation.yaml",
        "fairness-fixture",
        ("prefix_quota", "hot_arrivals_per_tick"),
    ),
    ("loop8/fairness_starvation.yaml", "fairness-fixture", ("mlfq", "horizon")),
    ("loop11/paper_sensitivity_fixture.yaml", "sensitivity-fixture", ("controls", "prompt_tokens")),
]


@pytest.mark.parametrize(
    ("rel", "schema", "path"), CASES, ids=["/".join(map(str, c[2])) for c in CASES]
)
def test_a_runaway_size_is_schema_maximum(rel: str, schema: str, path: tuple[Any, ...]) -> None:
    data = yaml.safe_load((M52 / rel).read_text(encoding="utf-8"))
    assert validate(data, schema) == []
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 10**9
    findings = validate(data, schema)
    assert [f.code for f in findings] == ["SCHEMA.MAXIMUM"]
    assert findings[0].location.pointer == "/" + "/".join(map(str, path))
