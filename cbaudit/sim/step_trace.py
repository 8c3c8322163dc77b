"""Per-step detail of a replay (`cbaudit replay --steps N`): what each iteration ran, what it
cost and why, what it admitted and how many K/V blocks that left.

The engine calls a `StepRecorder` after each executed iteration (only when one is attached:
the replay's hot path pays one `None` check). The recorder explains the step's time with the
cost model: for the roofline model both terms, the binding one (memory bandwidth or compute)
and the margin between them; for a step-time table the interpolated figure and any axis it
extrapolated; the unit model has no terms (one tick per iteration). Each recorded step becomes
one `replay.step` result, so every output format shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from cbaudit.model import CheckResult, EvidenceClass
from cbaudit.sim.step import StepShape


@dataclass(frozen=True)
class StepEvent:
    """What the engine knows about one executed iteration."""

    iteration: int
    start: float
    end: float
    shape: StepShape
    admitted: tuple[str, ...]
    preempted: tuple[str, ...]
    rejected: tuple[str, ...]
    finished: tuple[str, ...]
    kv_blocks_left: int | None  # free after this step's admissions and allocations
    kv_blocks_free_end: int | None  # free after finished requests released theirs
    kv_total_blocks: int | None
    # request id -> tokens, in the plan's order (for conform, which compares them with vLLM)
    scheduled: tuple[tuple[str, int], ...] = ()
    running_after: tuple[str, ...] = ()  # the running queue after this step, in its order
    waiting_after: int = 0  # requests waiting after this step


def _ms(value: Fraction | float) -> float:
    return round(float(value), 6)


def explain_cost(cost: Any, shape: StepShape) -> dict[str, Any]:
    """Why the cost model gives this step its time."""
    name = str(getattr(cost, "name", type(cost).__name__))
    if shape.tokens == 0:
        return {"model": name, "bound": "empty step", "step_ms": 0.0}
    terms_of = getattr(cost, "terms", None)
    if callable(terms_of):  # the roofline model
        t = terms_of(shape)
        lo, hi = sorted((t.memory_ms, t.compute_ms))
        return {
            "model": name,
            "bound": f"{t.bound.value}-bound",
            "binding_term": "memory bandwidth" if t.bound.value == "memory" else "compute",
            "memory_ms": _ms(t.memory_ms),
            "compute_ms": _ms(t.compute_ms),
            "overhead_ms": _ms(t.overhead_ms),
            "step_ms": _ms(t.step_ms),
            "bytes": int(t.bytes),
            "flops": t.flops,
            "margin": None if lo == 0 else round(float(hi / lo), 6),
        }
    estimate = getattr(cost, "estimate", None)
    if callable(estimate):  # a measured step-time table
        e = estimate(shape)
        return {
            "model": name,
            "bound": "table (measured, interpolated)",
            "step_ms": _ms(e.ms),
            "evidence_class": e.evidence_class.value,
            "extrapolated": list(e.extrapolated),
        }
    return {"model": name, "bound": "unit clock: one tick per iteration (no roofline terms)"}


class StepRecorder:
    """Collects the first `limit` steps of a replay with their cost explanation."""

    def __init__(self, cost: Any, limit: int) -> None:
        if limit < 1:
            raise ValueError("a step trace needs at least one step")
        self.cost = cost
        self.limit = limit
        self.steps: list[dict[str, Any]] = []

    @property
    def full(self) -> bool:
        return len(self.steps) >= self.limit

    def __call__(self, event: StepEvent) -> None:
        if self.full:
            return
        shape = event.shape
        cost, costed, padding = self.cost, shape, None
        pad = getattr(cost, "pad", None)
        if callable(pad):  # CUDA-graph buckets: the step runs padded to its bucket
            costed, padding = pad(shape)
            cost = cost.inner
        record: dict[str, Any] = {
            "iteration": event.iteration,
            "start": round(event.start, 6),
            "end": round(event.end, 6),
            "decode_rows": shape.decode_rows,
            "prefill_chunks": len(shape.prefill_chunks),
            "prefill_tokens": shape.prefill_tokens,
            "tokens": shape.tokens,
            "cost": explain_cost(cost, costed),
            "admitted": list(event.admitted),
            "preempted": list(event.preempted),
            "rejected": list(event.rejected),
            "finished": list(event.finished),
            "kv": None
            if event.kv_total_blocks is None
            else {
                "blocks_left": event.kv_blocks_left,
                "blocks_free_at_end": event.kv_blocks_free_end,
                "total_blocks": event.kv_total_blocks,
            },
        }
        if padding is not None:
            record["padding_tokens"] = padding
            record["padded_tokens"] = costed.tokens
        self.steps.append(record)


def _line(step: dict[str, Any]) -> str:
    parts = [
        f"t {step['start']:g} -> {step['end']:g}: {step['decode_rows']} decode row(s),"
        f" {step['prefill_chunks']} prefill chunk(s) ({step['prefill_tokens']} tokens)"
    ]
    cost = step["cost"]
    if "memory_ms" in cost:
        other = "compute" if cost["binding_term"] == "memory bandwidth" else "memory"
        parts.append(
            f"{cost['model']}: {cost['bound']} ({cost['binding_term']}"
            f" {max(cost['memory_ms'], cost['compute_ms']):.6g} ms vs {other}"
            f" {min(cost['memory_ms'], cost['compute_ms']):.6g} ms)"
        )
    else:
        parts.append(f"{cost['model']}: {cost['bound']}")
    for key in ("admitted", "preempted", "rejected", "finished"):
        if step[key]:
            parts.append(f"{key} {', '.join(step[key])}")
    if step.get("padding_tokens"):
        parts.append(f"padded by {step['padding_tokens']} token(s) to {step['padded_tokens']}")
    kv = step["kv"]
    if kv is not None:
        parts.append(f"K/V blocks left {kv['blocks_left']} of {kv['total_blocks']}")
    return "; ".join(parts)


def step_results(steps: Sequence[dict[str, Any]], evidence: EvidenceClass) -> list[CheckResult]:
    """One `replay.step` result per recorded step (its metrics are the record)."""
    return [
        CheckResult(
            check="replay.step",
            subject=f"iteration {s['iteration']}",
            metrics=s,
            evidence_class=evidence,
            reason=_line(s),
        )
        for s in steps
    ]
