"""Replay metrics, each labelled with what it is worth.

Definitions (clock units are the workload's: ticks or ms; `_ms` values convert ticks with the
declared `tick_ms`, null when none is declared):

* logical slot occupancy over a horizon of H iterations: selected request generations summed
  over iterations 1..H, divided by `sequence_budget * H`. It counts scheduler slots, not GPU
  work: it is never GPU utilization.
* idle slot-iterations: `sequence_budget * H` minus the useful slot-iterations.
* queue delay: start of the first iteration that served the request minus its arrival (for
  boundary arrivals: the boundary ticks it waited).
* TTFT: time of the first output token minus arrival. E2E: time of the last output token
  minus arrival. TBT: the gaps between consecutive output tokens of one request.
  TPOT: (last token - first token) / (outputs - 1), undefined for one-token outputs.
* percentiles: nearest rank (the ceil(q * n)-th smallest sample) with sample gates: p50 needs
  n >= 2, p95 n >= 20, p99 n >= 100; below the gate the value is `insufficient_sample`.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cbaudit.contract.live_request import LiveRequest
from cbaudit.model import EvidenceClass
from cbaudit.sim.engine import ReplayRun, RequestStats
from cbaudit.sim.series import SortedCounts

INSUFFICIENT = "insufficient_sample"
PERCENTILE_GATES: tuple[tuple[str, float, int], ...] = (
    ("p50", 0.50, 2),
    ("p95", 0.95, 20),
    ("p99", 0.99, 100),
)
OCCUPANCY_NOTE = "logical slot occupancy: scheduler slots used, not measured GPU utilization"


def json_number(x: float) -> float | int:
    """Stable JSON numbers: integers stay integers, floats are rounded to 9 decimals."""
    if float(x).is_integer():
        return int(x)
    return round(x, 9)


_num = json_number


def ms_converter(run: ReplayRun) -> Callable[[float], float | None]:
    """Clock units -> milliseconds for this run's clock; the converter returns None when the
    clock cannot say (ticks without a declared `tick_ms`)."""
    clock = run.workload.clock
    tick_ms = 1.0 if clock.unit.value == "ms" else clock.tick_ms
    if run.slot_clock and clock.unit.value == "ms":
        return _identity  # one iteration per millisecond
    if tick_ms is None:
        return lambda v: None
    if tick_ms == 1.0:
        return _identity  # v * 1.0 is v, bit for bit
    return lambda v: v * tick_ms


def _identity(v: float) -> float:
    """The converter of a clock already in milliseconds (`_both_counts` reuses the figures)."""
    return v


def nearest_rank(samples: Sequence[float], q: float) -> float:
    """The nearest-rank q-quantile of a non-empty sample."""
    xs = sorted(samples)
    rank = max(1, math.ceil(q * len(xs)))
    return xs[rank - 1]


def distribution(samples: Iterable[float]) -> dict[str, Any]:
    xs = sorted(samples)
    out: dict[str, Any] = {"n": len(xs)}
    if not xs:
        out.update({"mean": None, "min": None, "max": None})
        out.update({name: INSUFFICIENT for name, _, _ in PERCENTILE_GATES})
        return out
    out["mean"] = _num(math.fsum(xs) / len(xs))
    out["min"] = _num(xs[0])
    out["max"] = _num(xs[-1])
    for name, q, gate in PERCENTILE_GATES:
        out[name] = (
            _num(xs[max(1, math.ceil(q * len(xs))) - 1]) if len(xs) >= gate else INSUFFICIENT
        )
    return out


def distribution_counts(counts: Mapping[float, int]) -> dict[str, Any]:
    """`distribution` of the multiset `counts` (value -> how often), bit for bit.

    Nearest rank walks the cumulative counts of the sorted distinct values. The mean is the
    exact sum divided once: `math.fsum` is correctly rounded, so summing the values exactly (in
    integers over a common power-of-two denominator) and rounding once gives the same float.
    """
    n = sum(counts.values())
    out: dict[str, Any] = {"n": n}
    if not n:
        out.update({"mean": None, "min": None, "max": None})
        out.update({name: INSUFFICIENT for name, _, _ in PERCENTILE_GATES})
        return out
    pairs: Iterable[tuple[float, int]]
    if isinstance(counts, SortedCounts):  # already in order, in C arrays
        first, last = counts.first(), counts.last()
        pairs = counts.sorted_items()
    else:
        keys = sorted(counts)
        first, last = keys[0], keys[-1]
        pairs = ((v, counts[v]) for v in keys)
    out["mean"] = _num(exact_sum(counts) / n)
    out["min"] = _num(first)
    out["max"] = _num(last)
    wanted: list[tuple[int, str]] = []
    for name, q, gate in PERCENTILE_GATES:
        out[name] = INSUFFICIENT  # (the order of the keys is kept)
        if n >= gate:
            wanted.append((max(1, math.ceil(q * n)), name))
    wanted.sort()
    # one walk of the cumulative counts answers every rank, smallest first
    j = 0
    seen = 0
    for v, c in pairs:
        if j == len(wanted):
            break
        seen += c
        while j < len(wanted) and seen >= wanted[j][0]:
            out[wanted[j][1]] = _num(v)
            j += 1
    return out


def exact_sum(counts: Mapping[float, int]) -> float:
    """The correctly rounded sum of the multiset `counts` (what `math.fsum` of it returns)."""
    if any(not math.isfinite(v) for v in counts):
        return math.fsum(v * c for v, c in counts.items())  # inf/nan propagate as fsum's do
    # one pass, no list of ratios: every denominator is a power of two, so the running total
    # is kept over the largest denominator seen so far (2 ** shift) and rescaled when it grows
    total = 0
    shift = 0
    for v, c in counts.items():
        if not c:
            continue
        num, d = v.as_integer_ratio()
        k = d.bit_length() - 1
        if k > shift:
            total = (total << (k - shift)) + num * c
            shift = k
        else:
            total += (num * c) << (shift - k)
    return float(Fraction(total, 1 << shift))


def scaled_counts(
    counts: Mapping[float, int], convert: Callable[[float], float | None]
) -> dict[float, int] | None:
    """`counts` with every value converted (None when a value does not convert)."""
    out: dict[float, int] = {}
    for v, c in counts.items():
        m = convert(v)
        if m is None:
            return None
        out[m] = out.get(m, 0) + c
    return out


def occupancy(run: ReplayRun, horizon: int) -> dict[str, Any]:
    """Logical slot occupancy over iterations 1..horizon."""
    b = run.workload.budgets.sequence_budget
    useful = run.rows_per_iteration.prefix_sum(horizon)
    available = b * horizon
    frac = Fraction(useful, available) if available else Fraction(0)
    return {
        "fraction": f"{frac.numerator}/{frac.denominator}",
        "ratio": f"{useful}/{available}",
        "value": _num(float(frac)),
        "useful_slot_iterations": useful,
        "available_slot_iterations": available,
        "idle_slot_iterations": available - useful,
        "horizon_iterations": horizon,
        "sequence_budget": b,
        "note": OCCUPANCY_NOTE,
    }


def request_times(
    request: LiveRequest, stats: RequestStats
) -> tuple[float | None, float | None, float | None, float | None]:
    """One request's (queue delay, TTFT, E2E, TPOT) in clock units; None where undefined."""
    return _times(
        request.arrival, request.e, stats.first_scheduled, stats.first_token, stats.finished
    )


