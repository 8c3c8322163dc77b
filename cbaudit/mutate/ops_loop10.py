"""Loop 10 operators (article 0x0D): drift a source pin, overclaim a policy, forge a decision.

The `runtime-policy` fixture binds a pin manifest, snapshots and Loop 3 artifacts by sha256
and declares policies and their logical decisions. The operators break one of those bindings
(tag, commit, version, manifest, file and marker facts, snapshot and Loop 3 hashes, re-asserted
numbers), one policy declaration (exactness, evidence basis, tie-break, claim limits, duplicate
ids) or one expected decision (rows, accounting, missing declarations, differences, physical
fields). Each oracle run replays every policy on every snapshot twice, so the generators pick
one seeded edit where a fixture offers many.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from typing import Any

from cbaudit.mutate.operators import Edit, Operator, add, remove, replace
from cbaudit.mutate.patch import pointer_of

ORACLE = "runtime-policy"
TARGET = f"oracle:{ORACLE}"
LOOP = "10"


def _pin(data: Mapping[str, Any]) -> Mapping[str, Any]:
    value = data.get("source_pin")
    return value if isinstance(value, Mapping) else {}


def _flip_hex(value: Any, rng: random.Random) -> str:
    """A hex digest with one seeded digit changed."""
    text = str(value)
    k = rng.randrange(len(text)) if text else 0
    return text[:k] + ("0" if text[k : k + 1] != "0" else "f") + text[k + 1 :]


def _policies(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, p) for i, p in enumerate(data.get("policies") or []) if isinstance(p, Mapping)]


def _decisions(data: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    out = []
    for sid, row in sorted((data.get("expected_decisions") or {}).items()):
        if isinstance(row, Mapping):
            out += [(sid, pid, d) for pid, d in sorted(row.items()) if isinstance(d, Mapping)]
    return out


# ------------------------------------------------------------------------ the source pin


def _pin_field(key: str, forged: str) -> Any:
    def gen(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
        if key in _pin(data):
            value = _flip_hex(_pin(data)[key], rng) if forged == "hex" else forged
            yield (replace(pointer_of("source_pin", key), value),), f"source_pin {key} {value!r}"

    return gen


def _file_hash(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for path, sha in sorted((_pin(data).get("files") or {}).items()):
        ptr = pointer_of("source_pin", "files", path)
        yield (replace(ptr, _flip_hex(sha, rng)),), f"{path} bound to another sha256"


def _file_set(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    files = sorted(_pin(data).get("files") or {})
    if files:
        path = rng.choice(files)
        yield (remove(pointer_of("source_pin", "files", path)),), f"{path} dropped from the pin"


def _marker_count(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    count = _pin(data).get("marker_count")
    if isinstance(count, int):
        value = count + rng.choice((-1, 1))
        yield (replace("/source_pin/marker_count", value),), f"marker count declared {value}"


def _markers(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return [(j, m) for j, m in enumerate(_pin(data).get("markers") or []) if isinstance(m, Mapping)]


def _marker_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    markers = _markers(data)
    if markers:
        j, marker = rng.choice(markers)
        ptr = pointer_of("source_pin", "markers", j)
        yield (replace(f"{ptr}/line", int(marker["line"]) + 1),), f"{marker['id']} one line off"
        yield (replace(f"{ptr}/symbol", "Scheduler.moved"),), f"{marker['id']} in another symbol"


def _marker_unknown(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    markers = _markers(data)
    if markers:
        j, marker = rng.choice(markers)
        ptr = pointer_of("source_pin", "markers", j, "id")
        yield (replace(ptr, "M999"),), f"{marker['id']} renamed to a marker the manifest lacks"


def _marker_unbound(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    cited = {m for obs in data.get("observations") or [] for m in obs.get("markers") or []}
    candidates = [(j, m) for j, m in _markers(data) if m.get("id") in cited]
    if candidates:
        j, marker = rng.choice(candidates)
        ptr = pointer_of("source_pin", "markers", j)
        yield (remove(ptr),), f"{marker['id']} unbound while an observation rests on it"


# ------------------------------------------------------------------------ policy declarations


def _pick_policy(
    data: Mapping[str, Any], rng: random.Random
) -> tuple[int, Mapping[str, Any]] | None:
    policies = _policies(data)
    return rng.choice(policies) if policies else None


def _overclaim(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    picked = _pick_policy(data, rng)
    if picked is not None:
        i, pol = picked
        ptr = pointer_of("policies", i, "exact_runtime_reproduction")
        op = replace(ptr, True) if "exact_runtime_reproduction" in pol else add(ptr, True)
        yield (op,), f"{pol['id']} claims exact runtime reproduction"


def _exactness(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    declared = [(i, p) for i, p in _policies(data) if "exact_runtime_reproduction" in p]
    if declared:
        i, pol = rng.choice(declared)
        ptr = pointer_of("policies", i, "exact_runtime_reproduction")
        yield (remove(ptr),), f"{pol['id']} leaves exactness undeclared"


def _basis(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    picked = _pick_policy(data, rng)
    if picked is not None:
        i, pol = picked
        basis = pol.get("evidence_basis")
        ptr = pointer_of("policies", i, "evidence_basis")
        if isinstance(basis, Mapping) and isinstance(basis.get("observations"), list):
            yield (
                (add(f"{ptr}/observations/-", "runtime-in-general"),),
                f"{pol['id']} cites an unmade observation",
            )
        else:
            yield (
                (
                    replace(ptr, {"kind": "pinned_source", "observations": ["runtime-in-general"]})
                    if basis is not None
                    else add(
                        ptr, {"kind": "pinned_source", "observations": ["runtime-in-general"]}
                    ),
                ),
                f"{pol['id']} rests on an unmade observation",
            )


def _tie_break_total(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    picked = _pick_policy(data, rng)
    if (
        picked is not None
        and isinstance(picked[1].get("tie_break"), list)
        and picked[1]["tie_break"]
    ):
        i, pol = picked
        ptr = pointer_of("policies", i, "tie_break", len(pol["tie_break"]) - 1)
        yield (remove(ptr),), f"{pol['id']} tie-break no longer ends in request_generation"


def _tie_break_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    policies = _policies(data)
    for i, pol in policies:
        others = [p["tie_break"] for _, p in policies if p.get("tie_break") != pol.get("tie_break")]
        if others and isinstance(pol.get("tie_break"), list):
            value = list(rng.choice(others))
            yield (
                (replace(pointer_of("policies", i, "tie_break"), value),),
                f"{pol['id']} declares {value}",
            )
            return  # one policy: every run replays all of them


def _claim_limits(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    picked = _pick_policy(data, rng)
    if picked is not None and picked[1].get("claim_limits"):
        i, pol = picked
        k = rng.randrange(len(pol["claim_limits"]))
        ptr = pointer_of("policies", i, "claim_limits", k)
        yield (remove(ptr),), f"{pol['id']} no longer limits {pol['claim_limits'][k]}"


def _duplicate(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    picked = _pick_policy(data, rng)
    if picked is not None:
        yield (add("/policies/-", dict(picked[1])),), f"{picked[1]['id']} declared twice"


# ------------------------------------------------------------------------ scenarios and decisions


def _scenario_hash(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    scenarios = [
        (i, s) for i, s in enumerate(data.get("scenarios") or []) if isinstance(s, Mapping)
    ]
    if scenarios:
        i, scn = rng.choice(scenarios)
        ptr = pointer_of("scenarios", i, "sha256")
        yield (replace(ptr, _flip_hex(scn["sha256"], rng)),), f"{scn['id']} bound to a stale digest"


def _decision_drift(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    decisions = [d for d in _decisions(data) if isinstance(d[2].get("budget"), Mapping)]
    if decisions:
        sid, pid, dec = rng.choice(decisions)
        used = dec["budget"].get("tokens_used", 0)
        ptr = pointer_of("expected_decisions", sid, pid, "budget", "tokens_used")
        yield (replace(ptr, int(used) + 1),), f"{sid} / {pid}: one token more declared"
    rows = [d for d in _decisions(data) if d[2].get("rows")]
    if rows:
        sid, pid, dec = rng.choice(rows)
        ptr = pointer_of("expected_decisions", sid, pid, "rows")
        yield (replace(ptr, dec["rows"][1:]),), f"{sid} / {pid}: a scheduled row left out"


def _recompute_as_service(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for sid, pid, dec in _decisions(data):
        acc = dec.get("accounting")
        if isinstance(acc, Mapping) and int(acc.get("recompute_overhead_tokens", 0)) > 0:
            value = int(acc["semantic_service_tokens"]) + int(acc["recompute_overhead_tokens"])
            ptr = pointer_of(
                "expected_decisions", sid, pid, "accounting", "semantic_service_tokens"
            )
            yield (replace(ptr, value),), f"{sid} / {pid}: discarded rows counted as service"


def _expect_missing(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    decisions = _decisions(data)
    if decisions:
        sid, pid, _ = rng.choice(decisions)
        yield (remove(pointer_of("expected_decisions", sid, pid)),), f"{sid} / {pid} undeclared"


def _not_activated(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    same = []
    for sid, row in sorted((data.get("expected_decisions") or {}).items()):
        pids = sorted(row) if isinstance(row, Mapping) else []
        same += [(sid, a, b) for k, a in enumerate(pids) for b in pids[k + 1 :] if row[a] == row[b]]
    if same:
        sid, a, b = rng.choice(same)
        value = {"scenario": sid, "policies": [a, b], "why": "mutant: declared to separate"}
        yield (add("/differences/-", value),), f"{sid} declared to separate {a} from {b}"


def _physical(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rows = [d for d in _decisions(data) if d[2].get("rows")]
    if rows:
        sid, pid, _ = rng.choice(rows)
        ptr = pointer_of("expected_decisions", sid, pid, "rows", 0, "block_ids")
        yield (add(ptr, [rng.randrange(64)]),), f"{sid} / {pid}: a row carries block ids"


# ------------------------------------------------------------------------ Loop 3 reconciliation


def _loop3(data: Mapping[str, Any]) -> Mapping[str, Any]:
    value = data.get("loop3_reconciliation")
    return value if isinstance(value, Mapping) else {}


def _loop3_number(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    for i, report in enumerate(_loop3(data).get("reports") or []):
        numbers = [
            (p, v) for p, v in sorted((report.get("assert") or {}).items()) if isinstance(v, int)
        ]
        if numbers:
            pointer, value = rng.choice(numbers)
            ptr = pointer_of("loop3_reconciliation", "reports", i, "assert", pointer)
            yield (
                (replace(ptr, value + 1),),
                f"{report['path']}{pointer} re-asserted as {value + 1}",
            )


def _loop3_hash(data: Mapping[str, Any], rng: random.Random) -> Iterator[Edit]:
    rec = _loop3(data)
    if isinstance(rec.get("workload"), Mapping):
        value = _flip_hex(rec["workload"]["sha256"], rng)
        yield (
            (replace("/loop3_reconciliation/workload/sha256", value),),
            "Loop 3 workload digest stale",
        )
    reports = list(enumerate(rec.get("reports") or []))
    if reports:
        i, report = rng.choice(reports)
        ptr = pointer_of("loop3_reconciliation", "reports", i, "sha256")
        yield (replace(ptr, _flip_hex(report["sha256"], rng)),), f"{report['path']} digest stale"


def _op(name: str, record: str, pointer: str, changes: str, expect: str, gen: Any) -> Operator:
    return Operator(name, LOOP, TARGET, record, pointer, changes, expect, gen)


_PIN = "source pin binding"
_POLICY = "policy declaration"
_DECISION = "expected decision"

OPERATORS: tuple[Operator, ...] = (
    _op(
        "runtime.pin.tag",
        _PIN,
        "/source_pin/tag",
        "claim another release tag than the manifest pins",
        "RUNTIME.PIN.TAG",
        _pin_field("tag", "v0.22.0"),
    ),
    _op(
        "runtime.pin.commit",
        _PIN,
        "/source_pin/commit",
        "bind another commit than the manifest pins",
        "RUNTIME.PIN.COMMIT",
        _pin_field("commit", "hex"),
    ),
    _op(
        "runtime.pin.version",
        _PIN,
        "/source_pin/version",
        "claim another runtime version than the manifest pins",
        "RUNTIME.PIN.IDENTITY",
        _pin_field("version", "0.22.0"),
    ),
    _op(
        "runtime.pin.stale-manifest",
        _PIN,
        "/source_pin/manifest_sha256",
        "bind a manifest digest that is not the checked-in manifest's",
        "RUNTIME.PIN.STALE",
        _pin_field("manifest_sha256", "hex"),
    ),
    _op(
        "runtime.pin.file-hash",
        _PIN,
        "/source_pin/files/*",
        "bind a pinned source file to another sha256",
        "RUNTIME.PIN.FILE_HASH",
        _file_hash,
    ),
    _op(
        "runtime.pin.file-set",
        _PIN,
        "/source_pin/files/*",
        "drop a pinned source file from the binding",
        "RUNTIME.PIN.FILE_SET",
        _file_set,
    ),
    _op(
        "runtime.pin.marker-count",
        _PIN,
        "/source_pin/marker_count",
        "declare one marker more or fewer than the manifest has",
        "RUNTIME.PIN.MARKER_COUNT",
        _marker_count,
    ),
    _op(
        "runtime.pin.marker-drift",
        _PIN,
        "/source_pin/markers/*/{line,symbol}",
        "move a bound marker to another line or symbol",
        "RUNTIME.PIN.MARKER_DRIFT",
        _marker_drift,
    ),
    _op(
        "runtime.pin.marker-unknown",
        _PIN,
        "/source_pin/markers/*/id",
        "bind a marker id the manifest does not have",
        "RUNTIME.PIN.MARKER_UNKNOWN",
        _marker_unknown,
    ),
    _op(
        "runtime.pin.marker-unbound",
        _PIN,
        "/source_pin/markers/*",
        "unbind a marker an observation rests on",
        "RUNTIME.PIN.MARKER_UNDECLARED",
        _marker_unbound,
    ),
    _op(
        "runtime.policy.overclaim",
        _POLICY,
        "/policies/*/exact_runtime_reproduction",
        "claim exact runtime reproduction for a teaching policy",
        "RUNTIME.POLICY.OVERCLAIM",
        _overclaim,
    ),
    _op(
        "runtime.policy.exactness-undeclared",
        _POLICY,
        "/policies/*/exact_runtime_reproduction",
        "leave exact_runtime_reproduction undeclared",
        "RUNTIME.POLICY.EXACTNESS_UNDECLARED",
        _exactness,
    ),
    _op(
        "runtime.policy.evidence-basis",
        _POLICY,
        "/policies/*/evidence_basis/observations/-",
        "cite an observation the fixture does not make",
        "RUNTIME.POLICY.EVIDENCE_BASIS",
        _basis,
    ),
    _op(
        "runtime.policy.tie-break-total",
        _POLICY,
        "/policies/*/tie_break/-1",
        "end a tie-break before request_generation (not a total order)",
        "RUNTIME.POLICY.TIE_BREAK",
        _tie_break_total,
    ),
    _op(
        "runtime.policy.tie-break-drift",
        _POLICY,
        "/policies/*/tie_break",
        "declare another policy's tie-break",
        "RUNTIME.POLICY.TIE_BREAK_DRIFT",
        _tie_break_drift,
    ),
    _op(
        "runtime.policy.claim-limits",
        _POLICY,
        "/policies/*/claim_limits/*",
        "drop one claim limit",
        "RUNTIME.POLICY.CLAIM_LIMITS",
        _claim_limits,
    ),
    _op(
        "runtime.policy.duplicate",
        _POLICY,
        "/policies/-",
        "declare a policy id twice",
        "RUNTIME.POLICY.DUPLICATE",
        _duplicate,
    ),
    _op(
        "runtime.scenario.hash",
        "scenario binding",
        "/scenarios/*/sha256",
        "bind a snapshot by a stale digest",
        "RUNTIME.SCENARIO.HASH",
        _scenario_hash,
    ),
    _op(
        "runtime.decision.drift",
        _DECISION,
        "/expected_decisions/*/*/{budget/tokens_used,rows}",
        "declare a decision the policy does not make",
        "RUNTIME.DECISION.MISMATCH",
        _decision_drift,
    ),
    _op(
        "runtime.accounting.recompute-as-service",
        _DECISION,
        "/expected_decisions/*/*/accounting/semantic_service_tokens",
        "count discarded (recomputed) rows as semantic service",
        "RUNTIME.ACCOUNTING.MISMATCH",
        _recompute_as_service,
    ),
    _op(
        "runtime.expect.missing",
        _DECISION,
        "/expected_decisions/*/*",
        "leave one policy x scenario decision undeclared",
        "RUNTIME.EXPECT.MISSING",
        _expect_missing,
    ),
    _op(
        "runtime.difference.not-activated",
        "policy difference",
        "/differences/-",
        "declare that a scenario separates two policies that decide alike",
        "RUNTIME.DIFFERENCE.NOT_ACTIVATED",
        _not_activated,
    ),
    _op(
        "runtime.leak.physical-block",
        _DECISION,
        "/expected_decisions/*/*/rows/0/block_ids",
        "put physical block ids into an expected decision row",
        "RUNTIME.ROW.PHYSICAL_BLOCK",
        _physical,
    ),
    _op(
        "runtime.loop3.number",
        "Loop 3 reconciliation",
        "/loop3_reconciliation/reports/*/assert/*",
        "re-assert a Loop 3 number one off the checked-in report",
        "RUNTIME.LOOP3.NUMBER",
        _loop3_number,
    ),
    _op(
        "runtime.loop3.hash",
        "Loop 3 reconciliation",
        "/loop3_reconciliation/{workload,reports/*}/sha256",
        "bind a Loop 3 artifact by a stale digest",
        "RUNTIME.LOOP3.HASH",
        _loop3_hash,
    ),
)
