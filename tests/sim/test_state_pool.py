"""A hybrid model's state pool beside the K/V pool (lecture 4, hybrid models)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cbaudit.model import InputError
from cbaudit.policies.base import PlanBuilder
from cbaudit.policies.registry import POLICIES
from cbaudit.sim import replay as core
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.state_pool import StatePool
from cbaudit.sim.workload import Workload, workload_from_data

STATE = 217_055_232  # lecture4-kimi-k3-hybrid: 69 x 96 x 128^2 x 2 B
FOUR_GIB = 4 * 2**30  # 19 states
LINK = 64_000_000  # 64 GB/s in bytes per ms


def _workload(n: int = 40, kv_total_blocks: int = 2000, prompt: int = 1024) -> Workload:
    return workload_from_data(
        {
            "schema_version": 1,
            "workload_id": "hybrid",
            "clock": {"unit": "tick"},
            "budgets": {
                "token_budget": 8192,
                "sequence_budget": 64,
                "kv_block_size": 64,
                "kv_total_blocks": kv_total_blocks,
            },
            "requests": [
                {
                    "request_id": f"r{i:02d}",
                    "arrival": 0,
                    "prompt_tokens": prompt,
                    "max_output_tokens": 128,
                }
                for i in range(n)
            ],
        },
        "hybrid.yaml",
    )


def _run(wl: Workload, state_pool: dict[str, Any], **kw: Any) -> tuple[Any, dict[str, Any]]:
    opts = core.ReplayOptions(
        policy=kw.pop("policy", "vllm-v1"),
        state_pool=state_pool,
        preemption=kw.pop("preemption", {"link_bytes_per_ms": LINK}),
        **kw,
    )
    run, metrics, _ = core.run(wl, opts, source="hybrid.yaml")
    return run, metrics


KIMI = {"model": "lecture4-kimi-k3-hybrid", "capacity_bytes": FOUR_GIB}


@pytest.mark.parametrize("policy", ["vllm-v1", "sarathi-serve", "orca", "decode-first"])
def test_the_state_pool_not_the_kv_pool_caps_concurrency(policy: str) -> None:
    """4 GiB of 0.20 GiB states hold 19 requests; the K/V pool would hold 111: the state pool
    refuses admissions, the K/V pool never does, and 19 requests are resident at the peak."""
    run, m = _run(_workload(), KIMI, policy=policy)
    assert run.stop_reason == "completed" and run.findings == []
    pools = m["pools"]
    assert pools["state"]["slots"] == FOUR_GIB // STATE == 19
    assert pools["state"]["peak_slots_held"] == 19
    assert pools["state"]["admission_refusals"] > 0
    assert pools["kv"]["admission_refusals"] == 0
    assert pools["kv"]["peak_blocks_used"] < pools["kv"]["total_blocks"] // 2
    assert pools["kv"]["block_bytes"] == 64 * 27_648  # the profile's K/V bytes per token
    assert pools["binding_pool"] == "state"
    assert m["requests_finished"] == 40


def test_without_the_state_pool_more_requests_run_at_once() -> None:
    _, capped = _run(_workload(), KIMI)
    _, free = _run(_workload(), {}, preemption={})
    assert "pools" not in free
    assert free["iterations"] < capped["iterations"]


def test_a_small_kv_pool_binds_instead() -> None:
    """Long prompts and a K/V pool of 200 blocks: the K/V pool refuses, the state pool not."""
    _, m = _run(_workload(prompt=4000, kv_total_blocks=200), KIMI)
    assert m["pools"]["binding_pool"] == "kv"
    assert m["pools"]["state"]["admission_refusals"] == 0
    assert m["pools"]["state"]["peak_slots_held"] < 19


def test_hybrid_preemption_defaults_to_swap_and_moves_the_state() -> None:
    """Under K/V pressure a hybrid model's victims are swapped, state included, and a victim
    returns only when a state slot is free."""
    wl = _workload(n=6, kv_total_blocks=50, prompt=900)
    run, m = _run(wl, {"bytes_per_request": 1000, "capacity_bytes": 4000})
    assert run.stop_reason == "completed" and run.findings == []
    report = m["preemption"]
    assert report["mode"] == "swap" and report["swap_outs"] > 0
    assert m["recompute_tokens"] == 0
    rows = sum(e["tokens"] for e in m["preemption_log"]["preemptions"])
    assert report["swap_out_bytes"] == rows * 131_072 + report["swap_outs"] * 1000
    assert report["state_bytes_per_request"] == 1000
    assert m["pools"]["state"]["peak_slots_held"] <= 4


def test_recompute_is_still_available_for_a_hybrid_model() -> None:
    wl = _workload(n=6, kv_total_blocks=50, prompt=900)
    _, m = _run(
        wl, {"bytes_per_request": 1000, "capacity_bytes": 4000}, preemption={"mode": "recompute"}
    )
    assert m["preemption"]["mode"] == "recompute" and m["recompute_tokens"] > 0


class _Greedy:
    """A defective policy: admits every waiting request, bypassing the builder's pools."""

    policy_id = "greedy"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = ("DECODE_ROW", "PREFILL_CHUNK")

    def choose(self, view: Any, plan: PlanBuilder) -> None:
        for r in view.running:
            plan.select(r, 1)
        for r in view.waiting:
            plan.select(r, 8, admit=True)


