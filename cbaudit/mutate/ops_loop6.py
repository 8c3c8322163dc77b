"""Loop 6 operators (article 0x09): break a chunk partition, a proxy or a schedule declaration."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, replace

ORACLE = "chunked-prefill"
TARGET = f"oracle:{ORACLE}"
LOOP = "6"


def _eq(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    section = data.get("equivalence")
    return section if isinstance(section, Mapping) else None


def _partition(label: str, chunks: list[tuple[int, int]]) -> dict[str, Any]:
    return {"label": label, "chunks": [{"start": s, "end": e} for s, e in chunks]}


def _cuts(length: int, rng: random.Random) -> list[tuple[int, int]]:
    """A seeded partition of [0, length) into at least three chunks."""
    points = sorted(rng.sample(range(1, length), min(max(2, length // 4), length - 1)))
    bounds = [0, *points, length]
    return list(itertools.pairwise(bounds))


def _with_partition(
    data: Mapping[str, Any], label: str, chunks: list[tuple[int, int]]
) -> tuple[dict[str, Any], ...]:
    section = _eq(data) or {}
    existing = section.get("partitions")
    if isinstance(existing, list):
        return (add("/equivalence/partitions/-", _partition(label, chunks)),)
    return (add("/equivalence/partitions", [_partition(label, chunks)]),)


def _reorder_chunk(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    if section is None or section.get("sequence_length", 0) < 4:
        return
    chunks = _cuts(section["sequence_length"], rng)
    k = rng.randrange(len(chunks) - 1)
    chunks[k], chunks[k + 1] = chunks[k + 1], chunks[k]
    yield _with_partition(data, "mutant-reordered", chunks), f"chunks {k} and {k + 1} swapped"


def _gap(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    if section is None or section.get("sequence_length", 0) < 4:
        return
    chunks = _cuts(section["sequence_length"], rng)
    k = rng.randrange(1, len(chunks))
    s, e = chunks[k]
    if e - s >= 2:
        chunks[k] = (s + 1, e)
        yield _with_partition(data, "mutant-gap", chunks), f"position {s} is never computed"


def _overlap(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    if section is None or section.get("sequence_length", 0) < 4:
        return
    chunks = _cuts(section["sequence_length"], rng)
    k = rng.randrange(1, len(chunks))
    s, e = chunks[k]
    chunks[k] = (s - 1, e)
    yield _with_partition(data, "mutant-overlap", chunks), f"position {s - 1} is computed twice"


def _pairs_total(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    if section and isinstance((section.get("expect") or {}).get("causal_pairs"), int):
        value = section["expect"]["causal_pairs"] + rng.choice((-1, 1))
        yield (
            (replace("/equivalence/expect/causal_pairs", value),),
            f"declared causal pairs {value}",
        )


def _zero_size(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    if section and isinstance(section.get("chunk_sizes"), list):
        yield (add("/equivalence/chunk_sizes/-", 0),), "chunk size 0 listed"


def _duplicate_size(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    section = _eq(data)
    sizes = section.get("chunk_sizes") if section else None
    if isinstance(sizes, list) and sizes:
        value = rng.choice(sizes)
        yield (add("/equivalence/chunk_sizes/-", value),), f"chunk size {value} listed twice"


def _reload(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    sweep = data.get("reload_sweep")
    if not isinstance(sweep, Mapping):
        return
    for i, row in enumerate(sweep.get("expect") or []):
        for key in ("r_hist", "bytes", "chunks"):
            if isinstance(row.get(key), int):
                value = row[key] + 1
                yield (
                    (replace(f"/reload_sweep/expect/{i}/{key}", value),),
                    f"C={row.get('chunk_size')} {key} {value}",
                )


def _schedule_pairs(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    expect = (data.get("schedule") or {}).get("expect") or {}
    for k, value in enumerate(expect.get("pairs") or []):
        yield (replace(f"/schedule/expect/pairs/{k}", value + 1),), f"chunk {k} pairs {value + 1}"


def _schedule_budget(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    schedule = data.get("schedule")
    if not isinstance(schedule, Mapping) or not isinstance(schedule.get("token_budget"), int):
        return
    chunks = [c for c in schedule.get("chunks") or [] if isinstance(c, int)]
    if chunks:
        value = max(chunks) + int(schedule.get("decode_rows") or 0) - 1
        yield (replace("/schedule/token_budget", value),), f"token budget {value}, one below a slot"


def _imbalance(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, row in enumerate(data.get("imbalance") or []):
        if isinstance(row.get("expect_ms"), int | float):
            value = row["expect_ms"] + 1
            yield (replace(f"/imbalance/{i}/expect_ms", value),), f"imbalance case {i} {value} ms"


def _op(name: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, "chunked-prefill fixture", pointer, changes, expect, gen)


OPERATORS: tuple[Operator, ...] = (
    _op(
        "chunk.order.swap",
        "/equivalence/partitions/-",
        "reorder two causal chunks of a partition",
        "CHUNK.ORDER",
        _reorder_chunk,
    ),
    _op(
        "chunk.coverage.gap",
        "/equivalence/partitions/-",
        "leave one position of a partition uncomputed",
        "CHUNK.COVERAGE",
        _gap,
    ),
    _op(
        "chunk.coverage.overlap",
        "/equivalence/partitions/-",
        "compute one position in two chunks",
        "CHUNK.COVERAGE",
        _overlap,
    ),
    _op(
        "chunk.pairs.total",
        "/equivalence/expect/causal_pairs",
        "declare a wrong causal-pair total",
        "CHUNK.PAIRS.TOTAL",
        _pairs_total,
    ),
    _op(
        "chunk.size.zero",
        "/equivalence/chunk_sizes/-",
        "list a zero chunk size",
        "CHUNK.SIZE.ZERO",
        _zero_size,
    ),
    _op(
        "chunk.size.duplicate",
        "/equivalence/chunk_sizes/-",
        "list a chunk size twice",
        "CHUNK.SIZE.DUPLICATE",
        _duplicate_size,
    ),
    _op(
        "chunk.reload.drift",
        "/reload_sweep/expect/*/{r_hist,bytes,chunks}",
        "drift a declared reload proxy by one",
        "CHUNK.RELOAD.WRONG",
        _reload,
    ),
    _op(
        "chunk.schedule.pairs",
        "/schedule/expect/pairs/*",
        "declare wrong pairs for a scheduled chunk",
        "CHUNK.SCHEDULE.PAIRS",
        _schedule_pairs,
    ),
    _op(
        "chunk.schedule.budget",
        "/schedule/token_budget",
        "lower the schedule's token budget below a slot's use",
        "CHUNK.SCHEDULE.BUDGET",
        _schedule_budget,
    ),
    _op(
        "chunk.imbalance.drift",
        "/imbalance/*/expect_ms",
        "declare a wrong imbalance proxy",
        "CHUNK.IMBALANCE.WRONG",
        _imbalance,
    ),
)
