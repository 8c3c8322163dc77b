"""Loop 9 (article 0x0C): preemption intents, foreign receipts, suspension epochs, tickets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repo_paths import M52, declare, loop_checks, run_declared

from cbaudit.checks.bundle import DeclaredCheck
from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.contract.preemption import (
    CODES,
    Binding,
    Fallback,
    Lifecycle,
    Mode,
    Outcome,
    PreemptionIntent,
    Receipt,
    RequestSnapshot,
    Status,
    check_case,
    derive_resume,
    execute_rebuild,
)
from cbaudit.io.schemas import validate
from cbaudit.model import CheckStatus
from cbaudit.oracles.fixtures import load_loop_fixture as load_fixture
from cbaudit.oracles.preemption.kinds import PREEMPTION_RESUME
from cbaudit.oracles.preemption.oracle import evaluate

BUNDLE = M52
LOOP = BUNDLE / "loop9"


SPECS = loop_checks("loop9")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    fx = load_fixture(LOOP / "preemption_resume.yaml", display="loop9/x.yaml", root=BUNDLE)
    result = evaluate(fx)
    assert result.findings == ()
    return dict(result.metrics)


@pytest.mark.parametrize("spec", SPECS, ids=[s.check_id for s in SPECS])
def test_every_declared_check_passes(spec: DeclaredCheck) -> None:
    """Each Loop 9 check passes: the positive matches its report, each negative its codes."""
    results = run_declared(spec)
    assert [r.outcome for r in results] == [CheckStatus.PASSED], [
        f.render() for r in results for f in r.findings
    ]


def test_at_least_twenty_negatives_with_codes() -> None:
    """Loop 9 declares >= 20 negative fixtures, every one naming known codes."""
    negatives = [s for s in SPECS if "expect_code" in s.entry]
    assert len(negatives) >= 20
    for s in negatives:
        for code in s.entry["expect_code"]:
            assert code in CODES or code.startswith("SCHEMA."), code


def test_negatives_cover_every_code_family() -> None:
    """The negative fixtures exercise the article's rejection families."""
    codes = {c for s in SPECS for c in s.entry.get("expect_code", [])}
    for needed in (
        "PREEMPT.RECEIPT.WRONG_OWNER",  # wrong owners
        "SCHEMA.REQUIRED",  # missing binding fields
        "RESUME.FRONTIER.INVALID",  # invalid frontiers
        "RESUME.FALLBACK.INVALID",  # failed fallback
        "RESUME.FALLBACK.NO_HISTORY",
        "PREEMPT.CAPACITY.PENDING",  # pending-capacity publication
        "RESUME.TICKET.STALE",  # stale generation
        "RESUME.TICKET.STALE_RECEIPT",  # stale epoch
        "RESUME.REBUILD.SERVICE",  # recompute as fairness service
        "PREEMPT.CLAIM.INFLATED",  # production claim inflation
    ):
        assert needed in codes, needed


def test_article_summary(report: dict[str, Any]) -> None:
    """The report has 5 resumable cases, 3 stale receipts and 0 semantic rebuild service."""
    s = report["summary"]
    assert (s["cases"], s["resumable"], s["stale_receipts"]) == (8, 5, 3)
    assert s["semantic_service_during_rebuild"] == 0
    assert s["recompute_overhead_tokens"] == 0 + 6 + 3 + 5 + 0


def _interval(case: dict[str, Any], key: str) -> tuple[int, int]:
    iv = case["ticket"][key]
    return (iv["start"], iv["end"])


def test_article_intervals(report: dict[str, Any]) -> None:
    """Exact [6,6)->[6,7); full [0,6); partial [4,7)->[7,8); failed fallback [0,5)."""
    c = report["cases"]
    assert _interval(c["exact-preservation"], "rebuild_interval") == (6, 6)
    assert _interval(c["exact-preservation"], "next_ordinary_interval") == (6, 7)
    assert _interval(c["full-recompute"], "rebuild_interval") == (0, 6)
    assert c["full-recompute"]["rebuild"]["service_debit"] == 0
    assert _interval(c["partial-exact-prefix"], "rebuild_interval") == (4, 7)
    assert _interval(c["partial-exact-prefix"], "next_ordinary_interval") == (7, 8)
    assert _interval(c["failed-preservation"], "rebuild_interval") == (0, 5)


