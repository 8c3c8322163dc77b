"""Terminal detail: `replay -v` shows every metric; `replay --steps N` explains each step
(the binding roofline term) and what admission left in the K/V pool."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from repo_paths import M52, REPO

from cbaudit.report.text import _flatten

ABC = M52 / "loop3" / "abc.workload.yaml"
MIX = REPO / "tests" / "sim" / "data" / "gen_poisson_mix.yaml"
ROOFLINE = ("--cost-model", "roofline", "--cost-option", "hardware=nvidia-h100-sxm")
POOL = ("--budget", "kv_block_size=16", "--budget", "kv_total_blocks=4096")


def test_replay_verbose_prints_every_metric(cli: Callable[..., Any]) -> None:
    """`replay -v` prints one row per flattened metric (150 here), with no "... N more"."""
    full = ("--per-request", "--samples")  # per-request records and samples inline: many rows
    text = cli("replay", ABC, "--policy", "orca", *full, "-v")
    data = cli("replay", ABC, "--policy", "orca", *full, "-f", "json")
    metrics = json.loads(data.out)["results"][0]["metrics"]
    keys = [k for k, _ in _flatten(metrics)]
    assert len(keys) > 140
    assert "more metrics" not in text.out
    for key in keys:
        assert f"  {key}  " in text.out or text.out.count(f"  {key}\n"), key


def _steps(cli: Callable[..., Any], *extra: str) -> list[dict[str, Any]]:
    r = cli("replay", MIX, "--policy", "vllm-v1", *ROOFLINE, *POOL, "-f", "json", *extra)
    assert r.code == 0, r.err
    results = json.loads(r.out)["results"]
    assert results[0]["check"] == "replay"
    return [x for x in results if x["check"] == "replay.step"]


def test_steps_name_the_binding_roofline_term(cli: Callable[..., Any]) -> None:
    """Each traced step gives both roofline terms, names the larger as binding, and its
    duration is that term plus overhead: a 512-token prefill is compute-bound, a one-row
    decode memory-bound."""
    steps = _steps(cli, "--steps", "6")
    assert [s["subject"] for s in steps] == [f"iteration {i}" for i in range(1, 7)]
    bounds = set()
    for s in steps:
        m = s["metrics"]
        cost = m["cost"]
        binding = max(cost["memory_ms"], cost["compute_ms"])
        assert cost["bound"] == (
            "compute-bound" if cost["compute_ms"] > cost["memory_ms"] else "memory-bound"
        )
        assert m["end"] - m["start"] == pytest.approx(
            binding + cost["overhead_ms"], rel=1e-6, abs=1e-5
        )
        assert cost["bound"] in s["reason"]
        bounds.add((m["prefill_tokens"] > 0, cost["bound"]))
    assert (True, "compute-bound") in bounds and (False, "memory-bound") in bounds


def test_steps_report_admissions_and_blocks_left(cli: Callable[..., Any]) -> None:
    """An admitting step names the admitted request and the K/V blocks its allocation left;
    blocks left never exceed the pool and fall by what the step allocated."""
    steps = [s["metrics"] for s in _steps(cli, "--steps", "40")]
    first = steps[0]
    assert first["admitted"] == ["req-000000"]
    assert first["kv"] == {"blocks_left": 4064, "blocks_free_at_end": 4064, "total_blocks": 4096}
    assert "admitted req-000000" in _steps(cli, "--steps", "1")[0]["reason"]
    assert "K/V blocks left 4064 of 4096" in _steps(cli, "--steps", "1")[0]["reason"]
    previous = 4096
    for s in steps:
        left = s["kv"]["blocks_left"]
        assert 0 <= left <= previous
        previous = s["kv"]["blocks_free_at_end"]
    assert any(len(s["admitted"]) for s in steps[1:])


def test_steps_do_not_change_the_replay(cli: Callable[..., Any]) -> None:
    """Tracing steps adds results; the replay's own result is byte-identical."""
    base = cli("replay", ABC, "--policy", "orca", "-f", "json")
    traced = cli("replay", ABC, "--policy", "orca", "-f", "json", "--steps", "3")
    a, b = json.loads(base.out), json.loads(traced.out)
    assert a["results"][0] == b["results"][0]
    assert [r["check"] for r in b["results"]] == ["replay"] + ["replay.step"] * 3
    unit = b["results"][1]["metrics"]["cost"]
    assert unit["bound"].startswith("unit clock") and "K/V" not in b["results"][1]["reason"]
