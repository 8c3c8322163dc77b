"""The gate: discovery, includes, bindings, expected outputs, verdicts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from gate_test_kinds import ALL

from cbaudit.gate.runner import run_gate
from cbaudit.model import CheckStatus, ExitCode


@pytest.fixture(autouse=True)
def _test_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cbaudit.kinds.KINDS", ALL)


def _bundle(root: Path, checks: str, include: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    inc = list(include or {})
    (root / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: demo\ntitle: Demo\n"
        f"include: {json.dumps(inc)}\nchecks:\n{checks}"
    )
    for rel, text in (include or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _codes(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.code for f in report.findings}


def test_passing_bundle_exit_0(tmp_path: Path) -> None:
    """A bundle whose checks pass gives exit 0 and a claims table."""
    _bundle(tmp_path / "b", "  - {id: one, kind: echo, claim: 'x holds'}\n")
    report = run_gate([tmp_path], jobs=1)
    assert report.exit_code is ExitCode.OK
    assert report.summary["claims"][0]["claim"] == "x holds"
    assert report.results[0].subject == "demo:one"


def test_include_and_failure(tmp_path: Path) -> None:
    """Checks in included files run; a failing check gives exit 1 with its code."""
    _bundle(
        tmp_path / "b",
        "  []\n",
        {"loop/checks.yaml": "checks:\n  - {id: f, kind: echo, fail_code: LOOP.X.WRONG}\n"},
    )
    report = run_gate([tmp_path / "b"], jobs=1)
    assert report.exit_code is ExitCode.FINDINGS
    assert _codes(report) == {"LOOP.X.WRONG"}


def test_duplicate_ids_are_unusable(tmp_path: Path, cli) -> None:
    """Two checks with one id make the bundle unusable (exit 2, GATE.CHECK.DUPLICATE_ID)."""
    _bundle(tmp_path / "b", "  - {id: a, kind: echo}\n  - {id: a, kind: echo}\n")
    r = cli("gate", tmp_path)
    assert r.code == 2
    assert "GATE.CHECK.DUPLICATE_ID" in r.err


def test_unknown_kind_and_crash_are_errors(tmp_path: Path) -> None:
    """Unknown kinds and crashing checks are errors with their codes, never passes."""
    _bundle(tmp_path / "b", "  - {id: u, kind: nope}\n  - {id: c, kind: crash}\n")
    report = run_gate([tmp_path], jobs=1)
    assert report.exit_code is ExitCode.UNUSABLE
    assert _codes(report) == {"GATE.CHECK.UNKNOWN_KIND", "GATE.CHECK.CRASHED"}


def test_sha256_binding(tmp_path: Path) -> None:
    """A consumed artifact whose bytes changed is GATE.BINDING.SHA256_MISMATCH."""
    root = tmp_path / "b"
    root.mkdir()
    (root / "art.json").write_text("{}")
    good = hashlib.sha256(b"{}").hexdigest()
    _bundle(root, f"  - {{id: a, kind: echo, consumes: [{{path: art.json, sha256: {good}}}]}}\n")
    assert run_gate([root], jobs=1).exit_code is ExitCode.OK
    (root / "art.json").write_text("{ }")
    report = run_gate([root], jobs=1)
    assert _codes(report) == {"GATE.BINDING.SHA256_MISMATCH"}


def test_expected_drift_and_update(tmp_path: Path) -> None:
    """Expected output drift fails with a diff; --update rewrites it; then it passes."""
    root = _bundle(
        tmp_path / "b", "  - {id: e, kind: echo, expected: exp.json, value: {count: 2}}\n"
    )
    (root / "exp.json").write_text('{"count": 1}\n')
    report = run_gate([root], jobs=1)
    assert _codes(report) == {"GATE.EXPECTED.DRIFT"}
    assert '-  "count": 1' in report.findings[0].message
    updated = run_gate([root], update=True)
    assert updated.exit_code is ExitCode.OK
    assert [(f.code, f.severity.value) for f in updated.findings] == [
        ("GATE.EXPECTED.UPDATED", "note")
    ]
    assert "rewritten (4 changed lines)" in updated.findings[0].message
    assert json.loads((root / "exp.json").read_text()) == {"count": 2}
    assert run_gate([root], jobs=1).exit_code is ExitCode.OK


def test_path_escape_refused(tmp_path: Path) -> None:
    """An expected file outside the bundle is refused with GATE.PATH.ESCAPE."""
    _bundle(tmp_path / "b", "  - {id: e, kind: echo, expected: ../x.json, value: 1}\n")
    report = run_gate([tmp_path / "b"], jobs=1)
    assert _codes(report) == {"GATE.PATH.ESCAPE"}
    assert report.exit_code is ExitCode.UNUSABLE


def test_requirement_missing_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check needing CUDA on a machine without it is NOT_RUN, never passed."""
    monkeypatch.setattr("cbaudit.checks.execute.cuda_available", lambda: False)
    _bundle(tmp_path / "b", "  - {id: g, kind: echo, requires: [cuda]}\n")
    report = run_gate([tmp_path], jobs=1)
    assert report.results[0].outcome is CheckStatus.NOT_RUN
    assert report.counts()["passed"] == 0


def test_evidence_class_mismatch(tmp_path: Path) -> None:
    """A check declared measured_gpu that produced synthetic evidence fails."""
    _bundle(
        tmp_path / "b",
        "  - {id: m, kind: echo, evidence_class: measured_gpu, produces: synthetic}\n",
    )
    assert _codes(run_gate([tmp_path], jobs=1)) == {"GATE.EVIDENCE.CLASS_MISMATCH"}


