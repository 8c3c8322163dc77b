"""One-control sensitivity on the article's shared analytical fixture (0x0E, F68-F72).

This is derived arithmetic on a synthetic fixture, not a serving benchmark: it varies exactly
one declared control per case and reports which local ledger entries change. The ledger:

    chunks             M = ceil(S / C)
    causal_pairs       P = S (S + 1) / 2 (checked against the per-chunk telescoping sum)
    history_rows       R_hist = sum of chunk starts s_m
    history_bytes      R_hist * logical K/V row bytes  (a proxy, not measured HBM traffic)
    piggyback_room     [B_tok - min(C, S)]_+
    piggyback_decodes  min(D, [B_tok - min(C, S)]_+, [B_seq - 1]_+)
    reservation_intents floor((H - R_live) / r_hat)  (intents, not physical admissions)
    aging_crossover_tick first t with p_low - floor(t / q_age) <= p_high
    offered_total, offered_share_a   the offered client mix
    uncached_rows      S - H_hit
    eligible           foreign readiness (the scheduler cannot repair a foreign fact)

Hidden controls (realized output lengths) are stripped by the online projection; a case on a
hidden axis must leave the online projection byte-identical (a metamorphic check).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from cbaudit.io.schemas import is_valid, validate
from cbaudit.model import Finding, FindingSink
from cbaudit.model.findings import Locator, plain_locator, pointer_join

MIB = 1 << 20
#: The controls `ledger` reads: the online projection must list each (a policy sees them).
LEDGER_CONTROLS = (
    "prompt_tokens",
    "chunk_tokens",
    "ready_decodes",
    "token_budget",
    "sequence_budget",
    "kv_row_bytes",
    "reserved_rows",
    "reservation_ceiling_rows",
    "forecast_rows_per_request",
    "priority_low",
    "priority_high",
    "aging_quantum",
    "client_a_offered",
    "client_b_offered",
    "prefix_hit_tokens",
    "foreign_ready",
)


@dataclass(frozen=True)
class SensitivityReport:
    """Findings plus the JSON-ready ledger report."""

    findings: tuple[Finding, ...]
    report: Mapping[str, Any]


def chunk_starts(prompt: int, chunk: int) -> list[int]:
    """Starts s_m of the equal-chunk partition of [0, S) (the last chunk may be shorter)."""
    return list(range(0, prompt, chunk))


def ledger(c: Mapping[str, Any]) -> dict[str, Any]:
    """The local ledger of one online control set (see the module docstring)."""
    s, ck = int(c["prompt_tokens"]), int(c["chunk_tokens"])
    starts = chunk_starts(s, ck)
    ends = [*starts[1:], s]
    telescoped = sum(
        (e - st) * st + (e - st) * (e - st + 1) // 2 for st, e in zip(starts, ends, strict=True)
    )
    pairs = s * (s + 1) // 2
    if telescoped != pairs:  # F45/F46: a partition that loses a causal pair is a defect here
        raise ArithmeticError(f"chunk pairs {telescoped} != S(S+1)/2 = {pairs}")
    hist = sum(starts)
    room = max(int(c["token_budget"]) - min(ck, s), 0)
    low, high, quantum = int(c["priority_low"]), int(c["priority_high"]), int(c["aging_quantum"])
    a_off, b_off = int(c["client_a_offered"]), int(c["client_b_offered"])
    total = a_off + b_off
    return {
        "chunks": math.ceil(s / ck),
        "causal_pairs": pairs,
        "history_rows": hist,
        "history_bytes": hist * int(c["kv_row_bytes"]),
        "history_mib": str(Fraction(hist * int(c["kv_row_bytes"]), MIB)),
        "piggyback_room": room,
        "piggyback_decodes": min(
            int(c["ready_decodes"]), room, max(int(c["sequence_budget"]) - 1, 0)
        ),
        "reservation_intents": (int(c["reservation_ceiling_rows"]) - int(c["reserved_rows"]))
        // int(c["forecast_rows_per_request"]),
        "aging_crossover_tick": quantum * (low - high) if low > high else 0,
        "offered_total": total,
        "offered_share_a": str(Fraction(a_off, total)) if total else "undefined",
        "uncached_rows": s - int(c["prefix_hit_tokens"]),
        "eligible": bool(c["foreign_ready"]),
    }


def offline_ledger(c: Mapping[str, Any]) -> dict[str, Any]:
    """What only the offline evaluator may read: the realized outputs."""
    lengths = c.get("hidden_output_lengths") or []
    return {"realized_output_total": sum(int(x) for x in lengths)}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def projection(controls: Mapping[str, Any], online: list[str]) -> dict[str, Any]:
    """The online projection: only the controls a policy may see."""
    return {k: controls[k] for k in online if k in controls}


def projection_digest(controls: Mapping[str, Any], online: list[str]) -> str:
    return hashlib.sha256(_canonical(projection(controls, online)).encode()).hexdigest()


def _invalid(c: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Controls that make the ledger meaningless: (control, reason)."""
    out: list[tuple[str, str]] = []
    if int(c["chunk_tokens"]) < 1:
        out.append(("chunk_tokens", "chunk size must be >= 1"))
    if int(c["prompt_tokens"]) < 1:
        out.append(("prompt_tokens", "prompt length must be >= 1"))
    if int(c["forecast_rows_per_request"]) < 1:
        out.append(("forecast_rows_per_request", "forecast must be >= 1 row"))
    if int(c["aging_quantum"]) < 1:
        out.append(("aging_quantum", "aging quantum must be >= 1"))
    if int(c["reserved_rows"]) > int(c["reservation_ceiling_rows"]):
        out.append(("reserved_rows", "reserved rows exceed the ceiling"))
    if not 0 <= int(c["prefix_hit_tokens"]) <= int(c["prompt_tokens"]):
        out.append(("prefix_hit_tokens", "prefix hit must lie in [0, S]"))
    return out