def _times(
    arrival: float,
    e: int,
    first_scheduled: float | None,
    first_token: float | None,
    finished: float | None,
) -> tuple[float | None, float | None, float | None, float | None]:
    """`request_times` from the figures themselves (the one formula for objects and table)."""
    q = None if first_scheduled is None else first_scheduled - arrival
    t1 = None if first_token is None else first_token - arrival
    end = None if finished is None else finished - arrival
    tp = None
    if finished is not None and first_token is not None and e >= 2:
        tp = (finished - first_token) / (e - 1)
    return q, t1, end, tp


def summarize(
    run: ReplayRun,
    *,
    windows: Sequence[int] = (),
    time_evidence: EvidenceClass = EvidenceClass.SYNTHETIC,
    per_request: bool = True,
) -> dict[str, Any]:
    """JSON-ready metrics of one replay."""
    clock = run.workload.clock
    to_ms = ms_converter(run)
    per = _per_request(run, to_ms, per_request)

    def both(samples: array[float]) -> dict[str, Any]:
        out = distribution(samples)
        if to_ms is _identity:  # the same samples: the same figures
            out["ms"] = dict(out)
            return out
        ms_samples = [to_ms(x) for x in samples]
        if all(m is not None for m in ms_samples):
            out["ms"] = distribution([m for m in ms_samples if m is not None])
        else:
            out["ms"] = None
        return out

    horizon = run.iterations
    end_ms = _ms(to_ms, run.end_time)
    outputs = per.outputs
    result: dict[str, Any] = {
        "policy": run.identity.to_json(),
        "workload_id": run.workload.workload_id,
        "clock_unit": clock.unit.value,
        "stop_reason": run.stop_reason,
        "iterations": run.iterations,
        "end_time": _num(run.end_time),
        "end_time_ms": end_ms,
        "requests_total": run.table.n,
        "requests_finished": per.finished,
        "output_tokens": outputs,
        "scheduled_tokens": run.tokens_per_iteration.total(),
        "preemptions": run.preemptions,
        "recompute_tokens": per.recompute,
        "slot_occupancy": occupancy(run, horizon),
        "slot_occupancy_windows": {str(h): occupancy(run, h) for h in windows},
        "throughput": {
            "output_tokens_per_iteration": _num(outputs / horizon) if horizon else None,
            "output_tokens_per_s": (
                _num(outputs / (end_ms / 1000.0)) if end_ms not in (None, 0) else None
            ),
        },
        "latency": {
            "queue_delay": both(per.qdelay),
            "ttft": both(per.ttft),
            "tbt": _both_counts(run.tbt_counts, to_ms),
            "tpot": both(per.tpot),
            "e2e": both(per.e2e),
        },
        "evidence_classes": {
            "slot_occupancy": EvidenceClass.SYNTHETIC.value,
            "latency": time_evidence.value,
            "throughput": time_evidence.value,
        },
        "validation": run.validation.value,
    }
    if per_request:
        result["requests"] = per.records
    return result


