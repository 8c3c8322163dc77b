"""Loop 7 operators (article 0x07): restart an SLO clock, forge slack, open the outcome ledger.

Each operator breaks one number or label of the `slo-overload` fixture that the oracle
recomputes: clock origins and event order in the declared ledger, headroom and slack under the
named cost model, TPOT, the online request declaration, the outcome partition, rate units and
values, attainment denominators, nearest-rank tails and their sample gates, and the
finite-window overload arithmetic. Every mutant costs one full oracle run (three replays), so
the generators yield a few targeted edits rather than one per number.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, replace
from cbaudit.mutate.patch import pointer_of

ORACLE = "slo-overload"
TARGET = f"oracle:{ORACLE}"
LOOP = "7"
SECTIONS = ("burst", "saturation")
#: Rate name -> the unit a wrong declaration claims instead of the right one.
WRONG_UNIT = {"requests/s": "tokens/s", "tokens/s": "requests/s"}
DENOMINATOR_OF = {
    "offered_load": "offered",
    "admitted": "admitted",
    "completion_conditioned": "completed",
}


def _tick(data: Mapping[str, Any]) -> float:
    model = data.get("cost_model")
    return float(model.get("tick_ms", 10)) if isinstance(model, Mapping) else 10.0


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _ledger(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    entries = data.get("clock_ledger")
    return [(i, e) for i, e in enumerate(entries or []) if isinstance(e, Mapping)]


def _selections(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    for i, entry in _ledger(data):
        for j, sel in enumerate(entry.get("selections") or []):
            if isinstance(sel, Mapping):
                yield pointer_of("clock_ledger", i, "selections", j), sel, str(entry["request_id"])


def _expects(data: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(section, policy label, declared expectation) for every replayed policy."""
    for section in SECTIONS:
        block = data.get(section)
        if not isinstance(block, Mapping):
            continue
        for label, expect in sorted((block.get("expect") or {}).items()):
            if isinstance(expect, Mapping):
                yield section, str(label), expect


# ------------------------------------------------------------------------- clock ledger


