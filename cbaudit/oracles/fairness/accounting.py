"""Fairness and starvation accounting (article 0x09A, Loop 8).

The local accounting contract: the protected identity is declared (a client, a cache-hit group,
a request); service is published only from completed intervals (planned or failed work is zero
service); the weighted service of an identity over [t1, t2] is

    W_i(t1, t2) = w_p * n_p + w_q * n_q

where n_p / n_q are completed input / output rows (a row at a position below the prompt length
is an input row, any later row an output row). Starvation is a failed exit condition:
eligible throughout the interval and zero completed events.

Everything here is pure arithmetic over declared data; the tick-level scenario oracle is
`cbaudit.sim.fairness_oracle` and the engine-level replay metrics are
`cbaudit.sim.fairness_replay`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from cbaudit.policies.least_service import weighted_rows as weighted_rows

Number = int | Fraction


@dataclass
class ServiceSeries:
    """Cumulative completed service per identity at each cut (cut t = before tick t)."""

    identities: tuple[str, ...]
    cuts: list[dict[str, Number]] = field(default_factory=list)
    backlogged: list[frozenset[str]] = field(default_factory=list)  # per tick: who was eligible
    completed: list[dict[str, int]] = field(default_factory=list)  # per tick: completed events

    def __post_init__(self) -> None:
        if not self.cuts:
            self.cuts.append(dict.fromkeys(self.identities, 0))

    def tick(
        self,
        eligible: Iterable[str],
        service: Mapping[str, Number],
        events: Mapping[str, int] | None = None,
    ) -> None:
        """Record one tick: who was eligible at its start and what completed during it."""
        last = self.cuts[-1]
        self.cuts.append({i: last[i] + service.get(i, 0) for i in self.identities})
        self.backlogged.append(frozenset(eligible))
        self.completed.append(dict(events or {}))

    @property
    def final(self) -> dict[str, Number]:
        return dict(self.cuts[-1])

    def curve(self, identity: str) -> list[list[Number]]:
        """[[cut, cumulative service], ...] for a chart."""
        return [[t, c[identity]] for t, c in enumerate(self.cuts)]


def backlogged_gap(series: ServiceSeries, f: str, g: str) -> tuple[Number, tuple[int, int] | None]:
    """max |W_f(t1,t2) - W_g(t1,t2)| over cuts inside one run where both stay backlogged.

    A run is a maximal range of ticks [a, b) at whose starts both identities were eligible;
    its cuts are a..b. Within a run the maximum equals max D - min D with D = S_f - S_g.
    Returns the gap and the run (cuts a, b) that attains it (None when never co-backlogged).
    """
    best: Number = 0
    where: tuple[int, int] | None = None
    t = 0
    n = len(series.backlogged)
    while t < n:
        if not {f, g} <= series.backlogged[t]:
            t += 1
            continue
        a = t
        while t < n and {f, g} <= series.backlogged[t]:
            t += 1
        d = [series.cuts[c][f] - series.cuts[c][g] for c in range(a, t + 1)]
        gap = max(d) - min(d)
        if where is None or gap > best:
            best, where = gap, (a, t)
    return best, where


def starved(series: ServiceSeries, identity: str, t1: int = 0, t2: int | None = None) -> bool:
    """EligibleThroughout(identity, [t1, t2)) and zero completed events in it."""
    end = len(series.backlogged) if t2 is None else t2
    if end <= t1:
        return False
    window = range(t1, end)
    eligible = all(identity in series.backlogged[t] for t in window)
    done = sum(series.completed[t].get(identity, 0) for t in window)
    return eligible and done == 0


def vtc_lift(
    counters: Mapping[str, Number],
    entering: str,
    active: Sequence[str],
    last_counter: Number | None = None,
) -> Number:
    """VTC Algorithm 2's lift: c_i <- max(c_i, min over other active c_j), else the last counter."""
    others = [counters[c] for c in active if c != entering]
    floor = min(others) if others else (last_counter if last_counter is not None else 0)
    return max(counters.get(entering, 0), floor)


@dataclass(frozen=True)
class VtcBound:
    """The one-step counter increment U = max(w_p L_input, w_q M) and the 2U service bound."""

    u: Number
    two_u: Number


def vtc_bound(w_p: Number, w_q: Number, l_input: int, m: int) -> VtcBound:
    u = max(w_p * l_input, w_q * m)
    return VtcBound(u, 2 * u)


# The assumptions Theorem 4.4's 2U bound needs (article 0x09A); all must hold.
VTC_ASSUMPTIONS: Mapping[str, str] = {
    "backlogged_full_interval": "both compared clients stay backlogged for the whole interval",
    "lift_and_charging_preserved": "Algorithm 2's counter lift and charging events are kept",
    "work_conserving": "the scheduler is work-conserving under the paper's memory criterion",
    "no_preemption": "the main result's no-preemption assumption holds",
    "finite_bounds": "L_input and M are valid finite bounds for the analysed system",
}


@dataclass(frozen=True)
class ReconcileStep:
    tick: int
    client: str
    completed: bool
    c_select: tuple[Number, ...]  # provisional counter before, after reserve, after settle
    w_done: tuple[Number, Number]  # authoritative service before, after


def completion_reconciled(
    events: Sequence[Mapping[str, object]],
) -> tuple[list[ReconcileStep], dict[str, Number], dict[str, Number]]:
    """The teaching adaptation `completion_reconciled_vtc_teaching_v1`.

    Each event: `tick`, `client`, `predicted` cost, `completes` (bool) and, when it completes,
    `actual` cost (default: predicted). Selection reserves the prediction in C_select; a
    completion moves W_done by the actual cost and settles C_select by actual - predicted; a
    failure rolls the reservation back and adds nothing to W_done.
    """
    c_sel: dict[str, Number] = {}
    w_done: dict[str, Number] = {}
    steps: list[ReconcileStep] = []
    for ev in events:
        client = str(ev["client"])
        predicted = _num(ev["predicted"])
        before = c_sel.get(client, 0)
        reserved = before + predicted
        w0 = w_done.get(client, 0)
        if ev["completes"]:
            actual = _num(ev.get("actual", predicted))
            w_done[client] = w0 + actual
            c_sel[client] = reserved + (actual - predicted)
            trace: tuple[Number, ...] = (before, reserved)
            if actual != predicted:
                trace = (before, reserved, c_sel[client])
        else:
            c_sel[client] = reserved - predicted
            w_done[client] = w0
            trace = (before, reserved, c_sel[client])
        steps.append(
            ReconcileStep(
                int(_num(ev["tick"])),
                client,
                bool(ev["completes"]),
                trace,
                (w0, w_done[client]),
            )
        )
    return steps, c_sel, w_done


def aged_priority(base: int, now: int, arrival: int, q_age: int) -> int:
    """Teaching score p_eff = p_base - floor((t - a_r) / q_age) (lower is more urgent)."""
    return base - (now - arrival) // q_age


def _num(value: object) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | Fraction):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def number_json(value: Number) -> int | str:
    """Integers stay integers; a fraction is spelled "n/d"."""
    if isinstance(value, Fraction):
        return (
            value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
        )
    return value
