"""A replay's memory follows the live requests, not every request so far: what is kept per
request only while it runs is dropped when it finishes, and per-iteration figures are kept
as runs of equal values."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from cbaudit.contract.records import Queue
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine
from cbaudit.sim.metrics import distribution_counts, exact_sum
from cbaudit.sim.series import RunSeries, SortedCounts
from cbaudit.sim.workload import workload_from_data
from tests.sim.helpers import manifest


def _staggered(n: int) -> list[dict[str, Any]]:
    return [
        {
            "request_id": f"r{i}",
            "arrival": i // 3,
            "prompt_tokens": 3 + i % 7,
            "max_output_tokens": 2 + i % 5,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("policy", ["vllm-v1", "orca", "sarathi-serve", "static"])
@pytest.mark.parametrize("stretches", [True, False])
def test_the_live_validator_keeps_nothing_for_finished_requests(
    policy: str, stretches: bool
) -> None:
    """After every iteration the validator's per-request tables name unfinished requests
    only; at the end (everything finished) they are empty. K/V pressure makes vllm-v1
    preempt, so rebuild keys are made and dropped too."""
    budgets = {"token_budget": 16, "sequence_budget": 4}
    if policy == "vllm-v1":  # (the one here that preempts on a K/V shortage)
        budgets |= {"kv_block_size": 2, "kv_total_blocks": 14}
    wl = manifest(_staggered(40), budgets)
    engine = Engine(wl, POLICIES.create(policy), UnitCostModel(), stretches=stretches)
    engine.start()
    live = engine.live
    assert live is not None

    def tables() -> list[dict[int, Any]]:
        return [
            live._prefill_keys,
            live._decode_keys,
            live._rebuild_keys,
            live._limits,
            live._entry,
        ]

    peak = 0
    while engine.stop is None and engine.finished < engine.target:
        engine.iterate()
        for table in tables():
            assert all(engine.reqs[i].queue is not Queue.FINISHED for i in table)
            peak = max(peak, len(table))
    run = engine.report()
    assert run.stop_reason == "completed" and run.findings == []
    assert peak > 0  # (the tables were used)
    assert [len(t) for t in tables()] == [0, 0, 0, 0, 0]
    if policy == "vllm-v1":
        assert run.preemptions >= 1


def test_run_series_is_the_sequence_it_was_given() -> None:
    """Appends, runs and mixed lists in random order: the same values, length, total and
    every prefix sum as a plain list, with adjacent runs always distinct."""
    rng = random.Random(16)
    for _ in range(50):
        series, plain = RunSeries(), []
        for _ in range(rng.randint(0, 40)):
            how = rng.random()
            if how < 0.4:
                v = rng.choice([0, 1, 2, 7, 2048])
                series.append(v)
                plain.append(v)
            elif how < 0.7:
                v, k = rng.choice([0, 1, 7]), rng.randint(0, 5)
                series.extend([v] * k)
                plain.extend([v] * k)
            else:
                chunk = [rng.choice([0, 3, 4]) for _ in range(rng.randint(0, 6))]
                series.extend(iter(chunk))
                plain.extend(chunk)
        assert list(series) == plain and len(series) == len(plain)
        assert series.total() == sum(plain)
        assert [series.prefix_sum(n) for n in range(len(plain) + 3)] == [
            sum(plain[:n]) for n in range(len(plain) + 3)
        ]
        runs = list(series.runs())
        assert all(c > 0 for _, c in runs)
        assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))
        assert series == RunSeries(plain)
        assert series != RunSeries([*plain, 1])


def test_run_series_widens_when_a_value_or_a_run_does_not_fit_a_c_int() -> None:
    """Runs are C ints until a value or a run length needs more: then every run is kept
    exactly, with no value appended twice and none lost."""
    big = 2**40
    series = RunSeries([3, 3])
    series.append(big)  # a value past 2**31
    series.extend_run(big, 2**31)  # a run that grows past 2**31
    series.extend_run(5, 2**33)  # a new run longer than 2**31
    series.append(-(2**35))
    assert list(series.runs()) == [(3, 2), (big, 2**31 + 1), (5, 2**33), (-(2**35), 1)]
    assert len(series) == 2 + 2**31 + 1 + 2**33 + 1
    assert series.total() == 6 + big * (2**31 + 1) + 5 * 2**33 - 2**35
    small = RunSeries([1])
    small.extend_run(2, 2**31)  # the count does not fit, the value did: not appended twice
    assert list(small.runs()) == [(1, 1), (2, 2**31)]


def test_a_quiet_stretch_is_one_run() -> None:
    """A long replay's per-iteration figures take one run per change, not one per iteration:
    far fewer runs than iterations, and the same totals as the per-iteration path's."""
    wl = manifest(
        [
            {"request_id": f"r{i}", "arrival": 0, "prompt_tokens": 4, "max_output_tokens": 300}
            for i in range(8)
        ],
        {"token_budget": 64, "sequence_budget": 8},
    )
    fast = Engine(wl, POLICIES.create("vllm-v1"), UnitCostModel()).run()
    slow = Engine(wl, POLICIES.create("vllm-v1"), UnitCostModel(), stretches=False).run()
    assert fast.rows_per_iteration == slow.rows_per_iteration
    assert fast.tokens_per_iteration == slow.tokens_per_iteration
    assert fast.iterations == len(fast.rows_per_iteration) >= 300
    assert len(list(fast.rows_per_iteration.runs())) <= 3


