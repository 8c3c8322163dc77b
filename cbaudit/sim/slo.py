"""SLO clocks, slack, outcome ledgers, goodput and overload arithmetic (article 0x07).

Clocks come from factual events only (F30-F34):

    first-token deadline  d_first = arrival + TTFT           (never admission, retry or resume)
    next-token deadline   d_next_j = y_(j-1) + TBT            (the previous emission)
    headroom              h(n) = d - n
    predicted slack       s(n; m) = d - f_hat(n; m) = h(n) - c_hat(n; m)

The outcome ledger of one offered cohort in a window W must close (F35):

    N_off = N_valid + N_miss + N_rej + N_open

with request rates N/W (requests/s) and token rates sum(E_i)/W (tokens/s), where token goodput
counts only successfully completed SLO-valid requests (F36, F37). Attainment has three
denominators that answer different questions: offered-load N_valid/N_off, admitted
N_valid/N_adm, completion-conditioned N_valid/N_comp (diagnostic only).

A request's SLO predicate: TTFT <= ttft, every inter-token gap <= tbt, TPOT <= tpot (TPOT is
undefined for a one-output request and then not evaluated; it is never 0), end-to-end latency
<= e2el. Limits come from the request's `slo` or from a goodput spec in the form
`ttft:MS tpot:MS e2el:MS` (also `tbt:MS`), which replaces them for every request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from cbaudit.sim.engine import ReplayRun
from cbaudit.sim.metrics import distribution, distribution_counts, scaled_counts

GOODPUT_KEYS = {"ttft": "ttft_ms", "tbt": "tbt_ms", "tpot": "tpot_ms", "e2el": "e2e_ms"}
SLO_KEYS = ("ttft_ms", "tbt_ms", "tpot_ms", "e2e_ms")


def first_token_deadline(arrival: float, ttft: float) -> float:
    """d_first = a + tau_TTFT (F30)."""
    return arrival + ttft


def next_token_deadline(previous_emission: float, tbt: float) -> float:
    """d_next = y_(j-1) + tau_TBT (F31)."""
    return previous_emission + tbt


def headroom(deadline: float, now: float) -> float:
    """h(n) = d - n (F32): factual time left, says nothing about the work's cost."""
    return deadline - now


def predicted_slack(deadline: float, predicted_finish: float) -> float:
    """s(n; m) = d - f_hat(n; m) (F34)."""
    return deadline - predicted_finish


def lower_bound_finish(now: float, tick: float, *, first: bool, prefill_units: int) -> float:
    """`exclusive_endpoint_lower_bound_v1`: now + units * tick (first) or now + tick (next)."""
    return now + (prefill_units * tick if first else tick)


def parse_goodput(items: Iterable[str]) -> dict[str, float]:
    """`["ttft:30", "tpot:20"]` (or one string "ttft:30 tpot:20") -> SLO limits in ms.

    Raises ValueError naming the bad item (unknown key, missing value, non-positive number).
    """
    out: dict[str, float] = {}
    for item in items:
        for part in item.replace(",", " ").split():
            key, sep, raw = part.partition(":")
            if key == "itl":
                raise ValueError(
                    f"goodput limit {part!r}: itl is not a goodput key, in vLLM either"
                    " (vllm bench serve takes ttft, tpot, e2el: vllm/benchmarks/serve.py,"
                    " check_goodput_args); to bound every gap between two output tokens use"
                    " tbt:MS"
                )
            if not sep or key not in GOODPUT_KEYS:
                raise ValueError(
                    f"goodput limit {part!r} is not KEY:MS with KEY in {sorted(GOODPUT_KEYS)}"
                )
            try:
                value = float(raw)
            except ValueError:
                raise ValueError(f"goodput limit {part!r}: {raw!r} is not a number") from None
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"goodput limit {part!r} must be a positive number of ms")
            if GOODPUT_KEYS[key] in out:
                raise ValueError(f"goodput limit {key!r} given twice")
            out[GOODPUT_KEYS[key]] = value
    return out


def ratio(num: int, den: int) -> dict[str, Any]:
    """An exact fraction with its value (None when the denominator is zero)."""
    if den == 0:
        return {"fraction": f"{num}/0", "value": None, "percent": None}
    f = Fraction(num, den)
    return {
        "fraction": f"{num}/{den}",
        "value": round(float(f), 9),
        "percent": round(100 * float(f), 3),
    }