def _both_counts(
    counts: Mapping[float, int], to_ms: Callable[[float], float | None]
) -> dict[str, Any]:
    """`distribution_counts` in clock units and, when the clock converts, in ms."""
    out = distribution_counts(counts)
    if to_ms is _identity:  # the same multiset: the same figures
        out["ms"] = dict(out)
        return out
    ms = scaled_counts(counts, to_ms)
    out["ms"] = None if ms is None else distribution_counts(ms)
    return out


def _ms(to_ms: Callable[[float], float | None], v: float | None) -> float | int | None:
    """A clock-unit time in milliseconds, JSON-ready (None when undefined or unconvertible)."""
    if v is None:
        return None
    out = to_ms(v)
    return None if out is None else _num(out)


@dataclass
class _PerRequest:
    """Per-request records and the samples and totals drawn from them."""

    records: dict[str, Any] = field(default_factory=dict)
    # samples as C doubles (8 bytes each, not a float object and a list slot)
    ttft: array[float] = field(default_factory=lambda: array("d"))
    e2e: array[float] = field(default_factory=lambda: array("d"))
    tpot: array[float] = field(default_factory=lambda: array("d"))
    qdelay: array[float] = field(default_factory=lambda: array("d"))
    outputs: int = 0
    recompute: int = 0
    finished: int = 0


def request_record(
    r: LiveRequest, st: RequestStats, to_ms: Callable[[float], float | None]
) -> tuple[dict[str, Any], tuple[float | None, float | None, float | None, float | None]]:
    """One request's record (clocks in clock units and ms) and its (queue delay, TTFT, E2E,
    TPOT) in clock units."""
    rec: dict[str, Any] = {
        "arrival": _num(r.arrival),
        "output_tokens": r.e,
        "finish_reason": st.finish_reason,
        "first_run_iteration": st.first_scheduled_iteration,
        "preemptions": r.preemptions,
        "recompute_tokens": st.recompute_tokens,
        "scheduled_tokens": st.scheduled_tokens,
        "served_iterations": st.served_iterations,
    }
    times = request_times(r, st)
    for name, value in zip(("queue_delay", "ttft", "e2e", "tpot"), times, strict=True):
        rec[name] = None if value is None else _num(value)
        rec[name + "_ms"] = _ms(to_ms, value)
    rec["tbt_max"] = _num(st.tbt_max) if st.tbt_count else None
    rec["tbt_max_ms"] = _ms(to_ms, st.tbt_max) if st.tbt_count else None
    return rec, times


def _per_request(
    run: ReplayRun, to_ms: Callable[[float], float | None], keep: bool = True
) -> _PerRequest:
    """The latency samples and totals of every request (and, with `keep`, their records)."""
    per = _PerRequest()
    table = run.table
    workload = run.workload
    emitted = table.e
    first_scheduled = table.first_scheduled
    first_token = table.first_token
    finished = table.finished
    per.outputs = sum(emitted)
    per.recompute = sum(table.recompute_tokens)
    arrivals = workload.columns()[0]
    for i in range(table.n):
        if keep:
            r = table.live_request_at(workload, i)
            rec, (q, t1, end, tp) = request_record(r, table.stats_at(i), to_ms)
            per.records[r.rid] = rec
        else:  # the table's columns straight (NaN: absent)
            fs = first_scheduled[i]
            ft = first_token[i]
            fin = finished[i]
            q, t1, end, tp = _times(
                arrivals[i],
                emitted[i],
                None if fs != fs else fs,
                None if ft != ft else ft,
                None if fin != fin else fin,
            )
        if q is not None:
            per.qdelay.append(q)
        if t1 is not None:
            per.ttft.append(t1)
        if end is not None:
            per.e2e.append(end)
            per.finished += 1
        if tp is not None:
            per.tpot.append(tp)
    return per
