"""The replay's incremental contract validator against the record validator it replaces.

`Engine(..., cross_check=True)` builds the full state, plan and result records every iteration,
runs `check_state` / `check_plan` / `check_result` on them, and reports
REPLAY.VALIDATOR.DIVERGED when the incremental validator (`cbaudit.contract.live`) returned
anything else (codes, pointers, messages or order). These tests replay every policy, preemption
by recompute and by swap, scenario initial states and buggy policies under that hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import cbaudit.contract.live as live_module
from cbaudit.contract.issues import Issue
from cbaudit.contract.live import LiveContract
from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    Phase,
    Queue,
    SchedulerState,
    WorkloadManifest,
)
from cbaudit.contract.result_contract import check_result
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, InitialView, ReplayRun, Validation
from cbaudit.sim.preemption_swap import make_preemption
from cbaudit.sim.records_io import plan_json, result_json, state_json
from cbaudit.sim.workload import Workload, load_workload
from tests.sim.helpers import BUNDLE, manifest

POLICY_IDS = ("static", "orca", "sarathi-serve", "vllm-v1", "decode-first", "prefill-first")
WORKLOADS = sorted(BUNDLE.glob("*/*.workload.yaml"))
KV_PRESSURE = {"kv_block_size": 4, "kv_total_blocks": 12}
DIVERGED = "REPLAY.VALIDATOR.DIVERGED"


def _engine(wl: Workload, policy: Any, **kw: Any) -> ReplayRun:
    return Engine(wl, policy, UnitCostModel(), **kw).run()


def _with_budgets(wl: Workload, extra: dict[str, int]) -> Workload:
    data = wl.to_manifest(include_hidden=True)
    data["budgets"] = {**data["budgets"], **extra}
    from cbaudit.sim.workload import workload_from_data

    return workload_from_data(data, wl.source)


def _reqs(n: int, prompt: int, max_out: int = 16) -> list[dict[str, Any]]:
    return [
        {"request_id": f"q{i}", "arrival": 0, "prompt_tokens": prompt, "max_output_tokens": max_out}
        for i in range(n)
    ]


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_policy_validates_identically_on_the_bundle_workloads(path: Path) -> None:
    """Every policy on every bundle workload, with and without KV pressure: same issues."""
    base = load_workload(path)
    for wl in (base, _with_budgets(base, KV_PRESSURE)):
        for pid in POLICY_IDS:
            run = _engine(wl, POLICIES.create(pid), horizon=150, cross_check=True)
            assert DIVERGED not in {f.code for f in run.findings}, (pid, run.findings)
            plain = _engine(wl, POLICIES.create(pid), horizon=150)
            assert [(f.code, f.message) for f in plain.findings] == [
                (f.code, f.message) for f in run.findings
            ]
            assert plain.iterations == run.iterations


def test_recompute_preemption_is_validated_identically() -> None:
    """vllm-v1 preempting by recompute (rebuild intervals) runs clean under both validators."""
    wl = manifest(
        _reqs(3, 6),
        {"token_budget": 32, "sequence_budget": 3, "kv_block_size": 4, "kv_total_blocks": 9},
        {"q0": 12, "q1": 12, "q2": 12},
    )
    run = _engine(wl, POLICIES.create("vllm-v1"), cross_check=True)
    assert run.preemptions >= 1
    assert run.findings == [] and run.stop_reason == "completed"


def test_swap_restored_views_are_rechecked() -> None:
    """Swap preemption flips readiness outside the loop; restored views are re-validated."""
    wl = manifest(
        _reqs(3, 3, max_out=5),
        {"token_budget": 64, "sequence_budget": 3, "kv_block_size": 1, "kv_total_blocks": 12},
    )
    swap = make_preemption({"mode": "swap", "link_bytes_per_ms": 131072})
    run = _engine(wl, POLICIES.create("vllm-v1"), preemption=swap, cross_check=True)
    assert run.extra["preemption"]["swap_ins"] >= 1
    assert run.findings == [] and run.stop_reason == "completed"


@pytest.mark.parametrize(
    ("initial", "code"),
    [
        (
            InitialView(emitted=0, computed=5, queue=Queue.WAITING),
            "STATE.FRONTIER.INCONSISTENT",
        ),
        (
            InitialView(emitted=20, computed=23, queue=Queue.RUNNING),
            "STATE.EMITTED.EXCEEDS_MAX",
        ),
    ],
)
def test_a_bad_initial_view_is_a_state_finding(initial: InitialView, code: str) -> None:
    """A published view that breaks a state rule stops the replay with the record codes."""
    wl = manifest(_reqs(3, 4), {"token_budget": 8, "sequence_budget": 2})
    run = _engine(wl, POLICIES.create("sarathi-serve"), initial={"q1": initial}, cross_check=True)
    assert run.stop_reason == "contract_violation"
    codes = [f.code for f in run.findings]
    assert code in codes and DIVERGED not in codes
    assert all(f.record == "state" for f in run.findings if f.code.startswith("STATE."))


class _Buggy:
    """A policy with one injected defect; otherwise FCFS over running, then waiting."""

    policy_id = "buggy"
    policy_version = "1"
    tie_break_key = ("arrival_order", "request_id", "request_generation")
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)

    def __init__(self, bug: str) -> None:
        self.bug = bug
        self.calls = 0

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        self.calls += 1
        queue = list(view.running) + list(view.waiting)
        first, rest = queue[0], queue[1:]
        admit = first in view.waiting
        if self.bug == "skip" and rest:  # serve the second, say nothing about the first
            plan.select(rest[0], 1, admit=rest[0] in view.waiting)
            return
        item = plan.select(first, 1, admit=admit)
        if self.bug == "duplicate":
            plan.select(first, 1, admit=False)
        elif self.bug == "conflict":
            plan.defer(first, "DEFERRED_TOKEN_BUDGET")
        elif self.bug == "key":
            item.key = (-1, *item.key[1:])
        elif self.bug == "order" and rest:  # swapped keys: both forged, and run out of order
            other = plan.select(rest[0], 1, admit=rest[0] in view.waiting)
            item.key, other.key = other.key, item.key
        elif self.bug == "empty":
            item.end = item.start
        elif self.bug == "sequences":
            for q in rest:
                plan.select(q, 1, admit=q in view.waiting)
        elif self.bug == "version":
            plan.view = _Stale(view)


class _Stale:
    """A view wrapper whose state_version lies (the plan reads an older cut)."""

    def __init__(self, view: StateView) -> None:
        self._view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)

    @property
    def state_version(self) -> int:
        return self._view.state_version - 1


NOT_READY = {"q0": InitialView(0, 0, Queue.WAITING, ready=False, readiness_reason="REMOTE_KV")}


@pytest.mark.parametrize(
    ("bug", "code", "initial"),
    [
        ("skip", "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED", {}),
        ("duplicate", "PLAN.REQUEST.DUPLICATE", {}),
        ("conflict", "PLAN.NOT_SELECTED.CONFLICT", {}),
        ("key", "PLAN.TIE_BREAK.FORGED", {}),
        ("order", "PLAN.TIE_BREAK.ORDER", {}),
        ("empty", "PLAN.INTERVAL.EMPTY", {}),
        ("none", "PLAN.REQUEST.NOT_READY", NOT_READY),
        ("sequences", "PLAN.BUDGET.SEQUENCE_EXCEEDED", {}),
        ("version", "PLAN.STATE_VERSION.MISMATCH", {}),
    ],
)
def test_a_policy_bug_gives_the_record_validators_issues(
    bug: str, code: str, initial: dict[str, InitialView]
) -> None:
    """Each injected defect stops the replay with its code, and both validators agree."""
    wl = manifest(_reqs(3, 4), {"token_budget": 8, "sequence_budget": 2})
    run = _engine(wl, _Buggy(bug), cross_check=True, initial=initial)
    assert run.stop_reason == "contract_violation"
    codes = [f.code for f in run.findings]
    assert code in codes and DIVERGED not in codes
    plain = _engine(wl, _Buggy(bug), initial=initial)
    assert [(f.code, f.message, f.record) for f in plain.findings] == [
        (f.code, f.message, f.record) for f in run.findings
    ]


def test_fast_is_an_alias_of_contract() -> None:
    """`--validate fast` runs the same validator: same findings, iterations and stop reason."""
    wl = manifest(_reqs(3, 4), {"token_budget": 8, "sequence_budget": 2})
    runs = [
        _engine(wl, _Buggy("skip"), validation=v) for v in (Validation.CONTRACT, Validation.FAST)
    ]
    assert runs[0].findings == runs[1].findings != []
    assert (runs[0].iterations, runs[0].stop_reason) == (runs[1].iterations, runs[1].stop_reason)


def test_state_rules_run_only_on_changed_views(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long waiting queue is not re-walked every iteration: view checks follow changes."""
    calls = 0
    real = live_module.view_issues

    def counting(*args: Any) -> None:
        nonlocal calls
        calls += 1
        real(*args)

    monkeypatch.setattr(live_module, "view_issues", counting)
    wl = manifest(_reqs(400, 2, max_out=3), {"token_budget": 8, "sequence_budget": 2})
    run = _engine(wl, POLICIES.create("orca"))
    assert run.findings == [] and run.stop_reason == "completed"
    # each request is checked when it arrives and after each of its (p=2 -> 1 prefill + 2
    # decode) served iterations; walking the cut would be ~400 views per iteration
    assert calls <= 400 * 4
    assert run.iterations > 300


