"""Engine behaviour: validation paths, hidden truth, recompute preemption, stalls, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cbaudit.contract.records import Phase
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.workload import load_workload
from tests.sim.helpers import BUNDLE, manifest, replay

LESSON = BUNDLE / "lesson" / "four-slot.workload.yaml"


def _reqs(n: int, prompt: int, max_out: int = 16) -> list[dict[str, Any]]:
    return [
        {"request_id": f"q{i}", "arrival": 0, "prompt_tokens": prompt, "max_output_tokens": max_out}
        for i in range(n)
    ]


class _Buggy:
    """A policy that selects the first running/waiting request with a corrupted interval."""

    policy_id = "buggy"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, bug: str) -> None:
        self.bug = bug

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        r = (list(view.running) + list(view.waiting))[0]
        if self.bug == "start":
            item = plan.select(r, 1, admit=r in view.waiting)
            item.start += 1
            item.end += 1
        elif self.bug == "beyond_prompt":
            plan.select(r, r.p + 2, admit=r in view.waiting)
        elif self.bug == "tokens":
            for q in view.waiting:
                plan.select(q, q.p, admit=True)
        elif self.bug == "stale_snapshot":
            item = plan.select(r, 1, admit=r in view.waiting)
            item.snapshot += 7
        elif self.bug == "phase":
            item = plan.select(r, 1, admit=r in view.waiting)
            item.phase = Phase.DECODE_ROW


@pytest.mark.parametrize(
    ("bug", "code"),
    [
        ("start", "PLAN.INTERVAL.AFTER_FRONTIER"),
        ("beyond_prompt", "PLAN.INTERVAL.BEYOND_PROMPT"),
        ("tokens", "PLAN.BUDGET.TOKEN_EXCEEDED"),
        ("stale_snapshot", "PLAN.SNAPSHOT.STALE"),
        ("phase", "PLAN.PHASE.FORGED"),
    ],
)
@pytest.mark.parametrize("validation", [Validation.CONTRACT, Validation.FAST])
def test_policy_bug_is_a_contract_finding(bug: str, code: str, validation: Validation) -> None:
    """A buggy policy stops the replay with the contract's code on both validation paths."""
    wl = manifest(_reqs(3, 4), {"token_budget": 6, "sequence_budget": 4})
    run = Engine(wl, _Buggy(bug), UnitCostModel(), validation=validation).run()
    assert run.stop_reason == "contract_violation"
    assert code in {f.code for f in run.findings}


@pytest.mark.parametrize(
    "policy", ["static", "orca", "sarathi-serve", "vllm-v1", "decode-first", "prefill-first"]
)
def test_fast_and_contract_paths_agree_on_clean_replays(policy: str) -> None:
    """Every registered policy replays the lesson with no finding on both paths, same metrics."""
    wl = load_workload(LESSON)
    a, ma = replay(wl, policy, validation=Validation.CONTRACT)
    b, mb = replay(wl, policy, validation=Validation.FAST)
    assert a.findings == [] and b.findings == []
    ma.pop("validation")
    mb.pop("validation")
    assert ma == mb


def test_hidden_truth_never_changes_plans_before_a_stop() -> None:
    """Changing every hidden length leaves the plans identical until a request first stops."""

    class Sink:
        def __init__(self) -> None:
            self.lines: list[tuple[str, str]] = []

        def write(self, kind: str, data: Any) -> None:
            self.lines.append((kind, json.dumps(data, sort_keys=True)))

    reqs = _reqs(5, 3, max_out=40)
    budgets = {"token_budget": 8, "sequence_budget": 3}
    runs = []
    for hidden in ({f"q{i}": 30 + i for i in range(5)}, {f"q{i}": 20 + 2 * i for i in range(5)}):
        sink = Sink()
        Engine(
            manifest(reqs, budgets, hidden), _policy("sarathi-serve"), UnitCostModel(), trace=sink
        ).run()
        runs.append(sink.lines)
    first_stop = min(
        next(i for i, (k, d) in enumerate(lines) if k == "result" and '"reason"' in d)
        for lines in runs
    )
    plans = [[d for k, d in lines[:first_stop] if k in ("plan", "state")] for lines in runs]
    assert plans[0] == plans[1] and len(plans[0]) > 10
    assert "fixture_only_hidden_truth" not in runs[0][0][1]


def _policy(pid: str, **options: Any) -> Any:
    from cbaudit.policies.registry import POLICIES

    return POLICIES.create(pid, options)