def test_article_no_ticket_cases(report: dict[str, Any]) -> None:
    """Cancellation stales every old receipt; in-flight promotion/release give no ticket."""
    c = report["cases"]
    cancel = c["cancellation-race"]
    assert cancel["outcome"] == "cancelled" and cancel["ticket"] is None
    assert sorted(r["receipt_id"] for r in cancel["stale_receipts"]) == [
        "pres-cancel",
        "rel-cancel",
    ]
    assert cancel["published_capacity_bytes"] == 0
    repeat = c["repeated-preemption"]
    assert [r["receipt_id"] for r in repeat["stale_receipts"]] == ["pres-repeat-10"]
    assert repeat["stale_receipts"][0]["differs_in"] == ["suspension_epoch"]
    assert "pres-repeat-10" not in repeat["ticket"]["matched_receipts"]
    assert c["promotion-in-flight"]["ticket"] is None
    assert c["promotion-in-flight"]["waiting_on"] == ["promotion not READY"]
    release = c["release-in-flight"]
    assert release["ticket"] is None and release["published_capacity_bytes"] == 0


def test_tickets_fit_their_schema(report: dict[str, Any]) -> None:
    """Every derived ResumeTicket is a valid `resume-ticket` record."""
    for case in report["cases"].values():
        if case["ticket"] is not None:
            assert validate(case["ticket"], "resume-ticket") == []


def test_report_is_deterministic() -> None:
    """The same fixture gives byte-identical JSON reports."""
    fx = load_fixture(LOOP / "preemption_resume.yaml", display="x.yaml", root=BUNDLE)
    a = json.dumps(dict(evaluate(fx).metrics), sort_keys=True)
    b = json.dumps(dict(evaluate(fx).metrics), sort_keys=True)
    assert a == b


# ---------------------------------------------------------------- unit-level derivation

DIGEST = "a" * 64


def _b(epoch: int = 1, gen: int = 0) -> Binding:
    return Binding("r", gen, DIGEST, epoch)


def _snap(target: int = 6, **kw: Any) -> RequestSnapshot:
    return RequestSnapshot(
        _b(kw.pop("epoch", 1)),
        kw.pop("lifecycle", Lifecycle.SUSPENDED_PRESERVED),
        4,
        target - 3,
        target,
        **kw,
    )


def _intent(mode: Mode = Mode.PRESERVE_EXACT, target: int = 6) -> PreemptionIntent:
    return PreemptionIntent("i", _b(), mode, Fallback.RECOMPUTE, target, "kv", "p", 1)


def _ready_set(b: Binding, ready_prefix: int | None) -> list[Receipt]:
    out = [
        Receipt("rel", "release", "M5.3", b, Status.READY, reclaimed_bytes=131072),
        Receipt("alloc", "allocation", "M5.3", b, Status.READY),
        Receipt("place", "placement", "M5.6", b, Status.READY),
    ]
    if ready_prefix is not None:
        out.append(
            Receipt(
                "pres",
                "preservation",
                "M5.5",
                b,
                Status.READY,
                exact_ready_prefix_tokens=ready_prefix,
            )
        )
    return out


@given(target=st.integers(4, 200), frac=st.floats(0, 1))
def test_rebuild_is_the_set_difference(target: int, frac: float) -> None:
    """For 0 <= T_ready <= T_target the ticket rebuilds [T_ready, T_target), publishing nothing."""
    t_ready = int(frac * target)
    d = derive_resume(_snap(target), _intent(target=target), _ready_set(_b(), t_ready))
    assert d.outcome is Outcome.RESUMABLE and d.ticket is not None
    assert d.ticket.rebuild == (t_ready, target)
    assert d.ticket.next_ordinary == (target, target + 1)
    effect = execute_rebuild(d.ticket)
    assert (effect.output_events, effect.semantic_frontier_delta, effect.service_debit) == (0, 0, 0)
    assert effect.recompute_overhead_tokens == target - t_ready


def test_capacity_mismatch_code() -> None:
    """Declaring other bytes than the READY release reclaimed is PREEMPT.CAPACITY.MISMATCH."""
    d = derive_resume(_snap(), _intent(), _ready_set(_b(), 6))
    assert d.ticket is not None
    declared = {
        "outcome": "resumable",
        "stale_receipts": [],
        "published_capacity_bytes": 1,
        "ticket": d.ticket.to_json(),
    }
    assert [i.code for i in check_case(d, declared, pointer="")] == ["PREEMPT.CAPACITY.MISMATCH"]