@dataclass(frozen=True)
class _Fixture:
    """A fixture whose declarations passed: its controls, and the base it varies one at a time."""

    data: Mapping[str, Any]
    base: dict[str, Any]
    hidden: list[str]
    online: list[str]
    axes: Mapping[str, str]
    base_ledger: dict[str, Any]
    base_digest: str

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> _Fixture:
        base, online = dict(data["controls"]), list(data["online_projection"])
        return cls(
            data=data,
            base=base,
            hidden=list(data["hidden_controls"]),
            online=online,
            axes=data["axes"],
            base_ledger=ledger(projection(base, online)),
            base_digest=projection_digest(base, online),
        )


@dataclass(frozen=True)
class _Case:
    """One case as the steps read it."""

    id: str
    pointer: str
    axis: str
    change: Mapping[str, Any]
    expect: dict[str, Any]

    @classmethod
    def of(cls, i: int, raw: Mapping[str, Any]) -> _Case:
        return cls(
            id=str(raw["id"]),
            pointer=pointer_join("/cases", i),
            axis=str(raw["axis"]),
            change=raw["change"],
            expect=dict(raw["expect_changed"]),
        )


def run_sensitivity(data: Any, *, file: str, locate: Locator | None = None) -> SensitivityReport:
    """Check the fixture, derive the base ledger and every one-control case."""
    findings = validate(data, "sensitivity-fixture", file=file, locate=locate)
    if findings:
        return SensitivityReport(tuple(findings), {"valid": False})
    sink = FindingSink(locate or plain_locator(file))
    _check_declarations(data, sink)
    if sink.findings:
        return SensitivityReport(tuple(sink.findings), {"valid": False})
    fx = _Fixture.of(data)
    _check_base_expectation(data["expected_base"], fx.base_ledger, sink)
    rows = _case_rows(fx, sink)
    return SensitivityReport(tuple(sink.findings), _report(data, fx.base_ledger, rows))


def _check_declarations(data: Mapping[str, Any], sink: FindingSink) -> None:
    """The online projection names visible controls only, every axis names a control, and the
    base controls make the ledger meaningful."""
    controls, hidden = data["controls"], data["hidden_controls"]
    for j, name in enumerate(data["online_projection"]):
        if name in hidden:
            sink.add(
                "RESULTS.HIDDEN_TRUTH.LEAK",
                f"hidden control {name!r} is listed in the online projection",
                pointer_join("/online_projection", j),
            )
        elif name not in controls:
            sink.add(
                "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
                f"no control {name!r}",
                pointer_join("/online_projection", j),
            )
    listed = set(data["online_projection"])
    for name in LEDGER_CONTROLS:
        if name in controls and name not in listed and name not in hidden:
            sink.add(
                "RESULTS.SENSITIVITY.PROJECTION_INCOMPLETE",
                f"the ledger reads control {name!r}, which the online projection does not list",
                "/online_projection",
            )
    for axis, control in data["axes"].items():
        if control not in controls:
            sink.add(
                "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
                f"axis {axis}: no control {control!r}",
                pointer_join("/axes", axis),
            )
    for control, why in _invalid(controls):
        sink.add("RESULTS.SENSITIVITY.INVALID_CONTROL", why, pointer_join("/controls", control))


def _check_base_expectation(
    expected: Mapping[str, Any], derived: Mapping[str, Any], sink: FindingSink
) -> None:
    """The fixture expects exactly the base ledger that is derived."""
    for key in sorted(set(derived) | set(expected)):
        want, got = expected.get(key), derived.get(key)
        if want != got:
            sink.add(
                "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
                f"base ledger {key}: expected {want!r}, derived {got!r}",
                pointer_join("/expected_base", key),
            )


def _case_rows(fx: _Fixture, sink: FindingSink) -> list[dict[str, Any]]:
    """One report row per usable case; an unusable case is a finding instead."""
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for i, raw in enumerate(fx.data["cases"]):
        case = _Case.of(i, raw)
        if case.id in seen:
            sink.add(
                "RESULTS.REGISTRY.DUPLICATE_ID", f"case id {case.id!r} appears twice", case.pointer
            )
        seen.add(case.id)
        control = _one_control(fx, case, sink)
        if control is None:
            continue
        varied = _varied_controls(fx, case, control, sink)
        if varied is not None:
            rows.append(_case_row(fx, case, control, varied, sink))
    return rows


