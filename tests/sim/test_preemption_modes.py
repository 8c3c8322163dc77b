"""Preemption mode per victim: recompute, swap and auto (lecture 4's crossover rule)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from cbaudit.model import InputError
from cbaudit.sim import replay as core
from cbaudit.sim.calculators import Rates, RecomputeCost, StepModel, SwapCost
from cbaudit.sim.profiles import load_hardware_profile, load_model_profile
from cbaudit.sim.workload import Workload, workload_from_data

# PCIe 3.0 x8, each direction: slow enough that the crossover L* falls near 1,550 tokens for an
# 8B model on the lecture's H100 (s = 2 kv / link just above a = 2P / (pi MFU)).
LINK_BYTES_PER_MS = 7_880_000
ROOFLINE = {"hardware": "lecture4-h100-sxm"}


def _workload(kv_total_blocks: int = 380) -> Workload:
    reqs = [
        ("long-a", 2400),
        ("short-a", 200),
        ("long-b", 2400),
        ("short-b", 200),
    ]
    return workload_from_data(
        {
            "schema_version": 1,
            "workload_id": "auto-preemption",
            "clock": {"unit": "ms"},
            "budgets": {
                "token_budget": 2048,
                "sequence_budget": 8,
                "kv_block_size": 16,
                "kv_total_blocks": kv_total_blocks,
            },
            "requests": [
                {"request_id": rid, "arrival": 0, "prompt_tokens": p, "max_output_tokens": 400}
                for rid, p in reqs
            ],
        },
        "auto.yaml",
    )


def _run(preemption: dict[str, Any], **kw: Any) -> tuple[Any, dict[str, Any]]:
    opts = core.ReplayOptions(
        policy="vllm-v1",
        cost_model=kw.pop("cost_model", "roofline"),
        cost_options=kw.pop("cost_options", ROOFLINE),
        preemption=preemption,
        **kw,
    )
    run, metrics, _ = core.run(_workload(), opts, source="auto.yaml")
    return run, metrics


def _crossover() -> Fraction:
    """L* by the calculators (the `cbaudit model preemption-cost` formulas)."""
    model = load_model_profile("llama-3-8b-gqa-fp16")
    rates = Rates.of(load_hardware_profile("lecture4-h100-sxm"), "fp16")
    rc = RecomputeCost.of(StepModel.of(model), rates)
    swap = SwapCost(Fraction(model.kv_bytes_per_token), Fraction(LINK_BYTES_PER_MS * 1000))
    got = rc.crossover(swap)
    assert got is not None
    return got


def test_auto_recomputes_short_victims_and_swaps_long_ones() -> None:
    """Each victim takes the cheaper mode: recompute below L*, swap above, both happen."""
    run, m = _run({"mode": "auto", "link_bytes_per_ms": LINK_BYTES_PER_MS})
    assert run.stop_reason == "completed" and run.findings == []
    log = m["preemption_log"]["preemptions"]
    assert len(log) == m["preemptions"] == 3
    lstar = _crossover()
    for entry in log:
        want = "recompute" if entry["tokens"] < lstar else "swap"
        assert entry["mode"] == want, entry
        cheaper = "recompute" if entry["recompute_ms"] < entry["swap_ms"] else "swap"
        assert entry["mode"] == cheaper
        assert entry["cost_ms"] == min(entry["recompute_ms"], entry["swap_ms"])
    assert {e["request_id"]: e["mode"] for e in log} == {
        "short-b": "recompute",
        "long-b": "swap",
        "short-a": "recompute",
    }
    report = m["preemption"]
    assert report["by_mode"] == {"recompute": 2, "swap": 1}
    assert report["swap_outs"] == report["swap_ins"] == 1
    assert report["rule"]["crossover_tokens"] == pytest.approx(float(lstar), rel=1e-9)
    # only the recomputed victims' rows are rebuilt
    recomputed = sum(e["tokens"] for e in log if e["mode"] == "recompute")
    assert 0 < m["recompute_tokens"] <= recomputed


def test_swap_and_recompute_modes_take_one_mode_for_every_victim() -> None:
    _, swap = _run({"mode": "swap", "link_bytes_per_ms": LINK_BYTES_PER_MS})
    assert swap["preemptions"] > 0 and swap["recompute_tokens"] == 0
    assert {e["mode"] for e in swap["preemption_log"]["preemptions"]} == {"swap"}
    _, rec = _run({"mode": "recompute", "link_bytes_per_ms": LINK_BYTES_PER_MS})
    assert rec["preemptions"] > 0 and rec["recompute_tokens"] > 0
    assert {e["mode"] for e in rec["preemption_log"]["preemptions"]} == {"recompute"}
    assert rec["preemption"]["transfer_ms_modeled"] == 0


def test_explicit_recompute_replays_exactly_as_the_default() -> None:
    """mode=recompute with costs only adds the report: the replay itself is unchanged."""
    _, default = _run({})
    _, rec = _run({"mode": "recompute", "link_bytes_per_ms": LINK_BYTES_PER_MS})
    assert "preemption_log" not in default and "preemption" not in default
    for key in ("preemptions", "recompute_tokens", "iterations", "latency", "output_tokens"):
        assert rec[key] == default[key], key


def test_the_roofline_hardware_gives_the_link_and_the_model_the_row_bytes() -> None:
    """Without link_bytes_per_ms the host link of the hardware profile is used (64 GB/s):
    swap is then cheaper at every length, so auto swaps every victim."""
    _, m = _run({"mode": "auto"})
    report = m["preemption"]
    assert report["write_bytes_per_ms"] == 64_000_000
    assert report["bytes_per_row"] == 131_072  # llama-3-8b's K/V bytes per token
    assert report["rule"]["crossover_tokens"] is None
    assert report["by_mode"]["recompute"] == 0 and report["by_mode"]["swap"] > 0


def test_a_full_host_pool_falls_back_to_recompute() -> None:
    _, m = _run(
        {"mode": "swap", "link_bytes_per_ms": LINK_BYTES_PER_MS, "host_pool_bytes": 1_000_000}
    )
    log = m["preemption_log"]["preemptions"]
    assert log and all(e.get("fallback") == "host_pool_full" for e in log)
    assert all(e["mode"] == "recompute" for e in log)
    assert m["preemption"]["host_pool_fallbacks"] == len(log) and m["recompute_tokens"] > 0


def test_log_limit_counts_what_it_does_not_list() -> None:
    _, m = _run({"mode": "auto", "link_bytes_per_ms": LINK_BYTES_PER_MS, "log_limit": 1})
    assert len(m["preemption_log"]["preemptions"]) == 1
    assert m["preemption_log"]["not_listed"] == m["preemptions"] - 1


def test_declared_recompute_rule_runs_auto_under_the_unit_clock() -> None:
    """a and c declared: auto works without a roofline (L* = (s - a) / c = 1000 here)."""
    s = 2 * 131_072 / LINK_BYTES_PER_MS
    a = s / 2
    c = (s - a) / 1000
    _, m = _run(
        {
            "mode": "auto",
            "link_bytes_per_ms": LINK_BYTES_PER_MS,
            "recompute_ms_per_token": a,
            "recompute_ms_per_token_sq": c,
        },
        cost_model="unit",
        cost_options={},
    )
    for e in m["preemption_log"]["preemptions"]:
        assert e["mode"] == ("recompute" if e["tokens"] < 1000 else "swap")
    assert m["preemption"]["rule"]["crossover_tokens"] == pytest.approx(1000)


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "auto", "link_bytes_per_ms": 1},  # unit clock: no a and c
        {"mode": "sometimes", "link_bytes_per_ms": 1},
        {"mode": "auto", "link_bytes_per_ms": 1, "recompute_ms_per_token": 1},
        {"mode": "swap", "link_bytes_per_ms": 1, "host_pool_bytes": 0},
        {"mode": "swap", "link_bytes_per_ms": 1, "log_limit": -1},
        {"mode": "swap", "link_bytes_per_ms": 1, "log_limit": 2.5},
        {
            "mode": "auto",
            "link_bytes_per_ms": 1,
            "recompute_ms_per_token": -1,
            "recompute_ms_per_token_sq": 1,
        },
    ],
)
def test_bad_mode_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InputError) as info:
        _run(options, cost_model="unit", cost_options={})
    assert info.value.findings[0].code == "REPLAY.PREEMPTION.OPTION"


def test_cli_auto_mode_and_its_errors(cli: Any, tmp_path: Any) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_workload().to_manifest()))
    base = ("replay", path, "--policy", "vllm-v1", "--cost-model", "roofline")
    ok = cli(
        *base,
        "--cost-option",
        "hardware=lecture4-h100-sxm",
        "--preemption",
        "mode=auto",
        "--preemption",
        f"link_bytes_per_ms={LINK_BYTES_PER_MS}",
        "--no-samples",
        "-f",
        "json",
    )
    assert ok.code == 0, ok.err
    metrics = json.loads(ok.out)["results"][0]["metrics"]
    assert metrics["preemption"]["by_mode"] == {"recompute": 2, "swap": 1}
    bad = cli("replay", path, "--policy", "vllm-v1", "--preemption", "mode=auto")
    assert bad.code == 2 and "REPLAY.PREEMPTION.OPTION" in bad.err
    assert "Traceback" not in bad.err
