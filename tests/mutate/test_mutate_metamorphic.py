"""Metamorphic relations: they hold on the replay engine and the Loop 6 oracle, and each one
can fail (its checker detects a violated relation)."""

from __future__ import annotations

import itertools
import random

import pytest

from cbaudit.model import CheckStatus
from cbaudit.mutate.metamorphic import (
    RELATIONS,
    MetamorphicOptions,
    changed_truth,
    chunk_partition_invariance,
    compare_same_state_plans,
    compare_scaled,
    permuted,
    random_partitions,
    small_workload,
)
from cbaudit.sim.workload import workload_from_data


@pytest.mark.parametrize("name", list(RELATIONS))
@pytest.mark.parametrize("seed", [0, 1])
def test_relation_holds(name: str, seed: int) -> None:
    """Each relation passes on the seeded workload under the default policies."""
    result = RELATIONS[name](MetamorphicOptions(seed=seed))
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.subject == name


def test_hidden_output_relation_compares_plans_and_changes_truth() -> None:
    """Every hidden length changes; each policy compares at least one plan; offline may change."""
    result = RELATIONS["hidden-output-invariance"](MetamorphicOptions(seed=1))
    before, after = result.metrics["realized_before"], result.metrics["realized_after"]
    assert all(before[r] != after[r] for r in before)
    assert all(p["plans_compared"] >= 1 for p in result.metrics["policies"].values())
    assert any(
        p["offline_output_tokens"][0] != p["offline_output_tokens"][1]
        for p in result.metrics["policies"].values()
    )


def test_same_state_plan_checker_detects_a_leak() -> None:
    """Two traces with one identical state but different plans are flagged at that plan."""
    state = {"decision_id": 1, "requests": []}
    a = [("state", state), ("plan", {"selected": ["x"]})]
    b = [("state", dict(state)), ("plan", {"selected": ["y"]})]
    assert compare_same_state_plans(a, b) == (1, 0, None)
    c = [("state", {"decision_id": 2}), ("plan", {"selected": ["y"]})]
    assert compare_same_state_plans(a, c) == (0, None, 0)


def test_scaled_checker_detects_an_unscaled_time() -> None:
    """A TTFT that did not scale by k, or a changed count, is reported."""
    a = {"r": {"ttft_ms": 10, "output_tokens": 3}}
    assert compare_scaled(a, {"r": {"ttft_ms": 30, "output_tokens": 3}}, 3) == []
    assert compare_scaled(a, {"r": {"ttft_ms": 10, "output_tokens": 3}}, 3) == [
        "r.ttft_ms: 10 -> 10"
    ]
    assert compare_scaled(a, {"r": {"ttft_ms": 30, "output_tokens": 4}}, 3) == [
        "r.output_tokens: 3 -> 4"
    ]


def test_chunk_relation_fails_on_a_broken_partition() -> None:
    """An overlapping partition violates the relation (MUTATE.METAMORPHIC.CHUNK_PARTITION)."""
    ok = [[(0, 5), (5, 12)], [(0, 1), (1, 12)]]
    assert chunk_partition_invariance(MetamorphicOptions(), ok).outcome is CheckStatus.PASSED
    bad = chunk_partition_invariance(MetamorphicOptions(), [[(0, 6), (5, 12)]])
    assert bad.outcome is CheckStatus.FAILED
    assert {f.code for f in bad.findings} == {"MUTATE.METAMORPHIC.CHUNK_PARTITION"}


def test_random_partitions_are_distinct_and_cover() -> None:
    """Seeded partitions are distinct and each covers [0, S) contiguously."""
    parts = random_partitions(12, 8, random.Random(3))
    assert len({tuple(p) for p in parts}) == 8
    for part in parts:
        assert part[0][0] == 0 and part[-1][1] == 12
        assert all(a[1] == b[0] for a, b in itertools.pairwise(part))


def test_permutation_really_reorders_the_listing() -> None:
    """The permuted manifest lists requests in another order; the loader keeps arrival order."""
    base = workload_from_data(small_workload(0))
    other, listing = permuted(base, random.Random(1))
    assert listing != [r.request_id for r in base.requests]
    assert [r.request_id for r in other.requests] == [r.request_id for r in base.requests]


def test_changed_truth_changes_every_length() -> None:
    """Every realized length changes and stays within [1, max_output_tokens]."""
    base = workload_from_data(small_workload(2))
    new = changed_truth(base, random.Random(0))
    for req in base.requests:
        assert new[req.request_id] != base.realized_output(req)
        assert 1 <= new[req.request_id] <= req.max_output_tokens
