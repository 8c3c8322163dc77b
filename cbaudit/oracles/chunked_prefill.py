"""Loop 6 oracle (article 0x09): chunked prefill keeps the causal triangle; what it costs.

Four parts, each optional in a fixture (at least one present):

`equivalence`
    Full causal attention over S positions against every chunk partition the fixture names
    (by chunk size, or explicitly). A chunk [s_m, s_m + c_m) sees the committed history
    [0, s_m) plus the causal prefix of its own rows; history comes from a cache that holds
    only rows of chunks already completed. The oracle enumerates the (query, key) pairs each
    partition really processes and compares them with the full triangle (S(S+1)/2 pairs),
    and compares outputs with full attention bitwise (same per-query reduction order:
    keys in ascending position). Per chunk it also reports P_m = c_m s_m + c_m(c_m+1)/2.
`reload_sweep`
    The cross-invocation K/V reload proxy R_hist = sum of chunk starts, and its byte proxy
    R_hist * b_KV, for each chunk size over one prompt length. A proxy, not measured traffic.
`schedule`
    The worked cadence fixture: a prompt split into declared chunks beside a number of decode
    rows under a token budget: coverage, budget, pairs per chunk, prior rows exposed.
`imbalance`
    The synthetic imbalance-area proxy I = n * max(t) - sum(t) for service-time vectors.

Every declared number is checked; integer quantities are exact, the attention comparison
uses floats with one fixed reduction order (Q/K/V are dyadic rationals from a seeded
`random.Random`, so their products are exact as well).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from cbaudit.model import CheckResult, EvidenceClass, FindingSink
from cbaudit.oracles.fixtures import Fixture

NAME = "chunked-prefill"
FIXTURE_SCHEMA = "chunked-prefill-fixture"
MIB = 1024 * 1024

CODES: Mapping[str, str] = {
    "CHUNK.PAIRS.MISSING": "a partition misses causal (query, key) pairs of the full triangle",
    "CHUNK.PAIRS.EXTRA": "a partition processes pairs outside the triangle, or one pair twice",
    "CHUNK.PAIRS.TOTAL": "the declared causal-pair total is not S(S+1)/2",
    "CHUNK.NUMERIC.MISMATCH": "chunked attention output differs from full causal attention",
    "CHUNK.ORDER": "chunks do not run in ascending position order",
    "CHUNK.COVERAGE": "chunks leave a gap, overlap, or do not cover [0, S)",
    "CHUNK.HISTORY.FRONTIER": "a chunk's history is not exactly the committed frontier [0, s_m)",
    "CHUNK.MASK.NOT_CAUSAL": "a chunk's in-chunk mask is not causal",
    "CHUNK.SIZE.ZERO": "a chunk size is zero",
    "CHUNK.SIZE.DUPLICATE": "a chunk size is listed twice",
    "CHUNK.RELOAD.WRONG": "a declared reload proxy (rows, bytes or chunk count) is wrong",
    "CHUNK.SCHEDULE.COVERAGE": "schedule chunks do not add up to the prompt",
    "CHUNK.SCHEDULE.BUDGET": "a schedule slot's chunk plus decode rows exceeds the token budget",
    "CHUNK.SCHEDULE.PAIRS": "declared per-chunk or total pairs of the schedule are wrong",
    "CHUNK.SCHEDULE.EXPOSURE": "declared prior rows exposed by the schedule are wrong",
    "CHUNK.IMBALANCE.WRONG": "a declared imbalance proxy is wrong",
}


def tri(n: int) -> int:
    """The triangular number n(n+1)/2: causal pairs of an n-token prefix."""
    return n * (n + 1) // 2


def chunk_pairs(start: int, size: int) -> int:
    """P_m = c_m s_m + c_m (c_m + 1) / 2: history pairs plus the in-chunk triangle."""
    return size * start + tri(size)


def equal_chunks(length: int, size: int) -> list[tuple[int, int]]:
    """[start, end) chunks of `size` covering [0, length); the last may be shorter."""
    return [(s, min(s + size, length)) for s in range(0, length, size)]


def reload_rows(chunks: Sequence[tuple[int, int]]) -> int:
    """R_hist: each prior row counted once per later chunk invocation that re-exposes it."""
    return sum(start for start, _ in chunks)


@dataclass(frozen=True)
class Chunk:
    """One chunk invocation: query rows [start, end), history [0, history_end), its mask."""

    start: int
    end: int
    history_end: int
    causal: bool = True


@dataclass(frozen=True)
class Rows:
    """Deterministic per-position Q/K/V rows (dyadic rationals, exact as floats)."""

    q: tuple[tuple[float, ...], ...]
    k: tuple[tuple[float, ...], ...]
    v: tuple[tuple[float, ...], ...]

    @classmethod
    def seeded(cls, length: int, head_dim: int, seed: int) -> Rows:
        rng = random.Random(seed)

        def mat() -> tuple[tuple[float, ...], ...]:
            return tuple(
                tuple(rng.randint(-8, 8) / 8 for _ in range(head_dim)) for _ in range(length)
            )

        return cls(mat(), mat(), mat())


def attend(rows: Rows, query: int, keys: Sequence[int]) -> tuple[float, ...]:
    """Softmax attention of `query` over `keys` in the given order (the reduction order)."""
    q = rows.q[query]
    scale = 1.0 / math.sqrt(len(q))
    scores = []
    for key in keys:
        acc = 0.0
        for a, b in zip(q, rows.k[key], strict=True):
            acc += a * b
        scores.append(acc * scale)
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = 0.0
    for w in weights:
        total += w
    out = []
    for c in range(len(q)):
        acc = 0.0
        for w, key in zip(weights, keys, strict=True):
            acc += w * rows.v[key][c]
        out.append(acc / total)
    return tuple(out)


def full_causal(rows: Rows, length: int) -> list[tuple[float, ...]]:
    """One invocation over the whole prompt: query i sees keys 0..i."""
    return [attend(rows, i, range(i + 1)) for i in range(length)]


@dataclass(frozen=True)
class ChunkedRun:
    """What a chunked execution processed and produced."""

    pairs: Counter[tuple[int, int]]
    pairs_per_chunk: tuple[int, ...]
    outputs: Mapping[int, tuple[float, ...]]


def run_chunked(rows: Rows, chunks: Sequence[Chunk]) -> ChunkedRun:
    """Run chunks in the given order against a cache that holds only completed chunks."""
    committed: set[int] = set()
    pairs: Counter[tuple[int, int]] = Counter()
    per_chunk: list[int] = []
    outputs: dict[int, tuple[float, ...]] = {}
    for chunk in chunks:
        history = [p for p in range(chunk.history_end) if p in committed]
        count = 0
        for i in range(chunk.start, chunk.end):
            local = range(chunk.start, i + 1) if chunk.causal else range(chunk.start, chunk.end)
            keys = [*history, *local]
            for key in keys:
                pairs[(i, key)] += 1
            count += len(keys)
            outputs.setdefault(i, attend(rows, i, keys))
        per_chunk.append(count)
        committed.update(range(chunk.start, chunk.end))
    return ChunkedRun(pairs, tuple(per_chunk), outputs)


def _static_chunk_checks(
    chunks: Sequence[Chunk], length: int, label: str, ptr: str, sink: FindingSink
) -> None:
    for j, ch in enumerate(chunks):
        if ch.end <= ch.start:
            sink.add("CHUNK.SIZE.ZERO", f"{label}: chunk {j} is [{ch.start},{ch.end})", ptr)
        if ch.history_end != ch.start:
            sink.add(
                "CHUNK.HISTORY.FRONTIER",
                f"{label}: chunk {j} [{ch.start},{ch.end}) reads history [0,{ch.history_end}),"
                f" not the committed frontier [0,{ch.start})",
                ptr,
            )
        if not ch.causal:
            sink.add("CHUNK.MASK.NOT_CAUSAL", f"{label}: chunk {j} has no causal mask", ptr)
    starts = [ch.start for ch in chunks]
    if starts != sorted(starts):
        sink.add("CHUNK.ORDER", f"{label}: chunks run in start order {starts}", ptr)
    cursor = 0
    for ch in sorted(chunks, key=lambda c: (c.start, c.end)):
        if ch.start != cursor:
            kind = "gap" if ch.start > cursor else "overlap"
            sink.add("CHUNK.COVERAGE", f"{label}: {kind} at position {min(cursor, ch.start)}", ptr)
        cursor = max(cursor, ch.end)
    if cursor != length:
        sink.add("CHUNK.COVERAGE", f"{label}: chunks end at {cursor}, not S = {length}", ptr)


def _equivalence(section: Mapping[str, Any], sink: FindingSink) -> dict[str, Any]:
    length = section["sequence_length"]
    rows = Rows.seeded(length, section.get("head_dim", 2), section.get("seed", 0))
    full = full_causal(rows, length)
    triangle = Counter((i, j) for i in range(length) for j in range(i + 1))
    partitions: list[tuple[str, Any, list[Chunk], str]] = []
    sizes = section.get("chunk_sizes", [])
    for size, count in sorted(Counter(sizes).items()):
        if count > 1:
            sink.add(
                "CHUNK.SIZE.DUPLICATE",
                f"chunk size {size} is listed {count} times",
                "/equivalence/chunk_sizes",
            )
    for j, size in enumerate(sizes):
        ptr = f"/equivalence/chunk_sizes/{j}"
        if size == 0:
            sink.add("CHUNK.SIZE.ZERO", "chunk size 0 cannot partition a prompt", ptr)
            continue
        chunks = [Chunk(s, e, s) for s, e in equal_chunks(length, size)]
        partitions.append((f"C={size}", size, chunks, ptr))
    for j, raw in enumerate(section.get("partitions", [])):
        chunks = [
            Chunk(c["start"], c["end"], c.get("history_end", c["start"]), c.get("causal", True))
            for c in raw["chunks"]
        ]
        partitions.append((raw["label"], None, chunks, f"/equivalence/partitions/{j}"))
    expect = section.get("expect", {})
    declared_total = expect.get("causal_pairs")
    if declared_total is not None and declared_total != tri(length):
        sink.add(
            "CHUNK.PAIRS.TOTAL",
            f"declared {declared_total} causal pairs, S(S+1)/2 = {tri(length)} for S = {length}",
            "/equivalence/expect/causal_pairs",
        )
    reports = []
    for label, size, chunks, ptr in partitions:
        _static_chunk_checks(chunks, length, label, ptr, sink)
        result = run_chunked(rows, chunks)
        missing = sum((triangle - result.pairs).values())
        extra = sum((result.pairs - triangle).values())
        if missing:
            sink.add("CHUNK.PAIRS.MISSING", f"{label}: {missing} causal pairs never processed", ptr)
        if extra:
            sink.add("CHUNK.PAIRS.EXTRA", f"{label}: {extra} pairs outside the triangle", ptr)
        errors = [
            max(abs(a - b) for a, b in zip(result.outputs[i], full[i], strict=True))
            for i in range(length)
            if i in result.outputs
        ]
        bitwise = len(result.outputs) == length and all(
            result.outputs.get(i) == full[i] for i in range(length)
        )
        if not bitwise:
            sink.add(
                "CHUNK.NUMERIC.MISMATCH",
                f"{label}: outputs differ from full causal attention "
                f"(max abs error {max(errors) if errors else 'n/a'}, "
                f"{length - len(result.outputs)} queries without output)",
                ptr,
            )
        reports.append(
            {
                "label": label,
                "chunk_size": size,
                "chunks": [[c.start, c.end] for c in chunks],
                "pairs_per_chunk": list(result.pairs_per_chunk),
                "pairs_formula": [chunk_pairs(c.start, c.end - c.start) for c in chunks],
                "pairs_total": sum(result.pairs.values()),
                "missing_pairs": missing,
                "extra_pairs": extra,
                "max_abs_error": max(errors) if errors else None,
                "bitwise_equal": bitwise,
                "invocations": len(chunks),
            }
        )
    return {
        "sequence_length": length,
        "causal_pairs": tri(length),
        "reduction_order": "per query: keys in ascending position; features in index order",
        "partitions": reports,
    }


def _reload(section: Mapping[str, Any], sink: FindingSink) -> dict[str, Any]:
    length = section["sequence_length"]
    per_row = section["bytes_per_row"]
    table: dict[int, dict[str, Any]] = {}
    for j, size in enumerate(section["chunk_sizes"]):
        if size == 0:
            sink.add("CHUNK.SIZE.ZERO", "chunk size 0", f"/reload_sweep/chunk_sizes/{j}")
            continue
        if size in table:
            sink.add(
                "CHUNK.SIZE.DUPLICATE",
                f"chunk size {size} is listed twice",
                f"/reload_sweep/chunk_sizes/{j}",
            )
            continue
        chunks = equal_chunks(length, size)
        rows = reload_rows(chunks)
        count = len(chunks)
        table[size] = {
            "chunk_size": size,
            "chunks": count,
            "chunk_starts": [s for s, _ in chunks],
            "r_hist": rows,
            "r_hist_equal_chunk_formula": (
                size * count * (count - 1) // 2 if length % size == 0 else None
            ),
            "bytes": rows * per_row,
            "mib": float(Fraction(rows * per_row, MIB)),
        }
    for j, want in enumerate(section.get("expect", [])):
        ptr = f"/reload_sweep/expect/{j}"
        got = table.get(want["chunk_size"])
        if got is None:
            sink.add("CHUNK.RELOAD.WRONG", f"chunk size {want['chunk_size']} is not swept", ptr)
            continue
        for name in ("chunks", "r_hist", "bytes", "mib"):
            if name in want and Fraction(str(want[name])) != Fraction(str(got[name])):
                sink.add(
                    "CHUNK.RELOAD.WRONG",
                    f"C={want['chunk_size']}: declared {name} {want[name]}, derived {got[name]}",
                    f"{ptr}/{name}",
                )
    return {
        "sequence_length": length,
        "bytes_per_row": per_row,
        "proxy": "R_hist = sum of chunk starts; bytes = R_hist * bytes_per_row (not measured)",
        "rows": [table[k] for k in sorted(table)],
    }


def _schedule(section: Mapping[str, Any], sink: FindingSink) -> dict[str, Any]:
    prompt = section["prompt_tokens"]
    sizes = section["chunks"]
    decode_rows = section.get("decode_rows", 0)
    budget = section.get("token_budget")
    chunks: list[tuple[int, int]] = []
    cursor = 0
    for j, size in enumerate(sizes):
        if size == 0:
            sink.add("CHUNK.SIZE.ZERO", "a schedule chunk of 0 rows", f"/schedule/chunks/{j}")
        chunks.append((cursor, cursor + size))
        cursor += size
    if cursor != prompt:
        sink.add(
            "CHUNK.SCHEDULE.COVERAGE",
            f"chunks {sizes} cover {cursor} rows, the prompt has {prompt}",
            "/schedule/chunks",
        )
    counted = run_chunked(
        Rows.seeded(max(prompt, cursor), 1, 0), [Chunk(s, e, s) for s, e in chunks]
    ).pairs_per_chunk
    slots = []
    for j, (start, end) in enumerate(chunks):
        rows_in_slot = (end - start) + decode_rows
        if budget is not None and rows_in_slot > budget:
            sink.add(
                "CHUNK.SCHEDULE.BUDGET",
                f"slot {j}: {end - start} prompt rows + {decode_rows} decode rows = "
                f"{rows_in_slot} > budget {budget}",
                f"/schedule/chunks/{j}",
            )
        slots.append(
            {
                "slot": j,
                "chunk": [start, end],
                "prompt_rows": end - start,
                "decode_rows": decode_rows,
                "token_rows": rows_in_slot,
                "pairs": counted[j],
                "pairs_formula": chunk_pairs(start, end - start),
                "prior_rows_exposed": start,
            }
        )
    pairs = [s["pairs"] for s in slots]
    exposed = reload_rows(chunks)
    expect = section.get("expect", {})
    if "pairs" in expect and list(expect["pairs"]) != pairs:
        sink.add(
            "CHUNK.SCHEDULE.PAIRS",
            f"declared pairs {expect['pairs']}, derived {pairs}",
            "/schedule/expect/pairs",
        )
    if "total_pairs" in expect and expect["total_pairs"] != sum(pairs):
        sink.add(
            "CHUNK.SCHEDULE.PAIRS",
            f"declared total {expect['total_pairs']}, derived {sum(pairs)}",
            "/schedule/expect/total_pairs",
        )
    if "prior_rows_exposed" in expect and expect["prior_rows_exposed"] != exposed:
        sink.add(
            "CHUNK.SCHEDULE.EXPOSURE",
            f"declared {expect['prior_rows_exposed']} prior rows exposed, derived {exposed}",
            "/schedule/expect/prior_rows_exposed",
        )
    return {
        "prompt_tokens": prompt,
        "token_budget": budget,
        "slots": slots,
        "pairs": pairs,
        "total_pairs": sum(pairs),
        "full_triangle": tri(prompt),
        "prior_rows_exposed": exposed,
    }


def imbalance_proxy(service_ms: Sequence[Fraction]) -> Fraction:
    """I = n * max(t) - sum(t): an idle-area proxy in ms, not a pipeline simulation."""
    return len(service_ms) * max(service_ms) - sum(service_ms, Fraction(0))


def _number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def _imbalance(section: Sequence[Mapping[str, Any]], sink: FindingSink) -> list[dict[str, Any]]:
    out = []
    for j, case in enumerate(section):
        times = [Fraction(str(t)) for t in case["service_ms"]]
        value = imbalance_proxy(times)
        if "expect_ms" in case and Fraction(str(case["expect_ms"])) != value:
            sink.add(
                "CHUNK.IMBALANCE.WRONG",
                f"{case['service_ms']}: declared {case['expect_ms']} ms, derived {_number(value)}",
                f"/imbalance/{j}/expect_ms",
            )
        out.append({"service_ms": case["service_ms"], "imbalance_ms": _number(value)})
    return out


def run(fixture: Fixture) -> CheckResult:
    """Run the Loop 6 chunked-prefill oracle on `fixture`."""
    fixture.require_schema(FIXTURE_SCHEMA)
    data = fixture.data
    sink = FindingSink(fixture.locate, CODES)
    metrics: dict[str, Any] = {"oracle": NAME}
    if "equivalence" in data:
        metrics["equivalence"] = _equivalence(data["equivalence"], sink)
    if "reload_sweep" in data:
        metrics["reload_sweep"] = _reload(data["reload_sweep"], sink)
    if "schedule" in data:
        metrics["schedule"] = _schedule(data["schedule"], sink)
    if "imbalance" in data:
        metrics["imbalance"] = _imbalance(data["imbalance"], sink)
    return CheckResult(
        check=NAME,
        subject=fixture.path,
        findings=tuple(sink.findings),
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        reason=None if sink.findings else "every partition keeps the causal triangle exactly",
    )