def test_sorted_counts_is_the_multiset_a_dict_counts() -> None:
    """Counts folded in random batches (repeats across batches, a zero, equal neighbours):
    the same mapping as one dict, in ascending order, and the same distribution bit for bit."""
    rng = random.Random(7)
    for _ in range(40):
        whole: dict[float, int] = {}
        folded = SortedCounts()
        for _ in range(rng.randint(0, 6)):
            batch: dict[float, int] = {}
            for _ in range(rng.randint(0, 30)):
                v = rng.choice([0.0, 0.1, 0.2, 1 / 3, 2.5, rng.random(), rng.uniform(0, 1e6)])
                batch[v] = batch.get(v, 0) + rng.randint(1, 4)
            for v, c in batch.items():
                whole[v] = whole.get(v, 0) + c
            folded = folded.merged(batch)
        assert dict(folded) == whole and len(folded) == len(whole)
        assert list(folded) == sorted(whole)
        assert list(folded.items()) == sorted(whole.items())
        assert list(folded.values()) == [whole[v] for v in sorted(whole)]
        assert SortedCounts.of(whole) == folded
        assert distribution_counts(folded) == distribution_counts(whole)
        assert exact_sum(folded) == exact_sum(whole)
        for v in whole:
            assert folded[v] == whole[v]
        with pytest.raises(KeyError):
            folded[-1.0]


def test_folding_tbt_counts_changes_no_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay whose TBT dict is folded every few distinct gaps reports exactly what one that
    never folds reports (the fold threshold is a memory setting, not a semantic one)."""
    import cbaudit.sim.engine as engine_module
    from cbaudit.sim.cost_models import get_cost_model
    from cbaudit.sim.metrics import summarize

    wl = workload_from_data(
        {
            "workload_id": "fold",
            "clock": {"unit": "tick", "tick_ms": 0.5},  # (ms figures scaled from the counts)
            "budgets": {"token_budget": 32, "sequence_budget": 8},
            "requests": _staggered(60),
        }
    )
    cost = get_cost_model(
        "roofline", {"hardware": "nvidia-h100-sxm", "model": "llama-3-8b-gqa-fp16"}
    )

    def report() -> tuple[dict[str, Any], int]:
        run = Engine(wl, POLICIES.create("vllm-v1"), cost).run()
        return summarize(run), len(run.tbt_counts)

    monkeypatch.setattr(engine_module, "_TBT_FOLD", 10**9)
    whole, distinct = report()
    monkeypatch.setattr(engine_module, "_TBT_FOLD", 3)
    folded, _ = report()
    assert distinct > 20  # (several folds happened)
    assert folded == whole


def test_the_contract_view_makes_the_records_the_manifest_json_makes() -> None:
    """`contract_manifest` (declarations made on demand) against the eager manifest built from
    the workload's JSON: the same records by position and by id, positions, clients, head."""
    from dataclasses import replace

    from cbaudit.contract.records import RequestDecl, WorkloadManifest
    from cbaudit.sim.contract_view import contract_manifest

    requests = _staggered(30)
    requests[3] |= {"client": "a", "priority": 2, "slo": {"ttft_ms": 5, "e2e_ms": 9.5}}
    requests[7] |= {"client": "b", "request_generation": 1}
    wl = workload_from_data(
        {
            "workload_id": "view",
            "clock": {"unit": "ms"},
            "budgets": {"token_budget": 32, "sequence_budget": 8},
            "requests": requests,
        }
    )
    head = WorkloadManifest.from_json(wl.to_manifest(with_requests=False))
    eager = replace(head, requests=tuple(RequestDecl.from_json(r) for r in wl.iter_request_json()))
    index = {d.request_id: i for i, d in enumerate(wl.requests)}
    lazy = contract_manifest(wl, index)
    assert list(lazy.requests) == list(eager.requests) and len(lazy.requests) == 30
    assert lazy.requests[3] == eager.requests[3] and lazy.requests[2:5] == list(eager.requests[2:5])
    assert dict(lazy.by_id) == dict(eager.by_id)
    for rid in index:  # twice: made, then from the recent ones
        assert lazy.by_id.get(rid) == eager.by_id[rid] == lazy.by_id[rid]
    assert lazy.by_id.get("nope") is None and "nope" not in lazy.by_id
    with pytest.raises(KeyError):
        lazy.by_id["nope"]
    assert dict(lazy.position_of) == dict(eager.position_of)
    assert lazy.clients == eager.clients == frozenset({"a", "b"})
    assert (lazy.workload_id, lazy.policy, lazy.budgets, lazy.clock) == (
        eager.workload_id,
        eager.policy,
        eager.budgets,
        eager.clock,
    )


