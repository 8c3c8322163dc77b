"""Each rule vllm-v1 mirrors matters: with one rule changed, some run of the conformance
corpus no longer agrees with vLLM (the corpus detects the change)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from repo_paths import CONFORMANCE

from cbaudit.conform import sides
from cbaudit.conform.core import ConformInput, conform
from cbaudit.conform.inputs import Step
from cbaudit.contract.live_request import LiveRequest
from cbaudit.model import CheckStatus
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim import engine_config

CORPUS = CONFORMANCE / "corpus"
CASES = [
    ConformInput(p, CORPUS / p.name.replace(".vllm-trace.jsonl", ".workload.json"))
    for p in sorted(CORPUS.glob("*.vllm-trace.jsonl"))
] + [ConformInput(p) for p in sorted((CONFORMANCE / "records").glob("*.record.jsonl"))]


class NoWholeSequenceGate(VllmV1Policy):
    def __init__(self, options: Any) -> None:
        super().__init__({**options, "full_sequence_must_fit": False})


class WaitingAfterPreemption(VllmV1Policy):
    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        running = list(view.running)
        self._running_pass(view, plan, running)
        self._waiting_pass(view, plan, len(running), iter(self._waiting_order(view)))


class FcfsVictimHead(VllmV1Policy):
    def _victim(self, running: list[LiveRequest]) -> LiveRequest:
        return running[0] if self.mode == "fcfs" else super()._victim(running)


class PriorityVictimByPriorityOnly(VllmV1Policy):
    def _victim(self, running: list[LiveRequest]) -> LiveRequest:
        if self.mode == "priority":
            return max(running, key=lambda r: r.priority)
        return super()._victim(running)


class PriorityWaitingInArrivalOrder(VllmV1Policy):
    def _waiting_order(self, view: StateView) -> Iterable[LiveRequest]:
        return view.waiting


class NoThresholdWhenWaiting(VllmV1Policy):
    def _new_tokens(self, r: LiveRequest, view: StateView, budget: int, *, running: bool) -> int:
        if running:
            return super()._new_tokens(r, view, budget, running=True)
        return min(r.p + r.e - r.c, budget)


class NoThresholdWhenRunning(VllmV1Policy):
    # the running pass reads the threshold off the cut's budgets (its copy of `_new_tokens`):
    # it sees a cut without one
    def _running_pass(
        self, view: StateView, plan: PlanBuilder, running: list[LiveRequest]
    ) -> tuple[int, bool]:
        unclamped = SimpleNamespace(
            budgets=replace(view.budgets, long_prefill_token_threshold=None)
        )
        return super()._running_pass(unclamped, plan, running)  # type: ignore[arg-type]


class PreemptOnlyIsNoStep(VllmV1Policy):
    preempt_only_is_a_step = False


class RefusalSkipsToTheNext(VllmV1Policy):
    def _waiting_pass(
        self, view: StateView, plan: PlanBuilder, n_running: int, waiting: Iterable[LiveRequest]
    ) -> None:
        for r in waiting:
            if plan.tokens_left <= 0 or n_running >= view.budgets.sequence_budget:
                return
            n = self._new_tokens(r, view, plan.tokens_left, running=False)
            if self._admit(r, n, view, plan) is None:
                n_running += 1
            else:
                plan.defer(r, "DEFERRED_KV_BUDGET")


class FcfsPreemptedToTheBack(VllmV1Policy):
    def _waiting_order(self, view: StateView) -> Iterable[LiveRequest]:
        if self.mode == "priority":
            return super()._waiting_order(view)
        fresh = [r for r in view.waiting if r.preemptions == 0]
        return fresh + [r for r in view.waiting if r.preemptions > 0]


class SelfPreemptionGoesOn(VllmV1Policy):
    def _running_pass(
        self, view: StateView, plan: PlanBuilder, running: list[LiveRequest]
    ) -> tuple[int, bool]:
        preempted = False
        i = 0
        while i < len(running) and plan.tokens_left > 0:
            r = running[i]
            n = self._new_tokens(r, view, plan.tokens_left, running=True)
            placed = True
            while plan.free_blocks is not None and plan.kv_needed(r, n) > plan.free_blocks:
                victim = self._victim(running)
                if plan.chosen(victim):
                    i -= 1
                running.remove(victim)
                plan.preempt(victim)
                preempted = True
                if victim is r:
                    placed = False
                    break
            if placed:  # a request that preempted itself does not end the pass
                plan.take(r, n)
                i += 1
        return i, preempted


POLICY_MUTANTS: dict[str, type[VllmV1Policy]] = {
    "no whole-sequence admission gate": NoWholeSequenceGate,
    "waiting pass after a preemption": WaitingAfterPreemption,
    "fcfs victim is the head": FcfsVictimHead,
    "priority victim by priority only": PriorityVictimByPriorityOnly,
    "priority waiting queue in arrival order": PriorityWaitingInArrivalOrder,
    "no long-prefill threshold for waiting requests": NoThresholdWhenWaiting,
    "no long-prefill threshold for running requests": NoThresholdWhenRunning,
    "a preempt-only step is no step": PreemptOnlyIsNoStep,
    "a refused waiting request is skipped, not a stop": RefusalSkipsToTheNext,
    "fcfs victims go to the back of the queue": FcfsPreemptedToTheBack,
    "a self-preemption does not end the running pass": SelfPreemptionGoesOn,
}


class _Registry:
    def __init__(self, cls: type[VllmV1Policy]) -> None:
        self.cls = cls

    def create(self, policy_id: str, options: Any) -> VllmV1Policy:
        return self.cls(options)


def _first_divergence() -> str | None:
    for case in CASES:
        result = conform(case)
        if result.outcome is not CheckStatus.PASSED:
            return case.trace.name
    return None


@pytest.mark.instruments
@pytest.mark.parametrize("name", list(POLICY_MUTANTS))
def test_a_changed_policy_rule_is_caught_by_the_corpus(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vllm-v1 with one rule changed diverges from vLLM on at least one corpus run."""
    monkeypatch.setattr(sides, "POLICIES", _Registry(POLICY_MUTANTS[name]))
    assert _first_divergence() is not None, f"no corpus run catches: {name}"


