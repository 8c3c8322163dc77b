"""Loop 5 operators (article 0x06): leak hidden truth, forge forecasts, drift expectations."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, remove, replace

ORACLE = "admission-uncertainty"
TARGET = f"oracle:{ORACLE}"
LOOP = "5"


def _requests(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return list(enumerate(data.get("requests") or []))


def _leak_hidden(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    truth = ((data.get("fixture_only_hidden_truth") or {}).get("realized_output_tokens")) or {}
    for i, req in _requests(data):
        value = truth.get(req.get("request_id"), 1)
        yield (
            (add(f"/requests/{i}/realized_output_tokens", value),),
            f"{req.get('request_id')} carries its realized length",
        )


def _physical(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, req in _requests(data):
        yield (
            (add(f"/requests/{i}/physical_block_ids", [rng.randrange(64)]),),
            f"{req.get('request_id')} carries physical blocks",
        )
    if isinstance(data.get("ceiling"), Mapping):
        yield (add("/ceiling/block_table", {"A": [1]}),), "the ceiling carries a block table"


def _forecast_above_max(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, req in _requests(data):
        forecast = req.get("forecast") or {}
        for kind in ("point", "quantile"):
            if kind in forecast:
                value = req["max_output_tokens"] + 1
                ops = (replace(f"/requests/{i}/forecast/{kind}", value),)
                yield ops, f"{req['request_id']} {kind} forecast {value} > max"


def _forecast_order(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, req in _requests(data):
        forecast = req.get("forecast") or {}
        if (
            "point" in forecast
            and "quantile" in forecast
            and forecast["quantile"] + 1 <= req["max_output_tokens"]
        ):
            value = forecast["quantile"] + 1
            yield (
                (replace(f"/requests/{i}/forecast/point", value),),
                f"{req['request_id']} point {value} > quantile",
            )


def _forecast_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    kinds = {p.get("forecast") for p in data.get("policies") or []}
    for i, req in _requests(data):
        for kind in ("point", "quantile"):
            if kind in kinds and kind in (req.get("forecast") or {}):
                yield (
                    (remove(f"/requests/{i}/forecast/{kind}"),),
                    f"{req['request_id']} loses its {kind} forecast",
                )


def _unlabel_oracle(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, pol in enumerate(data.get("policies") or []):
        if pol.get("oracle") is True:
            yield (
                (remove(f"/policies/{i}/oracle"),),
                f"{pol['policy_id']} reads hidden truth unlabelled",
            )


def _label_online(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, pol in enumerate(data.get("policies") or []):
        if not pol.get("oracle"):
            yield (
                (add(f"/policies/{i}/oracle", True),),
                f"online {pol['policy_id']} labelled oracle",
            )


def _expect_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for policy, block in sorted((data.get("expect") or {}).items()):
        if not isinstance(block, Mapping):
            continue
        for key, value in sorted(block.items()):
            if isinstance(value, int) and not isinstance(value, bool):
                ops = (replace(f"/expect/{policy}/{key}", value + 1),)
                yield ops, f"{policy}.{key} declared {value + 1}"


def _hidden_above_max(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    truth = ((data.get("fixture_only_hidden_truth") or {}).get("realized_output_tokens")) or {}
    for _, req in _requests(data):
        rid = req.get("request_id")
        if rid in truth:
            value = req["max_output_tokens"] + 1
            path = f"/fixture_only_hidden_truth/realized_output_tokens/{rid}"
            yield (replace(path, value),), f"{rid} realizes {value} > max"


def _op(name: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, "admission fixture", pointer, changes, expect, gen)


OPERATORS: tuple[Operator, ...] = (
    _op(
        "admission.leak.hidden-truth",
        "/requests/*/realized_output_tokens",
        "show a request's realized length to online policies",
        "ADMISSION.HIDDEN_TRUTH.LEAK",
        _leak_hidden,
    ),
    _op(
        "admission.leak.physical-block",
        "/requests/*/physical_block_ids",
        "add physical allocator fields to the logical fixture",
        "ADMISSION.PHYSICAL.FIELD",
        _physical,
    ),
    _op(
        "admission.forecast.above-max",
        "/requests/*/forecast/{point,quantile}",
        "forecast more output than max_output_tokens",
        "ADMISSION.FORECAST.ABOVE_MAX",
        _forecast_above_max,
    ),
    _op(
        "admission.forecast.order",
        "/requests/*/forecast/point",
        "make a point forecast exceed its quantile",
        "ADMISSION.FORECAST.ORDER",
        _forecast_order,
    ),
    _op(
        "admission.forecast.missing",
        "/requests/*/forecast/*",
        "drop a forecast a policy needs",
        "ADMISSION.FORECAST.MISSING",
        _forecast_missing,
    ),
    _op(
        "admission.oracle.unlabelled",
        "/policies/*/oracle",
        "remove the oracle label of a hindsight policy",
        "ADMISSION.ORACLE.UNLABELLED",
        _unlabel_oracle,
    ),
    _op(
        "admission.oracle.label-without-read",
        "/policies/*/oracle",
        "label an online policy as an oracle",
        "ADMISSION.ORACLE.LABEL_WITHOUT_READ",
        _label_online,
    ),
    _op(
        "admission.expect.drift",
        "/expect/*/*",
        "drift a declared integer expectation by one",
        "ADMISSION.EXPECT.MISMATCH",
        _expect_drift,
    ),
    _op(
        "admission.hidden.above-max",
        "/fixture_only_hidden_truth/realized_output_tokens/*",
        "realize more output than max_output_tokens",
        "ADMISSION.HIDDEN_TRUTH.RANGE",
        _hidden_above_max,
    ),
)