def _live_and_record_results(mutate: str) -> tuple[list[Issue], list[Issue]]:
    """Check one executed plan whose execution `mutate` corrupts, with both validators."""
    wl = manifest(_reqs(2, 3, max_out=4), {"token_budget": 8, "sequence_budget": 2})
    engine = Engine(
        wl, POLICIES.create("sarathi-serve"), UnitCostModel(), validation=Validation.OFF
    )
    contract = WorkloadManifest.from_json(engine.workload.to_manifest())
    reqs = engine.reqs
    for r in reqs:
        r.queue = Queue.WAITING
    live = LiveContract(contract)
    for r in reqs:
        live.enter_waiting(r)

    class View:
        state_version = 1
        iteration = 1
        now = 0.0
        budgets = engine.budgets
        running: tuple[Any, ...] = ()
        waiting = reqs
        free_blocks = None

    builder = PlanBuilder(View(), engine.key_fn)
    builder.select(reqs[0], 3, admit=True)
    plan = builder.build()
    state_rec = state_json(wl.workload_id, 1, 0.0, reqs, {})
    plan_rec = plan_json(plan, 1, "sarathi-serve", "x", wl.budgets.to_json())
    assert live.check_plan(plan, 1, [], reqs) == []
    done = [(plan.items[0], reqs[0].e, reqs[0].c)]
    reqs[0].c = 3
    reqs[0].e = 1
    if mutate == "clock":
        reqs[0].e = 2  # two tokens from one prefill
    elif mutate == "computed":
        reqs[0].c = 2
    elif mutate == "cap":
        reqs[0].e = 5  # beyond max_output_tokens
    found = live.check_result(done)
    result_rec = result_json(1, done, [])
    records = check_result(
        contract,
        SchedulerState.from_json(state_rec),
        IterationPlan.from_json(plan_rec),
        IterationResult.from_json(result_rec),
    )
    return found, records


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        ("none", None),
        ("clock", "RESULT.OUTPUT_CLOCK.WRONG"),
        ("computed", "RESULT.PROGRESS.COMPUTED_MISMATCH"),
        ("cap", "RESULT.OUTPUT.EXCEEDS_MAX"),
    ],
)
def test_an_executor_defect_is_a_result_finding(mutate: str, code: str | None) -> None:
    """A corrupted execution gives the result code, identically to check_result on records."""
    found, records = _live_and_record_results(mutate)
    progress = [i for i in records if i.code.startswith("RESULT.") and "EVENT" not in i.code]
    assert found == progress
    if code is None:
        assert found == []
    else:
        assert code in {i.code for i in found}