def _unselect_keeping_tokens(self: PlanBuilder, req: LiveRequest) -> None:
    left = self.tokens_left
    _UNSELECT(self, req)
    self.tokens_left = left  # the victim's tokens are not given back


_UNSELECT = PlanBuilder.unselect


@pytest.mark.instruments
def test_a_victim_that_keeps_its_tokens_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A victim scheduled earlier in the step must give its tokens back to the budget."""
    monkeypatch.setattr(PlanBuilder, "unselect", _unselect_keeping_tokens)
    assert _first_divergence() is not None


class SameStepFinish(sides.StepRenderer):
    """Reports a request finished at the step whose update finished it (vLLM: one later)."""

    def event(self, ev: Any) -> Iterator[Step]:
        for step in super().event(ev):
            if step.step == ev.iteration - 1:
                step = replace(step, finished=tuple(sorted(ev.finished)))
                self.unreported = set()
            yield step


def test_finishes_reported_without_the_lag_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM reports a finish at the next schedule() call; reporting it at once diverges."""
    monkeypatch.setattr(sides, "StepRenderer", SameStepFinish)
    assert _first_divergence() is not None


MAPPING_MUTANTS: dict[str, tuple[str, Any]] = {
    "no null block": ("usable_blocks", property(lambda self: self.num_gpu_blocks)),
    "budget ignores max_num_scheduled_tokens": (
        "token_budget",
        property(lambda self: self.max_num_batched_tokens),
    ),
    "no stop at max_model_len": ("output_limit", lambda self, p, max_tokens: max_tokens),
}


@pytest.mark.parametrize("name", list(MAPPING_MUTANTS))
def test_a_changed_mapping_rule_is_caught_by_the_corpus(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine configuration's mapping with one rule changed diverges somewhere too."""
    attr, value = MAPPING_MUTANTS[name]
    monkeypatch.setattr(engine_config.EngineConfig, attr, value)
    assert _first_divergence() is not None, f"no corpus run catches: {name}"
