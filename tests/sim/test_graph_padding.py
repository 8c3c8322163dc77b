"""CUDA-graph bucket padding in the cost models (lecture 4, CUDA graphs and padding)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from cbaudit.model import InputError
from cbaudit.sim import replay as core
from cbaudit.sim.calculators import graph_padding, parse_buckets
from cbaudit.sim.cost_models import OptionSource, RooflineCostModel
from cbaudit.sim.graph_padding import GraphPaddedCost, make_graph_buckets
from cbaudit.sim.step import StepShape
from cbaudit.sim.workload import Workload, workload_from_data


def _roofline() -> RooflineCostModel:
    return RooflineCostModel.from_options(
        {"model": "llama-3-8b-gqa-fp16", "hardware": "lecture4-h100-sxm"}, OptionSource()
    )


@pytest.mark.parametrize(
    ("buckets", "mean"),
    [("stride:1", "0"), ("stride:8", "7/2"), ("stride:16", "15/2"), ("pow2", None)],
)
def test_padding_per_batch_averages_to_the_calculator(buckets: str, mean: str | None) -> None:
    """Over B uniform in 1..256 the per-step padding has the lecture's mean (42.2 for pow2)."""
    gb = make_graph_buckets({"buckets": buckets, "max_batch": 256})
    assert gb is not None
    per_batch = [gb.padding(b) for b in range(1, 257)]
    calc = graph_padding(parse_buckets(buckets), 256)
    assert Fraction(sum(per_batch), 256) == calc.mean_padding
    assert max(per_batch) == calc.worst_padding
    if mean is not None:
        assert calc.mean_padding == Fraction(mean)
    else:  # the lecture's 42.2 tokens, worst 127
        assert round(float(calc.mean_padding), 1) == 42.2 and calc.worst_padding == 127
    assert gb.padding(257) == 0  # beyond the largest captured batch: eager, not padded


def test_a_padded_decode_step_costs_the_kv_read_of_its_phantom_rows() -> None:
    """In the bandwidth-bound regime each phantom row at context L costs L kv / (beta MBU)."""
    inner = _roofline()
    cost = GraphPaddedCost(inner, make_graph_buckets({"buckets": "pow2", "max_batch": 256}))
    step = StepShape.of([2000] * 65)  # 65 rows pad to 128
    padded, delta = cost.pad(step)
    assert delta == 63 and padded.decode_rows == 128
    assert inner.terms(padded).bound.value == "memory"
    t_tok = Fraction(2000) * inner.model.kv_bytes_per_token / inner.bytes_per_ms
    want = inner.terms(step).step_ms + delta * t_tok
    assert cost.step_time_ms(step) == pytest.approx(float(want), rel=1e-12)
    assert cost.step_time_ms(StepShape.of([2000] * 64)) == inner.step_time_ms(
        StepShape.of([2000] * 64)
    )


def test_phantom_rows_take_the_mean_decode_context() -> None:
    cost = GraphPaddedCost(_roofline(), make_graph_buckets({"buckets": [4], "max_batch": 4}))
    padded, delta = cost.pad(StepShape.of([10, 11, 13]))  # mean 11.33 -> 11
    assert delta == 1 and padded.decode_context_lens == (10, 11, 13, 11)
    prefill_only, d2 = cost.pad(StepShape.of([], [(0, 3)]))
    assert d2 == 1 and prefill_only.decode_context_lens == (1,)


def _workload() -> Workload:
    return workload_from_data(
        {
            "schema_version": 1,
            "workload_id": "graph",
            "clock": {"unit": "ms"},
            "budgets": {"token_budget": 512, "sequence_budget": 64},
            "requests": [
                {
                    "request_id": f"r{i}",
                    "arrival": 3 * i,
                    "prompt_tokens": 40 + i,
                    "max_output_tokens": 20 + 3 * i,
                }
                for i in range(30)
            ],
        },
        "graph.yaml",
    )