def test_a_policy_that_overcommits_the_state_pool_is_stopped() -> None:
    wl = _workload(n=6)
    pool = StatePool(capacity_bytes=2 * STATE, bytes_per_request=STATE)
    run = Engine(
        wl, _Greedy(), UnitCostModel(), validation=Validation.CONTRACT, state_pool=pool
    ).run()
    assert run.stop_reason == "contract_violation"
    assert [f.code for f in run.findings] == ["REPLAY.STATE.BUDGET_EXCEEDED"]


def test_a_policy_within_the_pool_passes_the_same_check() -> None:
    """The builder refuses the third admission (DEFERRED_STATE_POOL): no finding."""
    wl = _workload(n=6)
    pool = StatePool(capacity_bytes=2 * STATE, bytes_per_request=STATE)
    run = Engine(
        wl,
        POLICIES.create("sarathi-serve"),
        UnitCostModel(),
        validation=Validation.CONTRACT,
        state_pool=pool,
        cross_check=True,
    ).run()
    assert run.stop_reason == "completed" and run.findings == []
    assert pool.peak == 2 and pool.deferred_state > 0


@pytest.mark.parametrize(
    "options",
    [
        {"capacity_bytes": FOUR_GIB},  # no state per request, no roofline model
        {"capacity_bytes": 10, "bytes_per_request": 100},  # not even one state
        {"capacity_bytes": FOUR_GIB, "bytes_per_request": STATE, "model": "x"},
        {"capacity_bytes": FOUR_GIB, "model": "llama-3-8b-gqa-fp16"},  # not hybrid
        {"capacity_bytes": "4GiB", "bytes_per_request": STATE},
        {"capacity_bytes": FOUR_GIB, "bytes_per_request": STATE, "colour": "red"},
    ],
)
def test_bad_state_pool_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(InputError) as info:
        _run(_workload(n=2), options)
    assert info.value.findings[0].code == "REPLAY.STATE_POOL.OPTION"


def test_hybrid_default_swap_needs_a_link() -> None:
    with pytest.raises(InputError) as info:
        _run(_workload(n=2), KIMI, preemption={})
    assert info.value.findings[0].code == "REPLAY.PREEMPTION.OPTION"


def test_cli_state_pool(cli: Any, tmp_path: Any) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_workload().to_manifest()))
    ok = cli(
        "replay",
        path,
        "--policy",
        "vllm-v1",
        "--state-pool",
        "model=lecture4-kimi-k3-hybrid",
        "--state-pool",
        f"capacity_bytes={FOUR_GIB}",
        "--preemption",
        f"link_bytes_per_ms={LINK}",
        "--no-samples",
        "-f",
        "json",
    )
    assert ok.code == 0, ok.err
    pools = json.loads(ok.out)["results"][0]["metrics"]["pools"]
    assert pools["binding_pool"] == "state"
    bad = cli("replay", path, "--policy", "vllm-v1", "--state-pool", "capacity_bytes=1")
    assert bad.code == 2 and "REPLAY.STATE_POOL.OPTION" in bad.err
    assert "Traceback" not in bad.err
