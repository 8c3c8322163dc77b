"""Recompute preemption in the replay: clean contract validation, same codes on both paths."""

from __future__ import annotations

from typing import Any

import pytest

from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase, Queue
from cbaudit.policies.base import PlanBuilder, StateView, key_function
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
    assert Phase.RECOMPUTE_CHUNK in sink.phases
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
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, bug: str) -> None:
        self.bug = bug

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        r = next(iter(view.waiting))
        if self.bug == "beyond_stream":
            plan.select(r, r.p + r.e - r.c + 1, admit=True)
        elif self.bug == "as_prefill":
            item = plan.select(r, 2, admit=True)
            item.phase = Phase.PREFILL_CHUNK
        elif self.bug == "as_decode":
            item = plan.select(r, 1, admit=True)
            item.phase = Phase.DECODE_ROW


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
    initial = {"q0": InitialView(emitted=2, computed=0, queue=Queue.WAITING)}
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
    r = LiveRequest(0, "q0", 0, 4, 8, 0.0, 0, 0, None)
    two = key_function(fields, (Phase.DECODE_ROW, Phase.PREFILL_CHUNK))
    assert two(r, Phase.RECOMPUTE_CHUNK)[0] == two(r, Phase.PREFILL_CHUNK)[0] == 1
    order = (Phase.RECOMPUTE_CHUNK, Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    three = key_function(fields, order)
    assert [three(r, ph)[0] for ph in order] == [0, 1, 2]
    generic = key_function(("phase_rank", "request_id"), (Phase.DECODE_ROW, Phase.PREFILL_CHUNK))
    assert generic(r, Phase.RECOMPUTE_CHUNK) == (1, "q0")


class _Published:
    """Debits, rebuild floors and e = 0 recompute preemptions as the replay published them."""

    def __init__(self) -> None:
        self.debits: dict[str, int] = {}
        self.views: dict[str, Any] = {}
        self.floors: list[int] = []
        self.e0_preemptions = 0

    def write(self, kind: str, data: Any) -> None:
        if kind == "state":
            self.views = {v["request_id"]: v for v in data["requests"]}
            self.floors += [v["rebuild_floor"] for v in data["requests"] if "rebuild_floor" in v]
        elif kind == "plan":
            for q in data.get("queue_intent", []):
                if q["action"] == "preempt":
                    self.e0_preemptions += self.views[q["request_id"]]["emitted_tokens"] == 0
        elif kind == "result":
            for d in data["service_debits"]:
                self.debits[d["client"]] = self.debits.get(d["client"], 0) + d["tokens"]


def _prefill_pressure(prompt: int = 12, blocks: int = 5) -> Any:
    """Three 12-token prompts in 4-token chunks over a 5-block pool: preempted mid-prefill."""
    reqs = [
        {
            "request_id": f"q{i}",
            "arrival": i,
            "prompt_tokens": prompt,
            "max_output_tokens": 4,
            "client": "ab"[i % 2],
        }
        for i in range(3)
    ]
    budgets = {"token_budget": 4, "sequence_budget": 3, "kv_block_size": 4}
    budgets["kv_total_blocks"] = blocks
    return manifest(reqs, budgets, {f"q{i}": 3 for i in range(3)})


def test_reprefill_before_the_first_token_is_not_debited_again() -> None:
    """A request preempted mid-prefill publishes a rebuild_floor; its re-prefill is overhead.

    Each request is debited p + n - 1 rows in all, exactly as if it had never been preempted,
    and the record validator (cross_check) agrees with the live contract on every iteration.
    Admission on the first chunk only (vLLM's `--no-scheduler-reserve-full-isl`) lets a
    request in whose whole prompt does not fit, so it is preempted before its first token.
    """
    sink = _Published()
    run = Engine(
        _prefill_pressure(),
        POLICIES.create("vllm-v1", {"full_sequence_must_fit": False}),
        UnitCostModel(),
        validation=Validation.CONTRACT,
        trace=sink,
        cross_check=True,
    ).run()
    assert run.findings == [] and run.stop_reason == "completed"
    assert sink.e0_preemptions > 0 and sink.floors
    assert sink.debits == {"a": 2 * (12 + 3 - 1), "b": 12 + 3 - 1}
    rows = sum(s.scheduled_tokens for s in run.stats)
    overhead = sum(s.recompute_tokens for s in run.stats)
    assert overhead > 0 and sum(sink.debits.values()) == rows - overhead


def test_a_request_larger_than_the_pool_stops_before_it_starts() -> None:
    """16 prompt rows + 3 outputs need 5 blocks of 4; a 4-block pool could only ever thrash."""
    run = Engine(
        _prefill_pressure(prompt=16, blocks=4), POLICIES.create("vllm-v1", {}), UnitCostModel()
    ).run()
    assert run.stop_reason == "kv_capacity" and run.iterations == 0
    assert {f.code for f in run.findings} == {"REPLAY.KV.REQUEST_EXCEEDS_POOL"}
    assert len(run.findings) == 3 and "needs 18 K/V rows" in run.findings[0].message


class _Thrash:
    """Preempts whatever runs and starts the waiting head with one row: nothing ever finishes."""

    policy_id = "thrash"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        for r in list(view.running):
            plan.preempt(r)
        if view.waiting:
            plan.select(next(iter(view.waiting)), 1, admit=True)


@pytest.mark.parametrize("validation", [Validation.OFF, Validation.CONTRACT])
def test_a_preemption_livelock_stops_with_no_progress(validation: Validation) -> None:
    """Only rebuild rows, iteration after iteration: REPLAY.NO_PROGRESS instead of a hang."""
    wl = manifest(
        [
            {"request_id": f"q{i}", "arrival": 0, "prompt_tokens": 4, "max_output_tokens": 2}
            for i in (0, 1)
        ],
        {"token_budget": 8, "sequence_budget": 2},
        {"q0": 2, "q1": 2},
    )
    run = Engine(wl, _Thrash(), UnitCostModel(), validation=validation).run()
    assert run.stop_reason == "no_progress"
    assert [f.code for f in run.findings] == ["REPLAY.NO_PROGRESS"]
    assert "livelock" in run.findings[0].message
    assert run.iterations < 2000


def test_a_preempting_replay_trace_validates_record_by_record(tmp_path: Any, cli: Any) -> None:
    """`replay --trace-out` with recompute preemptions (and rebuild floors) is a valid trace.

    The engine once wrote the queue intent as `preempt_recompute`, which the plan schema does
    not know, so every preempting plan of a written trace was unusable.
    """
    import json

    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(_prefill_pressure().to_manifest(include_hidden=True)))
    trace = tmp_path / "t.jsonl"
    first_chunk = ("--policy-option", "full_sequence_must_fit=false")
    assert cli("replay", wl, "--policy", "vllm-v1", *first_chunk, "--trace-out", trace).code == 0
    text = trace.read_text(encoding="utf-8")
    assert '"action":"preempt"' in text and '"rebuild_floor"' in text
    r = cli("validate-plan", "--trace", trace)
    assert r.code == 0, r.out