@pytest.mark.parametrize("scale", [None, 0.5, 3.0])
def test_the_streamed_tbt_line_is_the_whole_line(scale: float | None) -> None:
    """The samples file's tbt line written a pair at a time has the bytes of the line built
    whole (values that round to one JSON number merged, the first one's form kept), for gaps
    that collide after rounding, integral and not."""
    import hashlib
    import io
    import json

    from cbaudit.sim.metrics import json_number
    from cbaudit.sim.replay_compare import _stream_tbt

    def value(v: float | None) -> float | int | None:
        assert v is not None
        return json_number(v if scale is None else v * scale)

    rng = random.Random(3)
    gaps = [5.0, 4.9999999999, 5.0000000001, 0.1, 0.1 + 1e-12, 1 / 3, 2.0, 7.25]
    gaps += [rng.uniform(0, 50) for _ in range(200)]
    counts = SortedCounts.of({g: rng.randint(1, 5) for g in gaps})
    whole: dict[float | int, int] = {}
    for v, n in counts.items():  # (ascending: the order the dict saw them in)
        key = value(v)
        assert key is not None
        whole[key] = whole.get(key, 0) + n
    line = (
        json.dumps(
            {"tbt": [[v, whole[v]] for v in sorted(whole)]}, sort_keys=True, separators=(",", ":")
        ).encode()
        + b"\n"
    )
    out, digest = io.BytesIO(), hashlib.sha256()
    _stream_tbt(out, digest, counts, value)
    assert out.getvalue() == line
    assert digest.hexdigest() == hashlib.sha256(line).hexdigest()
    assert len(whole) < len(counts)  # (some gaps did merge)
    out = io.BytesIO()
    _stream_tbt(out, hashlib.sha256(), SortedCounts(), value)
    assert out.getvalue() == b'{"tbt":[]}\n'


def test_run_series_keeps_its_last_run_apart_exactly() -> None:
    """The last run is held apart from the arrays until a different value ends it: read at
    many points of the way and widened in the middle, the same runs, length, total and
    values as a plain list of runs."""
    rng = random.Random(5)
    series, plain = RunSeries(), []
    for step in range(1500):
        value = step % 3 if step != 1000 else 2**40  # widens on the way
        count = rng.randint(1, 4)
        series.extend_run(value, count)
        plain.append((value, count))
        if step % 97 == 0:  # a read; more runs come after it
            assert list(series.runs()) == plain and len(series) == sum(c for _, c in plain)
    assert list(series.runs()) == plain
    assert len(series) == sum(c for _, c in plain)
    assert series.total() == sum(v * c for v, c in plain)
    assert list(series) == [v for v, c in plain for _ in range(c)]
    assert series == RunSeries(list(series))
    series.extend_run(2, 2**63)  # past 8 bytes: refused when the run is closed
    with pytest.raises(OverflowError):
        series.append(1)