def test_ticket_binding_and_receipts_codes() -> None:
    """A ticket naming another epoch or other receipts gives TICKET.BINDING / TICKET.RECEIPTS."""
    d = derive_resume(_snap(), _intent(), _ready_set(_b(), 6))
    assert d.ticket is not None
    ticket = d.ticket.to_json()
    ticket["binding"]["suspension_epoch"] = 2
    ticket["matched_receipts"] = ["rel"]
    declared = {
        "outcome": "resumable",
        "stale_receipts": [],
        "published_capacity_bytes": 131072,
        "ticket": ticket,
    }
    codes = sorted(i.code for i in check_case(d, declared, pointer=""))
    assert codes == ["RESUME.TICKET.BINDING", "RESUME.TICKET.RECEIPTS"]


def test_outcome_mismatch_code() -> None:
    """Declaring `aborted` for a pending case is RESUME.OUTCOME.MISMATCH."""
    receipts = _ready_set(_b(), None)[1:]  # no release
    d = derive_resume(_snap(), _intent(Mode.RECOMPUTE), receipts)
    assert d.outcome is Outcome.PENDING
    declared = {"outcome": "aborted", "stale_receipts": [], "published_capacity_bytes": 0}
    assert [i.code for i in check_case(d, declared, pointer="")] == ["RESUME.OUTCOME.MISMATCH"]


def test_abort_intent_and_remain_suspended() -> None:
    """ABORT intents abort; a failed preservation with REMAIN_SUSPENDED stays suspended."""
    d = derive_resume(_snap(), _intent(Mode.ABORT), _ready_set(_b(), 6))
    assert d.outcome is Outcome.ABORTED and d.ticket is None
    intent = PreemptionIntent(
        "i", _b(), Mode.PRESERVE_EXACT, Fallback.REMAIN_SUSPENDED, 6, "kv", "p", 1
    )
    receipts = [
        *_ready_set(_b(), None),
        Receipt("pres", "preservation", "M5.5", _b(), Status.FAILED),
    ]
    assert derive_resume(_snap(), intent, receipts).outcome is Outcome.SUSPENDED


def test_wrong_owner_receipt_is_ignored() -> None:
    """A placement fact from M5.3 does not count: the case stays pending."""
    receipts = _ready_set(_b(), 6)
    receipts[2] = Receipt("place", "placement", "M5.3", _b(), Status.READY)
    d = derive_resume(_snap(), _intent(), receipts)
    assert d.outcome is Outcome.PENDING and d.wrong_owner == ("place",)
    assert [i.code for i in d.issues] == ["PREEMPT.RECEIPT.WRONG_OWNER"]


def test_bad_fixture_is_a_located_input_error(tmp_path: Path) -> None:
    """A fixture missing `cases` becomes an ERROR result located at the missing member."""
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop/bad.yaml").write_text("schema_version: 1\nfixture: x\nclaim: {}\n")
    ctx = GateContext(
        base_dir=tmp_path / "loop",
        manifest="loop/checks.yaml",
        pointer="/checks/0",
        bundle_root=tmp_path,
    )
    with pytest.raises(Exception) as info:
        run_entry(PREEMPTION_RESUME, {"id": "t", "fixture": "bad.yaml"}, ctx)
    findings = info.value.findings  # type: ignore[attr-defined]
    assert {f.code for f in findings} == {"SCHEMA.REQUIRED"}
    assert all(f.location.file == "loop/bad.yaml" for f in findings)


def test_gate_turns_bad_fixture_into_exit_2(tmp_path: Path) -> None:
    """Through the gate runner an unusable fixture is an ERROR result, never a traceback."""
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop/bad.yaml").write_text("cases: [unclosed\n")
    spec = {"id": "t", "kind": "preemption_resume", "fixture": "bad.yaml"}
    cs = declare(spec, tmp_path / "loop", tmp_path, "loop/c.yaml")
    [result] = run_declared(cs)
    assert result.outcome is CheckStatus.ERROR
    assert result.findings and result.findings[0].location.file is not None
