"""cbaudit's side of a conformance check: a workload replayed under `vllm-v1`, step by step, in
vLLM's trace vocabulary.

The engine runs one iteration per tick of a tick clock, so iteration `i` is engine step
`i - 1` and a request arriving at step `s` is seen by step `s`. Between executed iterations
the engine skips ticks with nothing to run; those are steps too:

* under the driver loop (`Loop.DRIVER`) an idle step (`{"idle": true}`);
* under the engine loop (`Loop.ENGINE`, a real `EngineCore`) the first of them is a step that
  schedules nothing and reports the requests finished since the last one (vLLM's engine calls
  `schedule()` while it `has_requests()`, unreported finishes included); a later one is idle,
  which a recorder file never holds.

`finished` at a step lists the requests finished since the previous `schedule()` call (vLLM's
`finished_req_ids`); `new` are admitted for the first time, in admission order; `resumed`
are admitted again after a preemption.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from cbaudit.conform.inputs import ConformWorkload, Loop, Step
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, ReplayRun, Validation
from cbaudit.sim.step_trace import StepEvent

POLICY = "vllm-v1"


class StepRenderer:
    """Turns the engine's executed iterations into steps, idle and flush steps included."""

    def __init__(self, loop: Loop, usable_blocks: int) -> None:
        self.loop = loop
        self.next_step = 0
        self.free = usable_blocks
        self.unreported: set[str] = set()
        self.preempted_once: set[str] = set()

    def event(self, ev: StepEvent) -> Iterator[Step]:
        """The steps up to and including iteration `ev.iteration`."""
        at = ev.iteration - 1
        while self.next_step < at:
            yield self._quiet()
        scheduled = ev.scheduled
        admitted = ev.admitted
        new = tuple(r for r in admitted if r not in self.preempted_once)
        resumed = tuple(sorted(r for r in admitted if r in self.preempted_once))
        self.preempted_once.update(ev.preempted)
        free_end = ev.kv_blocks_free_end if ev.kv_blocks_free_end is not None else 0
        step = Step(
            step=at,
            scheduled=scheduled,
            total=sum(n for _, n in scheduled),
            new=new,
            resumed=resumed,
            preempted=tuple(sorted(ev.preempted)),
            finished=tuple(sorted(self.unreported)),
            running_after=ev.running_after,
            waiting_after=ev.waiting_after,
            free_blocks_after=free_end,
            stopped=tuple(sorted(ev.finished)),
            free_blocks_after_schedule=ev.kv_blocks_left,
        )
        self.unreported = set(ev.finished)
        self.free = free_end
        self.next_step = at + 1
        yield step

    def end(self) -> Iterator[Step]:
        """The last step of an engine loop: the flush that reports the last finishes."""
        if self.loop is Loop.ENGINE and self.unreported:
            yield self._quiet()

    def _quiet(self) -> Step:
        at = self.next_step
        self.next_step += 1
        if self.loop is Loop.ENGINE and self.unreported:
            finished = tuple(sorted(self.unreported))
            self.unreported = set()
            return Step(
                step=at,
                finished=finished,
                free_blocks_after=self.free,
                stopped=(),
                free_blocks_after_schedule=self.free,
            )
        return Step(step=at, idle=True)


def replay_steps(
    workload: ConformWorkload,
    sink: Callable[[Step], None],
    *,
    validation: Validation = Validation.CONTRACT,
) -> ReplayRun:
    """Replay `workload` under `vllm-v1` with its engine configuration, handing each step to
    `sink` as the engine produces it (memory stays flat); returns the engine's run."""
    config = workload.config
    renderer = StepRenderer(workload.loop, config.usable_blocks)

    def observe(ev: StepEvent) -> None:
        for step in renderer.event(ev):
            sink(step)

    policy = POLICIES.create(POLICY, config.policy_options())
    engine = Engine(
        workload.to_workload(),
        policy,
        UnitCostModel(),
        validation=validation,
        step_observer=observe,
    )
    run = engine.run()
    if run.stop_reason == "completed":
        for step in renderer.end():
            sink(step)
    return run
