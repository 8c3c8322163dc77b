"""The live contract's inline checks of the common case fall back to the rule kernels.

`LiveContract` recognises three common cases inline instead of calling a rule kernel: a plan
item that is legal work of a ready published request at its frontier (`work_item_issues`), an
executed item whose result is exactly the output clock's advance (`progress_issues`), and a
touched view of a ready live request that passes every state rule (`view_issues`). Each test
here builds a cut where the inline check applies, changes exactly one thing it tests, and
requires the finding with its code, and the same issues (codes, pointers, messages, order) as
the record validators (`check_state`, `check_plan`, `check_result`) on the same records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cbaudit.contract.issues import Issue
from cbaudit.contract.live import LiveContract
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.plan_contract import check_plan
from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    Phase,
    Queue,
    SchedulerState,
    WorkloadManifest,
)
from cbaudit.contract.result_contract import check_result
from cbaudit.contract.state_contract import check_state
from cbaudit.policies.base import Plan, PlanBuilder
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.records_io import UNSTATED_REASON, plan_json, result_json, state_json
from tests.sim.helpers import manifest

P = 3  # prompt tokens of every request
MAX_OUT = 4


class _Cut:
    """Two requests with chosen frontiers in the running queue, a contract that saw them
    arrive, and a plan built from that cut."""

    def __init__(
        self, e: int, c: int, max_out: int = MAX_OUT, floor: int = 0, width: int | None = None
    ) -> None:
        self.width = width  # rows per item (default: the whole legal interval)
        reqs = [
            {"request_id": f"q{i}", "arrival": 0, "prompt_tokens": P, "max_output_tokens": max_out}
            for i in range(2)
        ]
        wl = manifest(reqs, {"token_budget": 16, "sequence_budget": 2})
        self.engine = Engine(
            wl, POLICIES.create("vllm-v1"), UnitCostModel(), validation=Validation.OFF
        )
        self.contract = WorkloadManifest.from_json(self.engine.workload.to_manifest())
        self.reqs = self.engine.reqs
        for r in self.reqs:
            r.queue = Queue.RUNNING
            r.e = e
            r.c = c
            r.floor = floor
            r.snapshot = 1
        self.live = LiveContract(self.contract, unstated_reason=UNSTATED_REASON)
        for r in self.reqs:
            self.live.touch(r)

    def published(self) -> list[LiveRequest]:
        return [r for r in self.reqs if r.queue in (Queue.WAITING, Queue.RUNNING)]

    def plan(self) -> Plan:
        engine = self.engine
        running = self.published()

        class View:
            state_version = 1
            iteration = 1
            now = 0.0
            budgets = engine.budgets
            waiting: tuple[Any, ...] = ()
            free_blocks = None

        View.running = running  # type: ignore[attr-defined]
        builder = PlanBuilder(View(), engine.key_fn)  # type: ignore[arg-type]
        for r in running:
            whole = r.p + r.e - r.c if r.e == 0 or r.c < r.p + r.e - 1 else 1
            builder.select(r, self.width or whole)
        return builder.build()

    def check_plan(self, plan: Plan) -> tuple[list[Issue], list[Issue]]:
        """The live validator and the record validators on this cut and `plan`."""
        running = self.published()
        self._state = state_json(self.contract.workload_id, 1, 0.0, running, {})
        self._plan = plan_json(
            plan,
            1,
            self.engine.identity.policy_id,
            self.engine.identity.policy_version,
            self.engine.workload.budgets.to_json(),
        )
        found = self.live.check_plan(plan, 1, running, [])
        state = SchedulerState.from_json(self._state)
        records = check_state(self.contract, state) + check_plan(
            self.contract, state, IterationPlan.from_json(self._plan)
        )
        return found, records

    def check_result(
        self, plan: Plan, mutate: Callable[[list[tuple[Any, int, int]]], None]
    ) -> tuple[list[Issue], list[Issue]]:
        """Execute `plan` as the engine does, let `mutate` corrupt it, and check the result
        with both validators (the record validator's progress rules only)."""
        done: list[tuple[Any, int, int]] = []
        for item in plan.items:
            r = item.req
            done.append((item, r.e, r.c))
            r.c = item.end
            r.snapshot += 1
            if item.end == r.p + r.e:
                r.e += 1
        mutate(done)
        found = self.live.check_result(done)
        records = check_result(
            self.contract,
            SchedulerState.from_json(self._state),
            IterationPlan.from_json(self._plan),
            IterationResult.from_json(result_json(1, done, [])),
        )
        progress = [i for i in records if i.code.startswith("RESULT.") and "EVENT" not in i.code]
        return found, progress


DECODE = {"e": 1, "c": P}  # an ordinary decode at c = p + e - 1
PREFILL = {"e": 0, "c": 0}
REBUILD = {"e": 2, "c": 0, "floor": P + 1}  # after a recompute preemption


def _item(field: str, delta: int) -> Callable[[Plan, _Cut], None]:
    def change(plan: Plan, cut: _Cut) -> None:
        item = plan.items[0]
        setattr(item, field, getattr(item, field) + delta)

    return change


def _shift(plan: Plan, cut: _Cut) -> None:
    item = plan.items[0]
    item.start -= 1
    item.end -= 1


def _phase(plan: Plan, cut: _Cut) -> None:
    plan.items[0].phase = Phase.PREFILL_CHUNK


def _rebuild(plan: Plan, cut: _Cut) -> None:
    plan.items[0].phase = Phase.RECOMPUTE_CHUNK


def _duplicate(plan: Plan, cut: _Cut) -> None:
    plan.items[1] = plan.items[0]


def _reverse(plan: Plan, cut: _Cut) -> None:
    plan.items.reverse()


def _key(plan: Plan, cut: _Cut) -> None:
    plan.items[0].key = (-1, *plan.items[0].key[1:])


def _req(field: str, value: Any) -> Callable[[Plan, _Cut], None]:
    def change(plan: Plan, cut: _Cut) -> None:
        setattr(cut.reqs[0], field, value)

    return change


@pytest.mark.parametrize(
    ("frontiers", "change", "code"),
    [
        (DECODE, None, None),
        (PREFILL, None, None),
        (REBUILD, None, None),
        (DECODE, _shift, "PLAN.INTERVAL.BEFORE_FRONTIER"),
        ({"e": 0, "c": 1}, _item("start", -1), "PLAN.INTERVAL.BEFORE_FRONTIER"),
        ({"e": 1, "c": P + 1}, _rebuild, "PLAN.INTERVAL.NO_LEGAL_WORK"),
        (DECODE, _item("snapshot", -1), "PLAN.SNAPSHOT.STALE"),
        (DECODE, _phase, "PLAN.PHASE.FORGED"),
        (DECODE, _item("end", 1), "PLAN.DECODE.MULTI_ROW"),
        (DECODE, _item("end", -1), "PLAN.INTERVAL.EMPTY"),
        (DECODE, _duplicate, "PLAN.REQUEST.DUPLICATE"),
        (DECODE, _reverse, "PLAN.TIE_BREAK.ORDER"),
        (DECODE, _key, "PLAN.TIE_BREAK.FORGED"),
        (DECODE, _req("ready", False), "PLAN.REQUEST.NOT_READY"),
        (DECODE, _req("terminal", True), "PLAN.REQUEST.TERMINAL"),
        (DECODE, _req("queue", None), "PLAN.REQUEST.UNKNOWN"),
        (PREFILL, _item("end", 1), "PLAN.INTERVAL.BEYOND_PROMPT"),
        (PREFILL, _phase, None),  # annotated as derived: still clean
        (REBUILD, _item("end", 1), "PLAN.RECOMPUTE.BEYOND_STREAM"),
        (REBUILD, _phase, "PLAN.PHASE.FORGED"),
    ],
)
def test_a_plan_item_that_differs_in_one_field_gets_the_kernels_finding(
    frontiers: dict[str, int], change: Callable[[Plan, _Cut], None] | None, code: str | None
) -> None:
    cut = _Cut(**frontiers)
    plan = cut.plan()
    if change is not None:
        change(plan, cut)
    found, records = cut.check_plan(plan)
    assert found == records
    if code is None:
        assert found == []
    else:
        assert code in {i.code for i in found}


@pytest.mark.parametrize(
    ("frontiers", "field", "value", "code"),
    [
        (DECODE, "p", P + 1, "STATE.PROMPT.MISMATCH"),
        (DECODE, "gen", -1, "STATE.GENERATION.REGRESSED"),
        (DECODE, "e", MAX_OUT + 1, "STATE.EMITTED.EXCEEDS_MAX"),
        (DECODE, "c", P + 1, "STATE.FRONTIER.INCONSISTENT"),
        (DECODE, "terminal", True, "STATE.TERMINAL.QUEUE"),
        (DECODE, "rid", "zz", "STATE.REQUEST.UNDECLARED"),
        (PREFILL, "c", P, "STATE.FRONTIER.INCONSISTENT"),
        (PREFILL, "floor", P + 1, "STATE.REBUILD_FLOOR.BEYOND_PROMPT"),
        (PREFILL, "floor", P, None),  # a floor at the prompt is allowed
    ],
)
def test_a_view_that_differs_in_one_field_gets_the_state_finding(
    frontiers: dict[str, int], field: str, value: Any, code: str | None
) -> None:
    cut = _Cut(**frontiers)
    setattr(cut.reqs[0], field, value)
    found, records = cut.check_plan(cut.plan())
    assert found == records
    if code is None:
        assert found == []
    else:
        assert code in {i.code for i in found}


def test_views_outside_the_defaults_get_the_state_findings() -> None:
    """The view rules the engine's own settings never trip (it names a readiness reason for
    every not-ready view and publishes no finished queue) still run for a validator set up
    otherwise: a not-ready view without a reason, a finished view that is not terminal."""
    cut = _Cut(**DECODE)
    live = LiveContract(cut.contract, published=(Queue.WAITING, Queue.RUNNING, Queue.FINISHED))
    first, second = cut.reqs
    first.ready = False
    second.queue = Queue.FINISHED
    for r in cut.reqs:
        live.touch(r)
    state_rec = state_json(cut.contract.workload_id, 1, 0.0, cut.reqs, {})
    del state_rec["requests"][0]["readiness_reason"]
    records = check_state(cut.contract, SchedulerState.from_json(state_rec))
    assert live.views_pass([first], [second]) is False
    plan = Plan(1, [], [], [], [], 0, 0, 0)
    found = live.check_plan(plan, 1, [first], [second])
    assert found == records
    assert [i.code for i in found] == ["STATE.READY.REASON_MISSING", "STATE.TERMINAL.QUEUE"]


def _after(field: str, delta: int) -> Callable[[list[tuple[Any, int, int]]], None]:
    def change(done: list[tuple[Any, int, int]]) -> None:
        r = done[0][0].req
        setattr(r, field, getattr(r, field) + delta)

    return change


def _before(e: int, c: int) -> Callable[[list[tuple[Any, int, int]]], None]:
    def change(done: list[tuple[Any, int, int]]) -> None:
        item, e0, c0 = done[0]
        done[0] = (item, e0 + e, c0 + c)

    return change


def _nothing(done: list[tuple[Any, int, int]]) -> None:
    return None


@pytest.mark.parametrize(
    ("frontiers", "change", "code"),
    [
        (DECODE, _nothing, None),
        (PREFILL, _nothing, None),  # the prompt completes: one token
        (REBUILD, _nothing, None),  # the stream is rebuilt: one token
        ({**PREFILL, "width": 1}, _nothing, None),  # a chunk short of the prompt: no token
        ({**PREFILL, "width": 1}, _after("e", 1), "RESULT.OUTPUT_CLOCK.WRONG"),
        (DECODE, _after("e", 1), "RESULT.OUTPUT_CLOCK.WRONG"),
        (DECODE, _after("e", -1), "RESULT.OUTPUT_CLOCK.WRONG"),
        (DECODE, _after("c", 1), "RESULT.PROGRESS.COMPUTED_MISMATCH"),
        (DECODE, _before(1, 0), "RESULT.PROGRESS.BEFORE_MISMATCH"),
        (DECODE, _before(0, -1), "RESULT.PROGRESS.BEFORE_MISMATCH"),
        (PREFILL, _after("e", -1), "RESULT.OUTPUT_CLOCK.WRONG"),
        ({**REBUILD, "max_out": 8}, _after("e", 1), "RESULT.OUTPUT_CLOCK.WRONG"),
        ({"e": MAX_OUT, "c": P + MAX_OUT - 1}, _nothing, "RESULT.OUTPUT.EXCEEDS_MAX"),
    ],
)
def test_a_result_that_differs_in_one_field_gets_the_kernels_finding(
    frontiers: dict[str, int],
    change: Callable[[list[tuple[Any, int, int]]], None],
    code: str | None,
) -> None:
    cut = _Cut(**frontiers)
    plan = cut.plan()
    assert cut.check_plan(plan) == ([], [])
    found, records = cut.check_result(plan, change)
    assert found == records
    if code is None:
        assert found == []
    else:
        assert code in {i.code for i in found}


@pytest.mark.parametrize(
    "frontiers", [DECODE, PREFILL, REBUILD], ids=["decode", "prefill", "rebuild"]
)
def test_the_clean_cases_above_take_the_inline_checks(
    frontiers: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cuts the tests above change are recognised inline (no kernel runs for them), so
    each changed field is what sends its case to the kernel."""
    import cbaudit.contract.live as live_module

    calls: list[str] = []
    for name in ("work_item_issues", "progress_issues", "view_issues"):
        real = getattr(live_module, name)

        def counting(*args: Any, _name: str = name, _real: Any = real) -> Any:
            calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(live_module, name, counting)
    cut = _Cut(**frontiers)
    plan = cut.plan()
    assert cut.check_plan(plan)[0] == []
    assert cut.check_result(plan, _nothing)[0] == []
    assert calls == []
