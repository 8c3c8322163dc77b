"""Loop 6 chunked-prefill oracle: causal equivalence, reload proxy, schedule, imbalance."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cbaudit.model import CheckStatus, EvidenceClass
from cbaudit.oracles import chunked_prefill as cp
from cbaudit.oracles.fixtures import load_fixture

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "evidence/m5-2-continuous-batching/loop6/chunked_prefill.yaml"
)


def test_article_fixture_passes_with_its_numbers() -> None:
    """Seven partitions of S=12 keep 78 pairs bitwise; C=4 reloads 24 rows (3 MiB); 55 pairs."""
    result = cp.run(load_fixture(FIXTURE))
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.evidence_class is EvidenceClass.DERIVED
    parts = result.metrics["equivalence"]["partitions"]
    assert [p["chunk_size"] for p in parts] == [1, 2, 3, 4, 5, 6, 12]
    for p in parts:
        assert (p["pairs_total"], p["missing_pairs"], p["extra_pairs"]) == (78, 0, 0)
        assert p["max_abs_error"] == 0.0 and p["bitwise_equal"] is True
        assert p["pairs_per_chunk"] == p["pairs_formula"]
    rows = {r["chunk_size"]: r for r in result.metrics["reload_sweep"]["rows"]}
    assert (rows[4]["r_hist"], rows[4]["bytes"], rows[4]["mib"]) == (24, 3 * 1024 * 1024, 3.0)
    assert (rows[4]["chunks"], rows[5]["chunks"], rows[5]["r_hist"]) == (4, 4, 30)
    schedule = result.metrics["schedule"]
    assert schedule["pairs"] == [10, 26, 19]
    assert (schedule["total_pairs"], schedule["prior_rows_exposed"]) == (55, 12)
    assert [c["imbalance_ms"] for c in result.metrics["imbalance"]] == [28, 2]


def test_pair_formula_and_reload_values() -> None:
    """P_m = c*s + c(c+1)/2 and R_hist = sum of starts, on the article's worked values."""
    assert [cp.chunk_pairs(s, c) for s, c in ((0, 4), (4, 4), (8, 2))] == [10, 26, 19]
    assert cp.reload_rows(cp.equal_chunks(16, 4)) == 24
    assert cp.reload_rows(cp.equal_chunks(16, 5)) == 30
    assert cp.imbalance_proxy([Fraction(18), Fraction(4), Fraction(4)]) == 28
    assert cp.imbalance_proxy([Fraction(8), Fraction(8), Fraction(6)]) == 2


@st.composite
def partitions(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    length = draw(st.integers(min_value=1, max_value=20))
    cuts = sorted(
        draw(st.sets(st.integers(min_value=1, max_value=length - 1))) if length > 1 else []
    )
    bounds = [0, *cuts, length]
    return length, list(itertools.pairwise(bounds))


@settings(max_examples=60, deadline=None)
@given(partitions())
def test_any_partition_keeps_the_triangle(case: tuple[int, list[tuple[int, int]]]) -> None:
    """Every legal partition processes exactly the S(S+1)/2 causal pairs, outputs bitwise equal."""
    length, bounds = case
    rows = cp.Rows.seeded(length, 2, length)
    run = cp.run_chunked(rows, [cp.Chunk(s, e, s) for s, e in bounds])
    triangle = {(i, j) for i in range(length) for j in range(i + 1)}
    assert set(run.pairs) == triangle and all(n == 1 for n in run.pairs.values())
    assert sum(run.pairs_per_chunk) == cp.tri(length)
    assert list(run.pairs_per_chunk) == [cp.chunk_pairs(s, e - s) for s, e in bounds]
    full = cp.full_causal(rows, length)
    assert [run.outputs[i] for i in range(length)] == full


def test_stale_history_is_caught_dynamically() -> None:
    """Reading history short of the frontier loses pairs and changes outputs."""
    rows = cp.Rows.seeded(8, 2, 1)
    run = cp.run_chunked(rows, [cp.Chunk(0, 4, 0), cp.Chunk(4, 8, 2)])
    assert len(run.pairs) == cp.tri(8) - 2 * 4
    assert any(run.outputs[i] != out for i, out in enumerate(cp.full_causal(rows, 8)))
