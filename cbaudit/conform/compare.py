"""Step-by-step comparison of vLLM's steps with cbaudit's, fed as both sides produce them.

Every field of every step is compared (the fields of `Step.fields`); the figures say how much
agrees: steps identical, busy steps (vLLM scheduled tokens) with the same tokens per request,
preemptions matched (same victim at the same step) and finish steps equal (the step whose
update finished each request). The first divergence keeps both sides' steps and the free
blocks each had before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from cbaudit.conform.inputs import Step


@dataclass
class Divergence:
    step: int
    fields: dict[str, dict[str, Any]]
    vllm: dict[str, Any] | None
    cbaudit: dict[str, Any] | None
    free_blocks_before: dict[str, int | None]
    line: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "fields": self.fields,
            "vllm": self.vllm,
            "cbaudit": self.cbaudit,
            "free_blocks_before": self.free_blocks_before,
        }


@dataclass
class Comparison:
    """Feed cbaudit's steps with `cbaudit(step)`; vLLM's come from `reference` on demand."""

    reference: Iterator[Step]
    record: bool  # a recorder file: its extra fields are compared too; cbaudit may go on
    initial_free: int | None = None  # free blocks before step 0 (both sides)
    vllm_steps: int = 0
    cbaudit_steps: int = 0
    compared: int = 0
    identical: int = 0
    busy: int = 0
    busy_same: int = 0
    preempt_vllm: int = 0
    preempt_cbaudit: int = 0
    preempt_matched: int = 0
    not_compared: int = 0  # cbaudit's steps after a record ended or was cut (not compared)
    cut: Step | None = None  # the record step where an abort stopped the comparison
    first: Divergence | None = None
    _finish_vllm: dict[str, int] = field(default_factory=dict)
    _finish_cbaudit: dict[str, int] = field(default_factory=dict)
    _free_vllm: int | None = None
    _free_cbaudit: int | None = None
    _done: bool = False

    def __post_init__(self) -> None:
        self._free_vllm = self._free_cbaudit = self.initial_free

    def cbaudit(self, step: Step) -> None:
        """Compare cbaudit's next step with vLLM's step of the same index."""
        self.cbaudit_steps += 1
        for rid in step.stopped or ():
            self._finish_cbaudit[rid] = step.step
        ref = self._next_reference()
        if ref is None:
            if self.record:
                self.not_compared += 1
            else:
                self._compare(None, step)
            return
        self._compare(ref, step)

    def finish(self) -> None:
        """cbaudit has no more steps: vLLM's remaining steps are divergences."""
        while (ref := self._next_reference()) is not None:
            self._compare(ref, None)

    def _next_reference(self) -> Step | None:
        if self._done:
            return None
        ref = next(self.reference, None)
        if ref is None or ref.aborted:
            self.cut = ref
            self._done = True
            return None
        self.vllm_steps += 1
        if ref.stopped is not None:
            for rid in ref.stopped:
                self._finish_vllm[rid] = ref.step
        else:  # a driver trace: the last step that scheduled a request finished it
            for rid, _ in ref.scheduled:
                self._finish_vllm[rid] = ref.step
        return ref

    def _compare(self, ref: Step | None, mine: Step | None) -> None:
        self.compared += 1
        a = ref.fields(record=self.record) if ref is not None else None
        b = mine.fields(record=self.record) if mine is not None else None
        if ref is not None and ref.scheduled:
            self.busy += 1
            self.busy_same += mine is not None and dict(mine.scheduled) == dict(ref.scheduled)
        pa = set(ref.preempted) if ref is not None else set()
        pb = set(mine.preempted) if mine is not None else set()
        self.preempt_vllm += len(pa)
        self.preempt_cbaudit += len(pb)
        self.preempt_matched += len(pa & pb)
        if a == b:
            self.identical += 1
        elif self.first is None:
            keys = sorted(set(a or {}) | set(b or {}))
            diff = {
                k: {"vllm": (a or {}).get(k), "cbaudit": (b or {}).get(k)}
                for k in keys
                if (a or {}).get(k) != (b or {}).get(k)
            }
            step = ref.step if ref is not None else mine.step if mine is not None else -1
            self.first = Divergence(
                step=step,
                fields=diff,
                vllm=ref.to_json(record=self.record) if ref is not None else None,
                cbaudit=mine.to_json(record=self.record) if mine is not None else None,
                free_blocks_before={"vllm": self._free_vllm, "cbaudit": self._free_cbaudit},
                line=ref.line if ref is not None else None,
            )
        if ref is not None and not ref.idle:
            self._free_vllm = ref.free_blocks_after
        if mine is not None and not mine.idle:
            self._free_cbaudit = mine.free_blocks_after

    @property
    def agree(self) -> bool:
        return self.first is None

    def figures(self) -> dict[str, Any]:
        finish_equal = sum(
            1 for rid, s in self._finish_vllm.items() if self._finish_cbaudit.get(rid) == s
        )
        out: dict[str, Any] = {
            "agree": self.agree,
            "steps": {
                "vllm": self.vllm_steps,
                "cbaudit": self.cbaudit_steps,
                "compared": self.compared,
                "identical": self.identical,
            },
            "busy_steps": {"vllm": self.busy, "same_tokens": self.busy_same},
            "preemptions": {
                "vllm": self.preempt_vllm,
                "cbaudit": self.preempt_cbaudit,
                "matched": self.preempt_matched,
            },
            "finish_steps": {"requests": len(self._finish_vllm), "equal": finish_equal},
            "first_divergence": None if self.first is None else self.first.to_json(),
        }
        if self.record:
            out["steps"]["cbaudit_not_compared"] = self.not_compared
        return out
