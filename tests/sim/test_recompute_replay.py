"""Recompute preemption in the replay: clean contract validation, same codes on both paths."""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.policies.base import (
    DECODE_ROW,
    PREFILL_CHUNK,
    RECOMPUTE_CHUNK,
    PlanBuilder,
    QueueName,
    ReqState,
    StateView,
    key_function,
)
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, InitialView, Validation
from tests.sim.helpers import manifest, replay

PROMPT = 6
REALIZED = {"q0": 12, "q1": 12, "q2": 12}
CLIENTS = {"q0": "alpha", "q1": "beta", "q2": "alpha"}
TIGHT_KV = {"token_budget": 32, "sequence_budget": 3, "kv_block_size": 4, "kv_total_blocks": 9}


def _workload() -> Any:
    reqs = [
        {
            "request_id": rid,
            "arrival": 0,
            "prompt_tokens": PROMPT,
            "max_output_tokens": 16,
            "client": CLIENTS[rid],
        }
        for rid in REALIZED
    ]
    return manifest(reqs, TIGHT_KV, REALIZED)


class _Sink:
    """Keeps what the replay published: outputs, debits and selected phases."""

    def __init__(self) -> None:
        self.outputs: list[tuple[str, int]] = []
        self.debits: dict[str, int] = {}
        self.phases: set[str] = set()

    def write(self, kind: str, data: Any) -> None:
        if kind == "result":
            self.outputs += [(o["request_id"], o["output_index"]) for o in data["output_events"]]
            for d in data["service_debits"]:
                self.debits[d["client"]] = self.debits.get(d["client"], 0) + d["tokens"]
        elif kind == "plan":
            self.phases |= {w["phase"] for w in data["selected"]}


@pytest.mark.parametrize("scheduling", ["fcfs", "priority"])
def test_validated_vllm_replay_with_recompute_is_clean(scheduling: str) -> None:
    """A tight KV pool forces recompute preemption; every plan and result satisfies the contract."""
    sink = _Sink()
    policy = POLICIES.create("vllm-v1", {"scheduling": scheduling})
    run = Engine(
        _workload(), policy, UnitCostModel(), validation=Validation.CONTRACT, trace=sink
    ).run()
    assert run.findings == []
    assert run.stop_reason == "completed"
    assert run.preemptions > 0
    assert sum(s.recompute_tokens for s in run.stats) > 0
    assert RECOMPUTE_CHUNK in sink.phases
    assert len(sink.outputs) == len(set(sink.outputs))
    for rid, n in REALIZED.items():
        assert sorted(i for r, i in sink.outputs if r == rid) == list(range(1, n + 1))


def test_debits_count_semantic_service_only() -> None:
    """Each request is debited p + n - 1 rows (prompt, one row per later token), no rebuild row."""
    sink = _Sink()
    run = Engine(
        _workload(),
        POLICIES.create("vllm-v1", {}),
        UnitCostModel(),
        validation=Validation.CONTRACT,
        trace=sink,
    ).run()
    assert run.findings == [] and run.preemptions > 0
    want: dict[str, int] = {}
    for rid, n in REALIZED.items():
        want[CLIENTS[rid]] = want.get(CLIENTS[rid], 0) + PROMPT + n - 1
    assert sink.debits == want
    rows = sum(s.scheduled_tokens for s in run.stats)
    overhead = sum(s.recompute_tokens for s in run.stats)
    assert sum(want.values()) == rows - overhead


def test_fast_and_contract_paths_agree_on_a_preempting_replay() -> None:
    """The fast checker and the contract validate the same preempting replay identically."""
    a, ma = replay(_workload(), "vllm-v1", validation=Validation.CONTRACT)
    b, mb = replay(_workload(), "vllm-v1", validation=Validation.FAST)
    assert a.findings == [] and b.findings == []
    assert a.preemptions == b.preemptions > 0
    ma.pop("validation")
    mb.pop("validation")
    assert ma == mb


class _BuggyRebuild:
    """Serves the first waiting request's rebuild with a corrupted interval or annotation."""

    policy_id = "buggy-rebuild"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (DECODE_ROW, PREFILL_CHUNK)

    def __init__(self, bug: str) -> None:
        self.bug = bug

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        r = next(iter(view.waiting))
        if self.bug == "beyond_stream":
            plan.select(r, r.p + r.e - r.c + 1, admit=True)
        elif self.bug == "as_prefill":
            item = plan.select(r, 2, admit=True)
            item.phase = PREFILL_CHUNK
        elif self.bug == "as_decode":
            item = plan.select(r, 1, admit=True)
            item.phase = DECODE_ROW


@pytest.mark.parametrize(
    ("bug", "code"),
    [
        ("beyond_stream", "PLAN.RECOMPUTE.BEYOND_STREAM"),
        ("as_prefill", "PLAN.PHASE.FORGED"),
        ("as_decode", "PLAN.PHASE.FORGED"),
    ],
)
def test_rebuild_bug_gives_the_same_codes_on_both_paths(bug: str, code: str) -> None:
    """A buggy rebuild plan stops the replay with identical codes on the contract and fast paths."""
    wl = manifest(
        [{"request_id": "q0", "arrival": 0, "prompt_tokens": 4, "max_output_tokens": 8}],
        {"token_budget": 16, "sequence_budget": 2},
        {"q0": 6},
    )
    initial = {"q0": InitialView(emitted=2, computed=0, queue=QueueName.WAITING)}
    codes = []
    for validation in (Validation.CONTRACT, Validation.FAST):
        run = Engine(
            wl, _BuggyRebuild(bug), UnitCostModel(), validation=validation, initial=initial
        ).run()
        assert run.stop_reason == "contract_violation"
        codes.append(sorted({f.code for f in run.findings}))
    assert codes[0] == codes[1]
    assert code in codes[0]


def test_key_function_ranks_an_unlisted_rebuild_like_prefill() -> None:
    """The engine's key agrees with the contract: an unlisted rebuild takes the prefill rank."""
    fields = ("phase_rank", "priority_rank", "arrival_order", "request_id", "request_generation")
    r = ReqState(0, "q0", 0, 4, 8, 0.0, 0, 0, None)
    two = key_function(fields, (DECODE_ROW, PREFILL_CHUNK))
    assert two(r, RECOMPUTE_CHUNK)[0] == two(r, PREFILL_CHUNK)[0] == 1
    three = key_function(fields, (RECOMPUTE_CHUNK, DECODE_ROW, PREFILL_CHUNK))
    assert [three(r, ph)[0] for ph in (RECOMPUTE_CHUNK, DECODE_ROW, PREFILL_CHUNK)] == [0, 1, 2]
    generic = key_function(("phase_rank", "request_id"), (DECODE_ROW, PREFILL_CHUNK))
    assert generic(r, RECOMPUTE_CHUNK) == (1, "q0")
