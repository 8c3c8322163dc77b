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
from cbaudit.model import Finding, Location
from cbaudit.model.findings import Locator, pointer_join

MIB = 1 << 20


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


def run_sensitivity(data: Any, *, file: str, locate: Locator | None = None) -> SensitivityReport:
    """Check the fixture, derive the base ledger and every one-control case."""
    findings = validate(data, "sensitivity-fixture", file=file, locate=locate)
    if findings:
        return SensitivityReport(tuple(findings), {"valid": False})

    def add(code: str, message: str, pointer: str) -> None:
        loc = locate(pointer) if locate else Location(file=file, pointer=pointer)
        findings.append(Finding(code, message, location=loc))

    base = dict(data["controls"])
    hidden = list(data["hidden_controls"])
    online = list(data["online_projection"])
    axes: Mapping[str, str] = data["axes"]
    for j, name in enumerate(online):
        if name in hidden:
            add(
                "RESULTS.HIDDEN_TRUTH.LEAK",
                f"hidden control {name!r} is listed in the online projection",
                pointer_join("/online_projection", j),
            )
        elif name not in base:
            add(
                "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
                f"no control {name!r}",
                pointer_join("/online_projection", j),
            )
    for axis, control in axes.items():
        if control not in base:
            add(
                "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
                f"axis {axis}: no control {control!r}",
                pointer_join("/axes", axis),
            )
    bad = _invalid(base)
    for control, why in bad:
        add("RESULTS.SENSITIVITY.INVALID_CONTROL", why, pointer_join("/controls", control))
    if bad or findings:
        return SensitivityReport(tuple(findings), {"valid": False})
    online_base = projection(base, online)
    base_ledger = ledger(online_base)
    for key in sorted(set(base_ledger) | set(data["expected_base"])):
        want, got = data["expected_base"].get(key), base_ledger.get(key)
        if want != got:
            add(
                "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
                f"base ledger {key}: expected {want!r}, derived {got!r}",
                pointer_join("/expected_base", key),
            )
    base_digest = projection_digest(base, online)
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    for i, case in enumerate(data["cases"]):
        ptr = pointer_join("/cases", i)
        cid = str(case["id"])
        if cid in seen:
            add("RESULTS.REGISTRY.DUPLICATE_ID", f"case id {cid!r} appears twice", ptr)
        seen.add(cid)
        change: Mapping[str, Any] = case["change"]
        axis = str(case["axis"])
        if len(change) > 1:
            add(
                "RESULTS.SENSITIVITY.COMPOUND",
                f"case {cid} changes {len(change)} controls ({', '.join(sorted(change))});"
                " a one-control case changes exactly one",
                pointer_join(ptr, "change"),
            )
            continue
        if not change:
            add(
                "RESULTS.SENSITIVITY.NO_CHANGE",
                f"case {cid} changes nothing",
                pointer_join(ptr, "change"),
            )
            continue
        ((control, value),) = change.items()
        if control not in base:
            add(
                "RESULTS.SENSITIVITY.UNKNOWN_CONTROL",
                f"case {cid}: no control {control!r}",
                pointer_join(ptr, "change", control),
            )
            continue
        if axis not in axes:
            add(
                "RESULTS.SENSITIVITY.UNKNOWN_AXIS",
                f"case {cid}: no axis {axis!r}",
                pointer_join(ptr, "axis"),
            )
            continue
        if axes[axis] != control:
            add(
                "RESULTS.SENSITIVITY.AXIS_MISMATCH",
                f"case {cid}: axis {axis} varies {axes[axis]!r}, the case changes {control!r}",
                pointer_join(ptr, "axis"),
            )
            continue
        if base[control] == value:
            add(
                "RESULTS.SENSITIVITY.NO_CHANGE",
                f"case {cid}: {control} already is {value!r}",
                pointer_join(ptr, "change", control),
            )
            continue
        varied = {**base, control: value}
        if not is_valid({**data, "controls": varied}, "sensitivity-fixture"):
            add(
                "RESULTS.SENSITIVITY.INVALID_CONTROL",
                f"case {cid}: {control}={value!r} is not a valid value for that control",
                pointer_join(ptr, "change", control),
            )
            continue
        bad_case = _invalid(varied)
        for ctl, why in bad_case:
            add(
                "RESULTS.SENSITIVITY.INVALID_CONTROL",
                f"case {cid}: {why}",
                pointer_join(ptr, "change", ctl),
            )
        if bad_case:
            continue
        varied_ledger = ledger(projection(varied, online))
        changed = {k: v for k, v in varied_ledger.items() if base_ledger[k] != v}
        off_base, off_var = offline_ledger(base), offline_ledger(varied)
        offline_changed = {k: v for k, v in off_var.items() if off_base[k] != v}
        expect = dict(case["expect_changed"])
        is_hidden = control in hidden
        if is_hidden:
            if projection_digest(varied, online) != base_digest or changed:
                add(
                    "RESULTS.HIDDEN_TRUTH.LEAK",
                    f"case {cid}: changing hidden {control} changed the online projection",
                    pointer_join(ptr, "change", control),
                )
            if expect:
                add(
                    "RESULTS.HIDDEN_TRUTH.LEAK",
                    f"case {cid}: a hidden-truth case may not expect online changes"
                    f" ({sorted(expect)})",
                    pointer_join(ptr, "expect_changed"),
                )
        if expect != changed and not (is_hidden and expect):
            add(
                "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
                f"case {cid}: expected changes {_canonical(expect)}, derived {_canonical(changed)}",
                pointer_join(ptr, "expect_changed"),
            )
        rows.append(
            {
                "id": cid,
                "axis": axis,
                "control": control,
                "from": base[control],
                "to": value,
                "online_changed": changed,
                "offline_changed": offline_changed,
                "online_projection_unchanged": projection_digest(varied, online) == base_digest,
            }
        )
    report = {
        "valid": True,
        "evidence_class": data["evidence_class"],
        "base_ledger": base_ledger,
        "cases": rows,
        "case_count": len(data["cases"]),
        "axes_varied": len({str(c["axis"]) for c in data["cases"]}),
        "scalar_best_chunk": None,
        "note": "analytical consequences of one synthetic fixture; no latency or optimality claim",
    }
    return SensitivityReport(tuple(findings), report)
