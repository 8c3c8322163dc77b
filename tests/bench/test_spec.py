"""The step-spec grammar."""

from __future__ import annotations

import pytest

from cbaudit.bench.spec import parse_spec
from cbaudit.model import InputError


def test_mixed_spec_totals() -> None:
    """`32q1s2k_q512s4k` is 32 decode rows over 2k keys plus a 512-row chunk over 3.5k."""
    s = parse_spec("32q1s2k_q512s4k")
    assert s.kind == "mixed"
    assert (s.requests, s.tokens, s.decode_rows, s.prefill_tokens) == (33, 544, 32, 512)
    assert s.history_tokens == 32 * 2047
    assert s.prefill_history_tokens == 4096 - 512
    assert s.kv_tokens == 32 * 2048 + 4096
    assert s.attention_pairs == 32 * 2048 + 512 * 3584 + 512 * 513 // 2
    assert s.decode_part == "32q1s2k" and s.prefill_part == "q512s4k"


def test_canonical_spelling_and_per_request_order() -> None:
    """Counts of one are dropped, exact multiples of 1024 are spelled with k."""
    s = parse_spec("1q2048s2048_2q1s3")
    assert s.text() == "q2ks2k_2q1s3"
    assert s.per_request() == [(2048, 2048), (1, 3), (1, 3)]
    assert parse_spec("q48s48").kind == "prefill" and parse_spec("4q1s64").kind == "decode"


def test_chunk_pairs_match_article_ledger() -> None:
    """Chunks 4, 4, 2 of a 10-token prompt process 10, 26 and 19 causal pairs (0x09)."""
    pairs = [parse_spec(t).attention_pairs for t in ("q4s4", "q4s8", "q2s10")]
    assert pairs == [10, 26, 19] and sum(pairs) == 55


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "BENCH.SPEC.SYNTAX"),
        ("32q1", "BENCH.SPEC.SYNTAX"),
        ("32q1s2k__q5s5", "BENCH.SPEC.SYNTAX"),
        ("q1.5ks2k", "BENCH.SPEC.SYNTAX"),
        ("32 q1s2k", "BENCH.SPEC.SYNTAX"),
        ("0q1s2k", "BENCH.SPEC.ZERO"),
        ("q0s4", "BENCH.SPEC.ZERO"),
        ("q512s256", "BENCH.SPEC.KV_SHORTER_THAN_Q"),
        ("70000q1s1024", "BENCH.SPEC.TOO_LARGE"),
    ],
)
def test_invalid_specs_name_their_code(text: str, code: str) -> None:
    """Every malformed spec is rejected with its own code and the given location."""
    with pytest.raises(InputError) as err:
        parse_spec(text, file="grid.yaml", pointer="/points/3")
    f = err.value.findings[0]
    assert f.code == code
    assert f.location.file == "grid.yaml" and f.location.pointer == "/points/3"


def test_non_string_spec_is_syntax_error() -> None:
    """A number where a spec belongs is a syntax error, not a crash."""
    with pytest.raises(InputError) as err:
        parse_spec(512)
    assert err.value.findings[0].code == "BENCH.SPEC.SYNTAX"
