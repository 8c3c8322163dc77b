"""Preemption by exact preservation (swap) on the replay engine, beside recompute."""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.model import InputError
from cbaudit.policies.registry import POLICIES
from cbaudit.sim import replay as core
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.preemption_swap import BYTES_PER_ROW, make_preemption
from cbaudit.sim.step import StepShape
from cbaudit.sim.workload import workload_from_data


def _workload(unit: str = "tick") -> Any:
    reqs = [
        {"request_id": f"r{i}", "arrival": 0, "prompt_tokens": 3, "max_output_tokens": 5}
        for i in range(3)
    ]
    clock = {"unit": unit} if unit == "ms" else {"unit": "tick"}
    return workload_from_data(
        {
            "schema_version": 1,
            "workload_id": "swap-pressure",
            "clock": clock,
            "policy": {
                "policy_id": "vllm-v1",
                "policy_version": "0.23.0-rules.1",
                "tie_break": {
                    "key": ["arrival_order", "request_id", "request_generation"],
                    "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
                },
            },
            "budgets": {
                "token_budget": 64,
                "sequence_budget": 3,
                "kv_block_size": 1,
                "kv_total_blocks": 12,
            },
            "requests": reqs,
        }
    )


def _run(preemption: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    run, metrics, _ = core.run(
        _workload(), core.ReplayOptions(policy="vllm-v1", preemption=preemption)
    )
    return run, metrics


def test_recompute_default_rebuilds_rows() -> None:
    """Under KV pressure the default (recompute) preempts and recomputes rows."""
    run, m = _run({})
    assert run.stop_reason == "completed" and run.findings == []
    assert m["preemptions"] > 0 and m["recompute_tokens"] > 0
    assert "preemption" not in m and "preemption" not in m["options"]


def test_swap_preserves_rows_and_costs_bytes() -> None:
    """Swap preempts the same way but recomputes nothing; bytes are rows * 131,072."""
    run, m = _run({"mode": "swap", "link_bytes_per_ms": 131072})
    assert run.stop_reason == "completed" and run.findings == []
    assert m["preemptions"] > 0 and m["recompute_tokens"] == 0
    swap = m["preemption"]
    assert swap["swap_outs"] == swap["swap_ins"] == m["preemptions"]
    assert swap["swap_out_bytes"] == swap["swap_in_bytes"]
    assert swap["swap_out_bytes"] % BYTES_PER_ROW == 0
    rows = swap["swap_out_bytes"] // BYTES_PER_ROW
    assert swap["transfer_ms_modeled"] == 2 * rows  # one row per ms each way
    assert m["requests_finished"] == 3 and m["output_tokens"] == 15


class _OneMs:
    """A stub cost model: every iteration takes 1 ms."""

    def step_time_ms(self, step: StepShape) -> float:
        return 1.0


def test_swap_time_is_charged_under_a_ms_clock() -> None:
    """Under a ms clock the end time is iterations plus the modeled transfer time."""
    wl = _workload("ms")
    swap = make_preemption(
        {"mode": "swap", "link_bytes_per_ms": 131072, "read_bytes_per_ms": 262144}
    )
    engine = Engine(
        wl, POLICIES.create("vllm-v1"), _OneMs(), validation=Validation.CONTRACT, preemption=swap
    )
    run = engine.run()
    report = run.extra["preemption"]
    assert run.stop_reason == "completed" and run.findings == []
    rows = report["swap_out_bytes"] // BYTES_PER_ROW
    assert report["transfer_ms_modeled"] == rows + rows / 2  # asymmetric link
    assert run.end_time == pytest.approx(run.iterations + report["transfer_ms_modeled"])


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "swap"},
        {"mode": "teleport", "link_bytes_per_ms": 1},
        {"mode": "swap", "link_bytes_per_ms": 0},
        {"mode": "swap", "link_bytes_per_ms": "fast"},
        {"mode": "swap", "link_bytes_per_ms": 1, "colour": "red"},
    ],
)
def test_bad_preemption_options_are_located(options: dict[str, Any]) -> None:
    """Unusable preemption options are REPLAY.PREEMPTION.OPTION input errors."""
    with pytest.raises(InputError) as info:
        core.run(_workload(), core.ReplayOptions(policy="vllm-v1", preemption=options), source="x")
    assert info.value.findings[0].code == "REPLAY.PREEMPTION.OPTION"


def test_recompute_mode_is_the_default_model() -> None:
    """mode: recompute (or no options) selects the engine's recompute path."""
    assert make_preemption({}) is None
    assert make_preemption({"mode": "recompute"}) is None


def test_cli_preemption_option(cli: Any, tmp_path: Any) -> None:
    """`replay --preemption` selects swap; a bad mode exits 2 with a located message."""
    import json as _json

    path = tmp_path / "w.json"
    path.write_text(_json.dumps(_workload().to_manifest()))
    ok = cli(
        "replay",
        path,
        "--policy",
        "vllm-v1",
        "--preemption",
        "mode=swap",
        "--preemption",
        "link_bytes_per_ms=131072",
        "--format",
        "json",
    )
    assert ok.code == 0, ok.err
    metrics = _json.loads(ok.out)["results"][0]["metrics"]
    assert metrics["preemption"]["mode"] == "swap" and metrics["recompute_tokens"] == 0
    bad = cli("replay", path, "--policy", "vllm-v1", "--preemption", "mode=teleport")
    assert bad.code == 2 and "REPLAY.PREEMPTION.OPTION" in bad.err