def _one_control(fx: _Fixture, case: _Case, sink: FindingSink) -> str | None:
    """The control a case changes, or None (with a finding) unless it changes exactly one known
    control, the one its axis varies, to a new value."""
    change, cid, ptr = case.change, case.id, case.pointer
    if len(change) > 1:
        sink.add(
            "RESULTS.SENSITIVITY.COMPOUND",
            f"case {cid} changes {len(change)} controls ({', '.join(sorted(change))});"
            " a one-control case changes exactly one",
            pointer_join(ptr, "change"),
        )
        return None
    if not change:
        sink.add(
            "RESULTS.SENSITIVITY.NO_CHANGE",
            f"case {cid} changes nothing",
            pointer_join(ptr, "change"),
        )
        return None
    ((control, value),) = change.items()
    if control not in fx.base:
        sink.add(
            "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
            f"case {cid}: no control {control!r}",
            pointer_join(ptr, "change", control),
        )
        return None
    if case.axis not in fx.axes:
        sink.add(
            "RESULTS.SENSITIVITY.UNKNOWN_AXIS",
            f"case {cid}: no axis {case.axis!r}",
            pointer_join(ptr, "axis"),
        )
        return None
    if fx.axes[case.axis] != control:
        sink.add(
            "RESULTS.SENSITIVITY.AXIS_MISMATCH",
            f"case {cid}: axis {case.axis} varies {fx.axes[case.axis]!r}, the case changes"
            f" {control!r}",
            pointer_join(ptr, "axis"),
        )
        return None
    if fx.base[control] == value:
        sink.add(
            "RESULTS.SENSITIVITY.NO_CHANGE",
            f"case {cid}: {control} already is {value!r}",
            pointer_join(ptr, "change", control),
        )
        return None
    return control


def _varied_controls(
    fx: _Fixture, case: _Case, control: str, sink: FindingSink
) -> dict[str, Any] | None:
    """The base controls with the case's change applied, or None (with findings) when the new
    value is not valid for the control or makes the ledger meaningless."""
    value = case.change[control]
    varied = {**fx.base, control: value}
    if not is_valid({**fx.data, "controls": varied}, "sensitivity-fixture"):
        sink.add(
            "RESULTS.SENSITIVITY.INVALID_CONTROL",
            f"case {case.id}: {control}={value!r} is not a valid value for that control",
            pointer_join(case.pointer, "change", control),
        )
        return None
    bad = _invalid(varied)
    for ctl, why in bad:
        sink.add(
            "RESULTS.SENSITIVITY.INVALID_CONTROL",
            f"case {case.id}: {why}",
            pointer_join(case.pointer, "change", ctl),
        )
    return None if bad else varied


def _case_row(
    fx: _Fixture, case: _Case, control: str, varied: Mapping[str, Any], sink: FindingSink
) -> dict[str, Any]:
    """Derive a case's ledger changes, check them against what it expects, and report them."""
    changed = _changed(fx.base_ledger, ledger(projection(varied, fx.online)))
    unchanged = projection_digest(varied, fx.online) == fx.base_digest
    is_hidden = control in fx.hidden
    if is_hidden:
        _check_hidden_case(case, control, unchanged and not changed, sink)
    if case.expect != changed and not (is_hidden and case.expect):
        sink.add(
            "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
            f"case {case.id}: expected changes {_canonical(case.expect)},"
            f" derived {_canonical(changed)}",
            pointer_join(case.pointer, "expect_changed"),
        )
    return {
        "id": case.id,
        "axis": case.axis,
        "control": control,
        "from": fx.base[control],
        "to": varied[control],
        "online_changed": changed,
        "offline_changed": _changed(offline_ledger(fx.base), offline_ledger(varied)),
        "online_projection_unchanged": unchanged,
    }


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of `after` whose values differ from `before`'s."""
    return {k: v for k, v in after.items() if before[k] != v}


def _check_hidden_case(case: _Case, control: str, online_same: bool, sink: FindingSink) -> None:
    """A case on a hidden control leaves the online view as it was and expects no online change."""
    if not online_same:
        sink.add(
            "RESULTS.HIDDEN_TRUTH.LEAK",
            f"case {case.id}: changing hidden {control} changed the online projection",
            pointer_join(case.pointer, "change", control),
        )
    if case.expect:
        sink.add(
            "RESULTS.HIDDEN_TRUTH.LEAK",
            f"case {case.id}: a hidden-truth case may not expect online changes"
            f" ({sorted(case.expect)})",
            pointer_join(case.pointer, "expect_changed"),
        )


def _report(
    data: Mapping[str, Any], base_ledger: dict[str, Any], rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """The JSON-ready report of a fixture whose declarations passed."""
    return {
        "valid": True,
        "evidence_class": data["evidence_class"],
        "base_ledger": base_ledger,
        "cases": rows,
        "case_count": len(data["cases"]),
        "axes_varied": len({str(c["axis"]) for c in data["cases"]}),
        "scalar_best_chunk": None,
        "note": "analytical consequences of one synthetic fixture; no latency or optimality claim",
    }