@dataclass(frozen=True)
class RequestOutcome:
    """One offered request's outcome in a window (times in ms from the window origin)."""

    request_id: str
    arrival_ms: float
    status: str  # valid | miss | rejected | open
    emitted: int  # outputs emitted inside the window
    ttft_ms: float | None
    tbt_max_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    violations: tuple[str, ...] = ()
    limits: Mapping[str, float] = field(default_factory=dict)

    @property
    def admitted(self) -> bool:
        return self.status != "rejected"

    @property
    def completed(self) -> bool:
        return self.status in ("valid", "miss")

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "arrival_ms": _num(self.arrival_ms),
            "status": self.status,
            "emitted": self.emitted,
            "ttft_ms": _opt(self.ttft_ms),
            "tbt_max_ms": _opt(self.tbt_max_ms),
            "tpot_ms": _opt(self.tpot_ms),
            "e2e_ms": _opt(self.e2e_ms),
            "violations": list(self.violations),
        }


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 9)


def _opt(x: float | None) -> float | int | None:
    return None if x is None else _num(x)


def judge(
    ttft: float | None,
    tbt_max: float | None,
    tpot: float | None,
    e2e: float | None,
    limits: Mapping[str, float],
) -> tuple[str, ...]:
    """The SLO limits a completed request violates (empty: SLO-valid)."""
    out = []
    if "ttft_ms" in limits and (ttft is None or ttft > limits["ttft_ms"]):
        out.append("ttft")
    if "tbt_ms" in limits and tbt_max is not None and tbt_max > limits["tbt_ms"]:
        out.append("tbt")
    if "tpot_ms" in limits and tpot is not None and tpot > limits["tpot_ms"]:
        out.append("tpot")
    if "e2e_ms" in limits and (e2e is None or e2e > limits["e2e_ms"]):
        out.append("e2el")
    return tuple(out)


def _ms_factor(run: ReplayRun) -> float | None:
    clock = run.workload.clock
    return 1.0 if clock.unit.value == "ms" else clock.tick_ms


def outcomes_from_run(
    run: ReplayRun,
    *,
    window_ms: float | None = None,
    goodput: Mapping[str, float] | None = None,
) -> tuple[list[RequestOutcome], float, bool]:
    """Per-request outcomes of a replay in window [0, window_ms] (default: the replay's end).

    Returns (outcomes, window_ms, tokens_exact): `tokens_exact` is False when the replay ran
    past the window and a request still streaming at the window end has outputs whose times
    the engine does not keep (its in-window count is then a lower bound).
    """
    factor = _ms_factor(run)
    if factor is None:
        raise ValueError("the workload's tick clock declares no tick_ms: SLOs need milliseconds")
    end_ms = run.end_time * factor
    window = end_ms if window_ms is None else float(window_ms)
    tokens_exact = end_ms <= window
    decls = run.workload.requests
    out: list[RequestOutcome] = []
    for i, (r, st) in enumerate(zip(run.requests, run.stats, strict=True)):
        arrival = r.arrival * factor
        if arrival > window:
            continue  # not part of the offered cohort of this window
        decl = decls[i]
        limits = dict(goodput) if goodput else {k: float(v) for k, v in (decl.slo or {}).items()}
        if st.finish_reason == "rejected":
            out.append(
                RequestOutcome(r.rid, arrival, "rejected", 0, None, None, None, None, (), limits)
            )
            continue
        first = None if st.first_token is None else st.first_token * factor
        last = None if st.last_token is None else st.last_token * factor
        done = st.finished is not None and st.finished * factor <= window
        ttft = None if first is None or first > window else first - arrival
        tbt_max = st.tbt_max * factor if st.tbt_count else None
        emitted = r.e if done or tokens_exact else _emitted_lower_bound(first, last, window, r.e)
        if not done:
            out.append(
                RequestOutcome(r.rid, arrival, "open", emitted, ttft, None, None, None, (), limits)
            )
            continue
        assert first is not None and last is not None and st.finished is not None
        e2e = last - arrival
        tpot = (last - first) / (r.e - 1) if r.e >= 2 else None
        bad = judge(ttft, tbt_max, tpot, e2e, limits)
        out.append(
            RequestOutcome(
                r.rid,
                arrival,
                "miss" if bad else "valid",
                r.e,
                ttft,
                tbt_max,
                tpot,
                e2e,
                bad,
                limits,
            )
        )
    return out, window, tokens_exact


def _emitted_lower_bound(first: float | None, last: float | None, window: float, e: int) -> int:
    if first is None or first > window:
        return 0
    if last is not None and last <= window:
        return e
    return 1


