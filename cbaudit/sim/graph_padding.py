"""CUDA-graph buckets in the cost models (lecture 4, "CUDA graphs and padding").

An engine that replays captured CUDA graphs pads each step's batch up to the smallest captured
bucket that holds it, b(B) = min{b_i >= B}, and runs Delta(B) = b(B) - B phantom tokens that
are computed and thrown away. `GraphPaddedCost` wraps any cost model: a step of B tokens
(decode rows plus prefill tokens, as vLLM V1 pads `num_tokens`) is costed as the step plus
Delta(B) phantom decode rows, each at the step's mean decode context (rounded half up; 1 when
the step has no decode rows), so that under the roofline each padded token costs what the
lecture says it costs in the bandwidth-bound regime, its K/V read Lbar * kv / (beta * MBU),
and its FLOPs where the step is compute-bound. A step larger than the largest bucket runs
without a graph (eagerly) and is not padded. Under the unit clock a step is one tick
whatever its padding: the padding is reported, not timed.

Options (`graph_buckets:` in replay options, `--graph-buckets` and `--graph-max-batch` on the
command line): `buckets` (`pow2`, `stride:G` or a list of sizes, as `cbaudit model
graph-padding` takes them) and `max_batch` (the largest batch captured: the buckets are those
of 1..max_batch, `calculators.BucketSpec.buckets_for`).

Padding depends on a step's token count only, so the totals (`padding_tokens`, padded and eager
steps) follow from the replay's tokens per iteration; `--steps` gives each step's padding and
its padded cost.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cbaudit.sim.calculators import BucketSpec, parse_buckets
from cbaudit.sim.step import StepShape

OPTION_KEYS = ("buckets", "max_batch")


@dataclass(frozen=True)
class GraphBuckets:
    """Captured batch sizes, ascending."""

    spec: BucketSpec
    max_batch: int
    sizes: tuple[int, ...]

    def padding(self, tokens: int) -> int:
        """Delta(B) for a step of `tokens` tokens (0 when empty or beyond the largest)."""
        if tokens <= 0 or tokens > self.sizes[-1]:
            return 0
        return self.sizes[bisect.bisect_left(self.sizes, tokens)] - tokens

    def describe(self) -> dict[str, Any]:
        return {
            "buckets": self.spec.text,
            "max_batch": self.max_batch,
            "graphs": len(self.sizes),
            "largest": self.sizes[-1],
        }

    def totals(self, tokens_per_iteration: Iterable[int]) -> dict[str, Any]:
        """Padding over a replay's executed iterations."""
        padded = eager = busy = total = 0
        largest = self.sizes[-1]
        for n in tokens_per_iteration:
            if n <= 0:
                continue
            busy += 1
            if n > largest:
                eager += 1
                continue
            delta = self.padding(n)
            if delta:
                padded += 1
                total += delta
        return {
            **self.describe(),
            "padding_tokens": total,
            "padded_steps": padded,
            "eager_steps": eager,
            "busy_steps": busy,
            "mean_padding_per_busy_step": None if busy == 0 else round(total / busy, 6),
        }


def make_graph_buckets(options: Mapping[str, Any]) -> GraphBuckets | None:
    """The buckets from replay options (None when none are declared); ValueError if unusable."""
    if not options:
        return None
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:
        raise ValueError(
            f"unknown graph_buckets options {unknown} (known: {', '.join(OPTION_KEYS)})"
        )
    raw = options.get("buckets")
    if isinstance(raw, list):
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in raw):
            raise ValueError(f"a bucket list holds integers, got {raw!r}")
        raw = ",".join(str(b) for b in raw)
    if not isinstance(raw, str):
        raise ValueError("graph_buckets needs buckets: pow2, stride:G or a list of sizes")
    spec = parse_buckets(raw)
    top = options.get("max_batch")
    if top is None and spec.sizes:
        top = spec.sizes[-1]
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"graph_buckets max_batch must be an integer >= 1, got {top!r}")
    return GraphBuckets(spec, top, spec.buckets_for(top))


class GraphPaddedCost:
    """A cost model whose steps are padded to captured CUDA-graph buckets."""

    def __init__(self, inner: Any, buckets: GraphBuckets) -> None:
        self.inner = inner
        self.buckets = buckets
        self.name = getattr(inner, "name", type(inner).__name__)
        self.is_unit = bool(getattr(inner, "is_unit", False))

    @property
    def evidence_class(self) -> Any:
        return self.inner.evidence_class

    def pad(self, step: StepShape) -> tuple[StepShape, int]:
        """The step as the graph runs it, and its phantom tokens."""
        delta = self.buckets.padding(step.tokens)
        if delta == 0:
            return step, 0
        lens = step.decode_context_lens
        ctx = (2 * sum(lens) + len(lens)) // (2 * len(lens)) if lens else 1
        return StepShape(lens + (ctx,) * delta, step.prefill_chunks), delta

    def step_time_ms(self, step: StepShape) -> float:
        return float(self.inner.step_time_ms(self.pad(step)[0]))

    def describe(self) -> dict[str, Any]:
        out = dict(self.inner.describe()) if hasattr(self.inner, "describe") else {}
        out["graph_buckets"] = self.buckets.describe()
        return out

    def __getattr__(self, name: str) -> Any:
        # terms / estimate for `replay --steps`: callers pass the padded shape (explain_cost)
        if name.startswith("__") or name == "inner":  # copy / pickle before __init__ ran
            raise AttributeError(name)
        return getattr(self.inner, name)