def _first_restart(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, e in _ledger(data):
        arrival, ttft = float(e["arrival_ms"]), float(e["slo"]["ttft_ms"])
        for key in ("admitted_ms", "resumed_ms"):
            if key in e and float(e[key]) != arrival:
                value = _num(float(e[key]) + ttft)
                yield (
                    (replace(pointer_of("clock_ledger", i, "deadlines_ms", "first"), value),),
                    f"{e['request_id']}: first-token deadline restarts at {key[:-3]} ({value} ms)",
                )


def _next_origin(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    tick = _tick(data)
    for i, e in _ledger(data):
        nexts = (e.get("deadlines_ms") or {}).get("next") or []
        for j, value in enumerate(nexts):
            moved = _num(float(value) + tick)
            yield (
                (replace(pointer_of("clock_ledger", i, "deadlines_ms", "next", j), moved),),
                f"{e['request_id']}: next deadline {j} measured one tick late ({moved} ms)",
            )


def _event_order(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, e in _ledger(data):
        outputs = list(e.get("outputs_ms") or [])
        if len(outputs) >= 2:
            swapped = [outputs[1], outputs[0], *outputs[2:]]
            yield (
                (replace(pointer_of("clock_ledger", i, "outputs_ms"), swapped),),
                f"{e['request_id']}: second output stamped before the first",
            )
        if "admitted_ms" in e and outputs:
            late = _num(float(e["admitted_ms"]) + 5)
            yield (
                (replace(pointer_of("clock_ledger", i, "arrival_ms"), late),),
                f"{e['request_id']}: admitted 5 ms before it arrives",
            )


def _headroom(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    tick = _tick(data)
    for ptr, sel, rid in _selections(data):
        value = _num(float(sel["headroom_ms"]) + tick)
        yield (
            (replace(f"{ptr}/headroom_ms", value),),
            f"{rid} at {sel['now_ms']} ms: headroom {value}",
        )


def _slack(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    tick = _tick(data)
    for ptr, sel, rid in _selections(data):
        value = _num(float(sel["slack_ms"]) + tick)
        yield (replace(f"{ptr}/slack_ms", value),), f"{rid} at {sel['now_ms']} ms: slack {value}"


def _predicted_finish(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    tick = _tick(data)
    for ptr, sel, rid in _selections(data):
        if sel.get("target") == "first" and int(sel.get("prefill_units", 1)) >= 1:
            # ignore the remaining prefill unit; slack moves with it, so only the finish breaks
            value = _num(float(sel["predicted_finish_ms"]) - tick)
            ops = (
                replace(f"{ptr}/predicted_finish_ms", value),
                replace(f"{ptr}/slack_ms", _num(float(sel["slack_ms"]) + tick)),
            )
            yield ops, f"{rid} at {sel['now_ms']} ms: predicted finish ignores the prefill unit"


def _target_flip(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, sel, rid in _selections(data):
        other = "next" if sel.get("target") == "first" else "first"
        yield (
            (replace(f"{ptr}/target", other),),
            f"{rid} at {sel['now_ms']} ms: clock target {other!r}",
        )


def _model_unknown(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    if isinstance(data.get("cost_model"), Mapping):
        yield (
            (replace("/cost_model/model_id", "unnamed_latency_model"),),
            "slack computed under an unnamed cost model",
        )


def _tpot_entries(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], int]]:
    for i, e in _ledger(data):
        if "tpot_ms" in e:
            yield pointer_of("clock_ledger", i, "tpot_ms"), e, len(e.get("outputs_ms") or [])


def _tpot_one(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for ptr, e, outputs in _tpot_entries(data):
        if outputs < 2:
            yield (replace(ptr, 0),), f"{e['request_id']}: one output reports TPOT 0 ms"


def _tpot_value(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    tick = _tick(data)
    for ptr, e, outputs in _tpot_entries(data):
        if outputs >= 2 and e["tpot_ms"] is not None:
            value = _num(float(e["tpot_ms"]) - tick)
            yield (replace(ptr, value),), f"{e['request_id']}: TPOT declared {value} ms"


# ------------------------------------------------------------------ replays and ledgers


def _hidden_online(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for section in SECTIONS:
        block = data.get(section)
        if isinstance(block, Mapping) and isinstance(block.get("request"), Mapping):
            truth = (block.get("fixture_only_hidden_truth") or {}).get("realized_output_tokens", 1)
            yield (
                (add(pointer_of(section, "request", "realized_output_tokens"), truth),),
                f"{section}: the online request carries its realized length",
            )


def _partition_open(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for section, label, expect in _expects(data):
        counts = expect.get("counts")
        if isinstance(counts, Mapping) and int(counts.get("slo_valid", 0)) >= 1:
            value = int(counts["slo_valid"]) - 1
            yield (
                (replace(pointer_of(section, "expect", label, "counts", "slo_valid"), value),),
                f"{section}/{label}: {value} SLO-valid leaves the outcome partition open",
            )


def _rates(data: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    for section, label, expect in _expects(data):
        for name, rate in sorted((expect.get("rates") or {}).items()):
            if isinstance(rate, Mapping):
                yield pointer_of(section, "expect", label, "rates", name), f"{label} {name}", rate


def _rate_unit(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    by_policy: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {}
    for ptr, what, rate in _rates(data):
        if rate.get("unit") in WRONG_UNIT:
            by_policy.setdefault(ptr.rsplit("/rates/", 1)[0], []).append((ptr, what, rate))
    for _, rates in sorted(by_policy.items()):
        ptr, what, rate = rng.choice(rates)  # one rate per policy: each run replays three times
        wrong = WRONG_UNIT[rate["unit"]]
        yield (replace(f"{ptr}/unit", wrong),), f"{what} declared in {wrong}"


def _rate_value(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rates = [(p, w, r) for p, w, r in _rates(data) if isinstance(r.get("value"), int | float)]
    if rates:
        ptr, what, rate = rng.choice(rates)
        value = round(float(rate["value"]) * 1.5, 6)
        yield (replace(f"{ptr}/value", value),), f"{what} declared {value}"


def _denominator(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for section, label, expect in _expects(data):
        counts = expect.get("counts") or {}
        names = [
            name
            for name, att in sorted((expect.get("attainment") or {}).items())
            if isinstance(att, Mapping) and "fraction" in att and name in DENOMINATOR_OF
        ]
        if not names:
            continue
        name = rng.choice(names)  # one fraction per policy
        num, _, den = str(expect["attainment"][name]["fraction"]).partition("/")
        right = counts.get(DENOMINATOR_OF[name])
        wrong = next(
            (counts[k] for k in ("completed", "admitted", "offered") if counts.get(k) != right),
            int(den) + 1,
        )
        ptr = pointer_of(section, "expect", label, "attainment", name, "fraction")
        yield (replace(ptr, f"{num}/{wrong}"),), f"{label} {name} divides by {wrong}"


def _expect_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for section, label, expect in _expects(data):
        if isinstance(expect.get("negative_slack_selections"), int):
            value = expect["negative_slack_selections"] + 1
            ptr = pointer_of(section, "expect", label, "negative_slack_selections")
            yield (replace(ptr, value),), f"{label}: {value} negative-slack selections declared"
        violations = expect.get("violations")
        if isinstance(violations, Mapping) and isinstance(violations.get("ttft"), int):
            value = violations["ttft"] + 1
            ptr = pointer_of(section, "expect", label, "violations", "ttft")
            yield (replace(ptr, value),), f"{label}: {value} TTFT misses declared"
    for section in SECTIONS:
        block = data.get(section)
        if isinstance(block, Mapping) and isinstance(block.get("same_request_goodput"), bool):
            flipped = not block["same_request_goodput"]
            yield (
                (replace(pointer_of(section, "same_request_goodput"), flipped),),
                f"{section}: same request goodput declared {flipped}",
            )


# ------------------------------------------------------------------------- tails


def _probes(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    section = data.get("tail_probe")
    probes: Sequence[Any] = section.get("probes") or [] if isinstance(section, Mapping) else []
    return [(i, p) for i, p in enumerate(probes) if isinstance(p, Mapping)]


def _sample_values(probe: Mapping[str, Any]) -> list[float]:
    return sorted({float(s["value_ms"]) for s in probe.get("samples") or []})


def _tail_value(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, probe in _probes(data):
        values = _sample_values(probe)
        for name, declared in sorted((probe.get("declared_ms") or {}).items()):
            if not isinstance(declared, int | float) or name == "mean":
                continue
            others = [v for v in values if v != float(declared)]
            if others:
                value = _num(rng.choice(others))
                ptr = pointer_of("tail_probe", "probes", i, "declared_ms", name)
                yield (replace(ptr, value),), f"{probe['label']}: {name} declared {value} ms"


def _small_sample(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, probe in _probes(data):
        values = _sample_values(probe)
        for name, declared in sorted((probe.get("declared_ms") or {}).items()):
            if isinstance(declared, str) and values:
                ptr = pointer_of("tail_probe", "probes", i, "declared_ms", name)
                yield (
                    (replace(ptr, _num(values[-1])),),
                    f"{probe['label']}: {name} reported below its sample gate",
                )


def _mean_only(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, probe in _probes(data):
        for j, claim in enumerate(probe.get("claims") or []):
            if isinstance(claim, Mapping) and claim.get("evidence") != "mean":
                ptr = pointer_of("tail_probe", "probes", i, "claims", j, "evidence")
                yield (
                    (replace(ptr, "mean"),),
                    f"{probe['label']}: {claim['metric']} rests on the mean",
                )


def _gate_flip(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, probe in _probes(data):
        for name, verdict in sorted((probe.get("expect_gates") or {}).items()):
            if isinstance(verdict, bool):
                ptr = pointer_of("tail_probe", "probes", i, "expect_gates", name)
                yield (
                    (replace(ptr, not verdict),),
                    f"{probe['label']}: {name} gate declared {not verdict}",
                )


# ------------------------------------------------------------------------- overload


def _overload(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    section = data.get("saturation")
    block = section.get("overload") if isinstance(section, Mapping) else None
    return block if isinstance(block, Mapping) else None


def _overload_arithmetic(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    block = _overload(data)
    for key in ("demand_rows", "capacity_rows", "unavoidable_excess_rows"):
        if block is not None and isinstance(block.get(key), int):
            value = block[key] + rng.choice((-1, 1)) * int(data["saturation"]["rows_per_tick"])
            yield (replace(f"/saturation/overload/{key}", value),), f"{key} declared {value}"


def _overload_claim(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    block = _overload(data)
    if block is not None and block.get("all_offered_work_can_complete") is False:
        yield (
            (replace("/saturation/overload/all_offered_work_can_complete", True),),
            "claims all offered work completes inside the overloaded window",
        )


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, record, pointer, changes, expect, gen)


_LEDGER = "SLO clock ledger"
_REPLAY = "SLO replay expectation"
_TAIL = "tail probe"

OPERATORS: tuple[Operator, ...] = (
    _op(
        "slo.clock.first-restart",
        _LEDGER,
        "/clock_ledger/*/deadlines_ms/first",
        "restart the first-token deadline at admission or resume",
        "SLO.CLOCK.FIRST_ORIGIN",
        _first_restart,
    ),
    _op(
        "slo.clock.next-origin",
        _LEDGER,
        "/clock_ledger/*/deadlines_ms/next/*",
        "measure a next-token deadline one tick after the previous emission's",
        "SLO.CLOCK.NEXT_ORIGIN",
        _next_origin,
    ),
    _op(
        "slo.clock.event-order",
        _LEDGER,
        "/clock_ledger/*/{outputs_ms,arrival_ms}",
        "stamp an output before the previous one, or admit before arrival",
        "SLO.CLOCK.EVENT_ORDER",
        _event_order,
    ),
    _op(
        "slo.headroom.drift",
        _LEDGER,
        "/clock_ledger/*/selections/*/headroom_ms",
        "declare headroom one tick off deadline - now",
        "SLO.HEADROOM.RECONCILE",
        _headroom,
    ),
    _op(
        "slo.slack.drift",
        _LEDGER,
        "/clock_ledger/*/selections/*/slack_ms",
        "declare slack one tick off deadline - predicted finish",
        "SLO.SLACK.RECONCILE",
        _slack,
    ),
    _op(
        "slo.slack.predicted-finish",
        _LEDGER,
        "/clock_ledger/*/selections/*/predicted_finish_ms",
        "predict a first-token finish that ignores the remaining prefill unit",
        "SLO.SLACK.RECONCILE",
        _predicted_finish,
    ),
    _op(
        "slo.slack.target-flip",
        _LEDGER,
        "/clock_ledger/*/selections/*/target",
        "use the first-token clock after an emission (or the next-token clock before one)",
        "SLO.SLACK.TARGET",
        _target_flip,
    ),
    _op(
        "slo.slack.model-unknown",
        "cost model",
        "/cost_model/model_id",
        "compute slack under an unnamed cost model",
        "SLO.SLACK.MODEL_UNKNOWN",
        _model_unknown,
    ),
    _op(
        "slo.tpot.one-output",
        _LEDGER,
        "/clock_ledger/*/tpot_ms",
        "report TPOT 0 ms for a one-output request (it is undefined)",
        "SLO.TPOT.ONE_OUTPUT",
        _tpot_one,
    ),
    _op(
        "slo.tpot.value",
        _LEDGER,
        "/clock_ledger/*/tpot_ms",
        "declare a TPOT one tick off (last - first) / (outputs - 1)",
        "SLO.TPOT.VALUE",
        _tpot_value,
    ),
    _op(
        "slo.leak.hidden-truth",
        "online request declaration",
        "/{burst,saturation}/request/realized_output_tokens",
        "put the realized output length into the online request declaration",
        "SLO.HIDDEN_TRUTH.ONLINE",
        _hidden_online,
    ),
    _op(
        "slo.partition.open",
        _REPLAY,
        "/{burst,saturation}/expect/*/counts/slo_valid",
        "declare one SLO-valid request fewer, so the outcome partition does not close",
        "SLO.PARTITION.NOT_CLOSED",
        _partition_open,
    ),
    _op(
        "slo.rate.unit",
        _REPLAY,
        "/{burst,saturation}/expect/*/rates/*/unit",
        "declare a request rate in tokens/s (or a token rate in requests/s)",
        "SLO.RATE.UNIT",
        _rate_unit,
    ),
    _op(
        "slo.rate.value",
        _REPLAY,
        "/{burst,saturation}/expect/*/rates/*/value",
        "declare a rate that is not count / window",
        "SLO.RATE.VALUE",
        _rate_value,
    ),
    _op(
        "slo.attainment.denominator",
        _REPLAY,
        "/{burst,saturation}/expect/*/attainment/*/fraction",
        "divide an attainment fraction by another outcome count",
        "SLO.ATTAINMENT.DENOMINATOR",
        _denominator,
    ),
    _op(
        "slo.expect.drift",
        _REPLAY,
        "/{burst,saturation}/{expect/*/negative_slack_selections,expect/*/violations/ttft,same_request_goodput}",
        "declare a replay outcome the replay does not give",
        "SLO.EXPECT.MISMATCH",
        _expect_drift,
    ),
    _op(
        "slo.tail.value",
        _TAIL,
        "/tail_probe/probes/*/declared_ms/*",
        "declare a percentile that is not the nearest-rank value",
        "SLO.TAIL.VALUE",
        _tail_value,
    ),
    _op(
        "slo.tail.small-sample",
        _TAIL,
        "/tail_probe/probes/*/declared_ms/*",
        "report a percentile below its sample gate",
        "SLO.TAIL.INSUFFICIENT_SAMPLE",
        _small_sample,
    ),
    _op(
        "slo.tail.mean-only",
        _TAIL,
        "/tail_probe/probes/*/claims/*/evidence",
        "rest a percentile claim on the mean",
        "SLO.TAIL.MEAN_ONLY",
        _mean_only,
    ),
    _op(
        "slo.tail.gate-flip",
        _TAIL,
        "/tail_probe/probes/*/expect_gates/*",
        "declare a tail gate verdict the samples contradict",
        "SLO.EXPECT.MISMATCH",
        _gate_flip,
    ),
    _op(
        "slo.overload.arithmetic",
        "finite-window overload",
        "/saturation/overload/{demand_rows,capacity_rows,unavoidable_excess_rows}",
        "move demand, capacity or excess by one tick's rows",
        "SLO.OVERLOAD.ARITHMETIC",
        _overload_arithmetic,
    ),
    _op(
        "slo.overload.claim",
        "finite-window overload",
        "/saturation/overload/all_offered_work_can_complete",
        "claim all offered work completes although demand exceeds capacity",
        "SLO.OVERLOAD.CLAIM",
        _overload_claim,
    ),
)