def ledger(outcomes: Sequence[RequestOutcome], window_ms: float) -> dict[str, Any]:
    """The closed outcome partition, rates with units, and the three attainment fractions."""
    n_off = len(outcomes)
    count = {
        s: sum(1 for o in outcomes if o.status == s) for s in ("valid", "miss", "rejected", "open")
    }
    n_adm = n_off - count["rejected"]
    n_comp = count["valid"] + count["miss"]
    tokens = sum(o.emitted for o in outcomes)
    good_tokens = sum(o.emitted for o in outcomes if o.status == "valid")
    seconds = window_ms / 1000.0

    def rate(n: int, unit: str) -> dict[str, Any]:
        return {"value": None if seconds == 0 else round(n / seconds, 6), "unit": unit}

    closes = n_off == count["valid"] + count["miss"] + count["rejected"] + count["open"]
    return {
        "window_ms": _num(window_ms),
        "counts": {
            "offered": n_off,
            "admitted": n_adm,
            "completed": n_comp,
            "slo_valid": count["valid"],
            "completed_miss": count["miss"],
            "rejected": count["rejected"],
            "unfinished": count["open"],
        },
        "partition": {
            "equation": "offered = slo_valid + completed_miss + rejected + unfinished",
            "closes": closes,
        },
        "rates": {
            "offered_request_rate": rate(n_off, "requests/s"),
            "request_throughput": rate(n_comp, "requests/s"),
            "request_goodput": rate(count["valid"], "requests/s"),
            "token_throughput": rate(tokens, "tokens/s"),
            "token_goodput": rate(good_tokens, "tokens/s"),
        },
        "tokens": {"emitted": tokens, "slo_valid_completed": good_tokens},
        "attainment": {
            "offered_load": ratio(count["valid"], n_off),
            "admitted": ratio(count["valid"], n_adm),
            "completion_conditioned": ratio(count["valid"], n_comp),
        },
        "attainment_note": (
            "completion-conditioned attainment is diagnostic; offered-load attainment keeps"
            " rejected and unfinished requests in the denominator"
        ),
    }


def slo_report(
    run: ReplayRun,
    *,
    window_ms: float | None = None,
    goodput: Mapping[str, float] | None = None,
    per_request: bool = True,
) -> dict[str, Any]:
    """Outcome ledger, TTFT/TBT distributions and per-request outcomes of one replay."""
    outcomes, window, exact = outcomes_from_run(run, window_ms=window_ms, goodput=goodput)
    report = ledger(outcomes, window)
    report["limits_source"] = "goodput option" if goodput else "per-request slo declarations"
    if goodput:
        report["goodput_limits_ms"] = {k: _num(v) for k, v in sorted(goodput.items())}
    report["tokens_exact"] = exact
    report["ttft_ms"] = distribution([o.ttft_ms for o in outcomes if o.ttft_ms is not None])
    factor = _ms_factor(run) or 1.0
    report["tbt_ms"] = distribution_counts(
        scaled_counts(run.tbt_counts, lambda x: x * factor) or {}
    )
    report["violations"] = {
        key: sum(1 for o in outcomes if key in o.violations)
        for key in ("ttft", "tbt", "tpot", "e2el")
    }
    if per_request:
        report["requests"] = [o.to_json() for o in outcomes]
    return report


def tail_gate(samples: Sequence[float], gates: Mapping[str, float]) -> dict[str, Any]:
    """Nearest-rank distribution of `samples` and pass/fail per gate (`mean`, `p50`, ...).

    A percentile below its sample gate is `insufficient_sample`: the gate then neither passes
    nor fails, and a mean gate never stands in for a percentile gate.
    """
    dist = distribution(samples)
    verdicts: dict[str, Any] = {}
    for name, limit in gates.items():
        value = dist.get(name)
        if isinstance(value, int | float):
            verdicts[name] = {"value": value, "limit": limit, "passes": value <= limit}
        else:
            verdicts[name] = {"value": value, "limit": limit, "passes": None}
    return {"distribution": dist, "gates": verdicts}


def overload(demand_rows: int, capacity_rows: int) -> dict[str, Any]:
    """Finite-window feasibility (F41): D_W > C_W means not all offered work completes in W."""
    return {
        "demand_rows": demand_rows,
        "capacity_rows": capacity_rows,
        "unavoidable_excess_rows": max(demand_rows - capacity_rows, 0),
        "all_offered_work_can_complete": demand_rows <= capacity_rows,
    }


def queue_recurrence(released: Sequence[int], capacity: Sequence[int]) -> list[int]:
    """Q_(k+1) = max(0, Q_k + A_k - C_k) from Q_0 = 0 (F40)."""
    q = 0
    out = [q]
    for a, c in zip(released, capacity, strict=True):
        q = max(0, q + a - c)
        out.append(q)
    return out
