"""vLLM's recorded decisions as contract records (`cbaudit conform --to-contract OUT.jsonl`).

`RecordedDecisions` is a policy that decides, at each step, exactly what vLLM's trace or
record says it decided: the same victims, the same tokens for the same requests, admissions
in vLLM's running order. Run through cbaudit's engine with a trace sink, it writes the
workload, state, plan and result records of the contract (article 0x01A), which
`cbaudit validate-plan --trace` then checks: frontiers, intervals, budgets, progress. vLLM
records no reason for a request it left out, so every such request carries the reason
`NOT_SCHEDULED_IN_RECORD`.
"""

from __future__ import annotations

from collections.abc import Iterator

from cbaudit.conform.inputs import Step
from cbaudit.contract.live_request import LiveRequest
from cbaudit.contract.records import Phase
from cbaudit.model import InputError
from cbaudit.policies.base import PlanBuilder, StateView

NOT_RECORDED = "NOT_SCHEDULED_IN_RECORD"


class RecordedDecisions:
    """A policy that replays vLLM's recorded steps (one per engine iteration)."""

    policy_id = "vllm-v0.23.0-recorded"
    policy_version = "0.23.0"
    phase_order = (Phase.DECODE_ROW, Phase.PREFILL_CHUNK)
    preempt_only_is_a_step = True

    def __init__(self, steps: Iterator[Step], scheduling: str, source: str) -> None:
        self._steps = steps
        self._source = source
        self.mode = scheduling
        if scheduling == "priority":
            self.tie_break_key: tuple[str, ...] = (
                "priority_rank",
                "arrival_order",
                "request_id",
                "request_generation",
            )
        else:
            self.tie_break_key = ("arrival_order", "request_id", "request_generation")

    def _error(self, step: Step, message: str) -> InputError:
        return InputError.at(
            "CONFORM.PLAYBACK.INCONSISTENT",
            f"step {step.step}: {message}",
            self._source,
            line=step.line,
        )

    def _step(self, index: int) -> Step:
        """vLLM's step `index`; the steps before it must have decided nothing."""
        for step in self._steps:
            if step.step == index:
                return step
            if step.scheduled or step.preempted:
                raise self._error(
                    step, "vLLM scheduled or preempted here, but the replay had no request to run"
                )
        raise InputError.at(
            "CONFORM.PLAYBACK.INCONSISTENT",
            f"the replay needs a decision for step {index}, past the end of the recorded steps",
            self._source,
        )

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        step = self._step(view.iteration - 1)
        live: dict[str, LiveRequest] = {r.rid: r for r in view.running}
        running = set(live)
        live.update((r.rid, r) for r in view.waiting)

        def request(rid: str, what: str) -> LiveRequest:
            r = live.get(rid)
            if r is None:
                raise self._error(
                    step, f"vLLM {what} {rid}, which is neither running nor waiting in the replay"
                )
            return r

        victims = [request(rid, "preempted") for rid in step.preempted]
        if self.mode == "priority":  # vLLM takes the largest (priority, arrival) first
            victims.sort(key=lambda r: (r.priority, r.arrival, r.arrival_order), reverse=True)
        else:  # FCFS takes the tail of the running list first
            position = {r.rid: i for i, r in enumerate(view.running)}
            victims.sort(key=lambda r: position.get(r.rid, -1), reverse=True)
        for v in victims:
            plan.preempt(v)
        order = {rid: i for i, rid in enumerate(step.running_after)}
        admitted = sorted(
            (rid for rid, _ in step.scheduled if rid not in running),
            key=lambda rid: order.get(rid, len(order)),
        )
        tokens = dict(step.scheduled)
        for rid, n in step.scheduled:
            if rid in running:
                plan.select(request(rid, "scheduled"), n)
        for rid in admitted:
            plan.select(request(rid, "admitted"), tokens[rid], admit=True)
        gone = {v.rid for v in victims}
        for rid, r in live.items():
            if rid not in tokens and rid not in gone and r.ready:
                plan.defer(r, NOT_RECORDED)