def test_recompute_preemption_never_emits_twice() -> None:
    """vLLM-shape preemption rebuilds history by recompute; output indices never repeat."""

    class Sink:
        def __init__(self) -> None:
            self.outputs: list[tuple[str, int]] = []

        def write(self, kind: str, data: Any) -> None:
            if kind == "result":
                self.outputs += [
                    (o["request_id"], o["output_index"]) for o in data["output_events"]
                ]

    hidden = {"q0": 12, "q1": 12, "q2": 12}
    wl = manifest(
        _reqs(3, 6),
        {"token_budget": 32, "sequence_budget": 3, "kv_block_size": 4, "kv_total_blocks": 9},
        hidden,
    )
    sink = Sink()
    run = Engine(
        wl, _policy("vllm-v1"), UnitCostModel(), validation=Validation.OFF, trace=sink
    ).run()
    assert run.stop_reason == "completed"
    assert run.preemptions >= 1
    assert sum(st.recompute_tokens for st in run.stats) > 0
    assert len(sink.outputs) == len(set(sink.outputs)) == 36
    for rid in hidden:
        assert [i for r, i in sink.outputs if r == rid] == list(range(1, 13))


def test_contract_accepts_the_recompute_rebuild() -> None:
    """With the RECOMPUTE_CHUNK rule a contract-validated preempting vllm-v1 replay runs clean."""
    wl = manifest(
        _reqs(3, 6),
        {"token_budget": 32, "sequence_budget": 3, "kv_block_size": 4, "kv_total_blocks": 9},
        {"q0": 12, "q1": 12, "q2": 12},
    )
    run = Engine(wl, _policy("vllm-v1"), UnitCostModel(), validation=Validation.CONTRACT).run()
    assert run.findings == []
    assert run.stop_reason == "completed"
    assert run.preemptions >= 1


def test_orca_without_reservation_can_stall_and_says_so() -> None:
    """All running decodes need a block and none is free: REPLAY.NO_PROGRESS, not a hang."""
    wl = manifest(
        _reqs(2, 4, max_out=16),
        {"token_budget": 16, "sequence_budget": 2, "kv_block_size": 4, "kv_total_blocks": 5},
        {"q0": 16, "q1": 16},
    )
    run, _ = replay(wl, "orca")
    assert run.stop_reason == "no_progress"
    assert [f.code for f in run.findings] == ["REPLAY.NO_PROGRESS"]
    reserved, _ = replay(wl, "orca", {"reserve_max_tokens": True})
    assert reserved.stop_reason == "completed" and reserved.findings == []


def test_kv_refusal_names_its_budget() -> None:
    """A waiting prompt that does not fit the free blocks is deferred with DEFERRED_KV_BUDGET."""

    class Sink:
        def __init__(self) -> None:
            self.reasons: set[str] = set()

        def write(self, kind: str, data: Any) -> None:
            if kind == "plan":
                self.reasons |= {n["reason"] for n in data["not_selected"]}

    wl = manifest(
        _reqs(2, 8, max_out=2),
        {"token_budget": 64, "sequence_budget": 4, "kv_block_size": 4, "kv_total_blocks": 3},
    )
    sink = Sink()
    Engine(wl, _policy("sarathi-serve"), UnitCostModel(), trace=sink).run()
    assert "DEFERRED_KV_BUDGET" in sink.reasons


def test_tpot_undefined_for_one_token_outputs() -> None:
    """TPOT is null for a one-token output and (last - first) / (n - 1) otherwise."""
    wl = manifest(
        _reqs(2, 2, max_out=4), {"token_budget": 8, "sequence_budget": 2}, {"q0": 1, "q1": 4}
    )
    _, m = replay(wl, "orca")
    assert m["requests"]["q0"]["tpot"] is None
    assert m["requests"]["q1"]["tpot"] == 1
    assert m["latency"]["tpot"]["p50"] == "insufficient_sample"


def test_replay_report_is_byte_identical(cli: Any, tmp_path: Path) -> None:
    """Same inputs give a byte-identical JSON report and trace."""
    outs = []
    for k in range(2):
        out = tmp_path / f"r{k}.json"
        trace = tmp_path / f"t{k}.jsonl"
        r = cli(
            "replay",
            LESSON,
            "--policy",
            "sarathi-serve",
            "--format",
            "json",
            "-o",
            out,
            "--trace-out",
            trace,
        )
        assert r.code == 0, r.err
        outs.append((out.read_bytes(), trace.read_bytes()))
    assert outs[0] == outs[1]