def _run(graph: dict[str, Any], **kw: Any) -> tuple[Any, dict[str, Any]]:
    opts = core.ReplayOptions(
        policy="sarathi-serve",
        cost_model=kw.pop("cost_model", "roofline"),
        cost_options=kw.pop("cost_options", {"hardware": "lecture4-h100-sxm"}),
        graph_buckets=graph,
        **kw,
    )
    run, metrics, _ = core.run(_workload(), opts, source="graph.yaml", steps=kw.get("steps", 0))
    return run, metrics


def test_a_replay_reports_padding_and_pays_for_it() -> None:
    run0, plain = _run({})
    run, m = _run({"buckets": "pow2", "max_batch": 512})
    assert "graph_padding" not in plain and "graph_buckets" not in plain["cost_model"]
    gp = m["graph_padding"]
    gb = make_graph_buckets({"buckets": "pow2", "max_batch": 512})
    assert gb is not None
    assert gp["padding_tokens"] == sum(gb.padding(n) for n in run.tokens_per_iteration) > 0
    assert gp["padded_steps"] > 0 and gp["graphs"] == 10
    # padding slows every padded step down, and the same plans run (the clock differs)
    assert run.end_time > run0.end_time
    assert m["cost_model"]["graph_buckets"]["buckets"] == "pow2"


def test_stride_one_pads_nothing_and_changes_nothing() -> None:
    run0, plain = _run({})
    run, m = _run({"buckets": "stride:1", "max_batch": 512})
    assert m["graph_padding"]["padding_tokens"] == 0
    assert run.end_time == run0.end_time and m["latency"] == plain["latency"]


def test_under_the_unit_clock_padding_is_reported_not_timed() -> None:
    run0, _ = _run({}, cost_model="unit", cost_options={})
    run, m = _run({"buckets": "pow2", "max_batch": 512}, cost_model="unit", cost_options={})
    assert m["graph_padding"]["padding_tokens"] > 0
    assert run.end_time == run0.end_time and run.iterations == run0.iterations


def test_steps_show_each_steps_padding() -> None:
    opts = core.ReplayOptions(
        policy="sarathi-serve",
        cost_model="roofline",
        cost_options={"hardware": "lecture4-h100-sxm"},
        graph_buckets={"buckets": "stride:16", "max_batch": 512},
    )
    run, _, _ = core.run(_workload(), opts, source="graph.yaml", steps=40)
    steps = run.extra["steps"]
    gb = make_graph_buckets({"buckets": "stride:16", "max_batch": 512})
    assert gb is not None
    for s in steps:
        assert s["padding_tokens"] == gb.padding(s["tokens"])
        assert s["padded_tokens"] == s["tokens"] + s["padding_tokens"]
    assert any(s["padding_tokens"] for s in steps)


@pytest.mark.parametrize(
    "options",
    [
        {"buckets": "stride:0", "max_batch": 8},
        {"buckets": "pow3", "max_batch": 8},
        {"buckets": "pow2", "max_batch": 0},
        {"buckets": "pow2"},  # pow2 has no largest size of its own
        {"buckets": [8, 4], "max_batch": 8},
        {"buckets": [4, 8], "max_batch": 16},  # the largest bucket cannot hold 16
        {"buckets": "pow2", "max_batch": 8, "colour": "red"},
        {"max_batch": 8},
    ],
)
def test_bad_bucket_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InputError) as info:
        _run(options)
    assert info.value.findings[0].code == "REPLAY.GRAPH_BUCKETS.OPTION"


def test_cli_graph_buckets(cli: Any, tmp_path: Any) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_workload().to_manifest()))
    base = ("replay", path, "--policy", "sarathi-serve")
    ok = cli(*base, "--graph-buckets", "stride:8", "--graph-max-batch", "256", "-f", "json")
    assert ok.code == 0, ok.err
    assert json.loads(ok.out)["results"][0]["metrics"]["graph_padding"]["graphs"] == 32
    for bad in (("--graph-buckets", "every"), ("--graph-max-batch", "8")):
        res = cli(*base, *bad)
        assert res.code == 2 and "Traceback" not in res.err
    assert "REPLAY.GRAPH_BUCKETS.OPTION" in cli(*base, "--graph-buckets", "every").err