def test_no_bundle_is_exit_2(tmp_path: Path, cli) -> None:
    """A directory without bundles is unusable input."""
    r = cli("gate", tmp_path)
    assert r.code == 2
    assert "GATE.NO_BUNDLE" in r.err


def test_parallel_matches_serial(tmp_path: Path) -> None:
    """Parallel and serial runs give the same JSON report."""
    from cbaudit.report import REPORTERS

    checks = "".join(f"  - {{id: c{i}, kind: echo}}\n" for i in range(4))
    _bundle(tmp_path / "b", checks)
    serial = REPORTERS["json"](run_gate([tmp_path], jobs=1), 0, False)
    parallel = REPORTERS["json"](run_gate([tmp_path], jobs=2), 0, False)
    assert serial == parallel


def test_negative_check_requires_the_declared_code(tmp_path: Path) -> None:
    """negative_check passes only when the inner check fails with the declared code."""
    checks = (
        "  - {id: ok, kind: negative_check, expect_code: LOOP.X.WRONG,"
        " check: {kind: echo, fail_code: LOOP.X.WRONG}}\n"
        "  - {id: other, kind: negative_check, expect_code: LOOP.X.WRONG,"
        " check: {kind: echo, fail_code: LOOP.Y.OTHER}}\n"
        "  - {id: passes, kind: negative_check, expect_code: LOOP.X.WRONG,"
        " check: {kind: echo}}\n"
    )
    _bundle(tmp_path / "b", checks)
    report = run_gate([tmp_path], jobs=1)
    by_id = {r.subject.split(":")[1]: r for r in report.results}
    assert by_id["ok"].outcome is CheckStatus.PASSED
    assert [f.code for f in by_id["other"].findings] == ["GATE.NEGATIVE.WRONG_REASON"]
    assert [f.code for f in by_id["passes"].findings] == ["GATE.NEGATIVE.NOT_REJECTED"]


def test_negative_check_spec_errors(tmp_path: Path) -> None:
    """A negative check without an inner check is refused when the bundle loads (exit 2)."""
    _bundle(tmp_path / "b", "  - {id: neg, kind: negative_check, expect_code: A.B}\n")
    report = run_gate([tmp_path], jobs=1)
    assert [(f.code, f.location.pointer) for f in report.findings] == [
        ("GATE.SPEC.MISSING_FIELD", "/checks/0/check")
    ]
    assert report.exit_code is ExitCode.UNUSABLE


def test_negative_check_inner_check_is_parsed_like_any_other(tmp_path: Path) -> None:
    """The inner check's unknown key is GATE.SPEC.UNKNOWN_FIELD; a negative of a negative is
    GATE.NEGATIVE.SPEC; neither runs."""
    checks = (
        "  - {id: typo, kind: negative_check, expect_code: A.B,"
        " check: {kind: echo, fail_cod: A.B}}\n"
        "  - {id: nested, kind: negative_check, expect_code: A.B,"
        " check: {kind: negative_check, expect_code: A.B, check: {kind: echo}}}\n"
    )
    _bundle(tmp_path / "b", checks)
    report = run_gate([tmp_path], jobs=1)
    found = [(r.subject, f.code, f.location.pointer) for r in report.results for f in r.findings]
    assert found == [
        ("demo:typo", "GATE.SPEC.UNKNOWN_FIELD", "/checks/0/check/fail_cod"),
        ("demo:nested", "GATE.NEGATIVE.SPEC", "/checks/1/check/kind"),
    ]
    assert "did you mean 'fail_code'" in report.findings[0].message
    assert report.exit_code is ExitCode.UNUSABLE


def test_select_matching_nothing_is_exit_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`-k` that matches no check is GATE.SELECT.EMPTY (exit 2), never a pass on nothing."""
    _bundle(tmp_path / "b", "  - {id: one, kind: echo}\n  - {id: two, kind: echo}\n")
    r = cli("gate", tmp_path, "-k", "tw0")
    assert r.code == 2 and "GATE.SELECT.EMPTY" in r.err and "among 2 checks" in r.err
    ok = cli("gate", tmp_path, "-k", "two")
    assert ok.code == 0 and "1 passed" in ok.out


def test_jobs_below_one_is_a_usage_error(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _bundle(tmp_path / "b", "  - {id: one, kind: echo}\n")
    assert cli("gate", tmp_path, "-j", "0").code == 2


def test_a_runaway_check_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    """A check past its timeout is GATE.CHECK.TIMEOUT (exit 2); the others still run."""
    _bundle(
        tmp_path / "b",
        "  - {id: spin, kind: spin, timeout_s: 0.2}\n  - {id: fine, kind: echo}\n",
    )
    for jobs in (1, 2):
        report = run_gate([tmp_path], jobs=jobs)
        by_subject = {r.subject: r for r in report.results}
        spun = by_subject["demo:spin"]
        assert spun.status is CheckStatus.ERROR
        assert [f.code for f in spun.findings] == ["GATE.CHECK.TIMEOUT"]
        assert by_subject["demo:fine"].outcome is CheckStatus.PASSED
        assert report.exit_code is ExitCode.UNUSABLE


def test_check_timeout_option_applies_to_every_check(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _bundle(tmp_path / "b", "  - {id: spin, kind: spin}\n")
    r = cli("gate", tmp_path, "--check-timeout", "0.2", "-j", "1")
    assert r.code == 2 and "GATE.CHECK.TIMEOUT" in r.out
