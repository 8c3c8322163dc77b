"""The gate kinds over the shipped loop files, and the replay command's exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cbaudit.checks.context import GateContext
from cbaudit.checks.interface import CheckKind
from cbaudit.checks.parse import run_entry
from cbaudit.model import CheckResult, InputError
from cbaudit.oracles import replay
from tests.sim.helpers import BUNDLE

KINDS: dict[str, CheckKind[Any]] = {
    k.name: k
    for k in (
        replay.REPLAY,
        replay.ADMISSION_CASES,
        replay.STATIC_EFFICIENCY,
        replay.POLICY_SNAPSHOTS,
    )
}


def run_replay(spec: dict[str, Any], ctx: GateContext) -> list[CheckResult]:
    return run_entry(replay.REPLAY, spec, ctx)


FAST_FILES = ["loop3/checks.yaml", "loop6-starvation/checks.yaml", "loop10-runtime/checks.yaml"]


def _ctx(path: Path, i: int) -> GateContext:
    return GateContext(
        base_dir=path.parent, manifest=str(path), pointer=f"/checks/{i}", bundle_root=BUNDLE
    )


@pytest.mark.parametrize("rel", FAST_FILES)
def test_shipped_checks_pass(rel: str) -> None:
    """Every simulator-kind check in the loop file passes against its expected output."""
    path = BUNDLE / rel
    ran = 0
    for i, spec in enumerate(yaml.safe_load(path.read_text())["checks"]):
        if spec["kind"] not in KINDS:  # other packages' kinds are tested with their packages
            continue
        ran += 1
        for res in run_entry(KINDS[spec["kind"]], spec, _ctx(path, i)):
            assert res.outcome.value == "passed", (spec["id"], res.findings)
    assert ran > 0


def _abc_spec(**extra: Any) -> dict[str, Any]:
    return {"id": "t", "kind": "replay", "workload": "abc.workload.yaml", "policy": "orca", **extra}


def test_wrong_assertion_is_a_mismatch_finding() -> None:
    """An assert that does not hold gives REPLAY.ASSERT.MISMATCH."""
    path = BUNDLE / "loop3" / "checks.yaml"
    [res] = run_replay(_abc_spec(**{"assert": {"slot_occupancy": "13/22"}}), _ctx(path, 0))
    assert [f.code for f in res.findings] == ["REPLAY.ASSERT.MISMATCH"]


def test_unknown_metric_path_is_unusable_input() -> None:
    """An assert on a path the metrics lack is an InputError (REPLAY.ASSERT.UNKNOWN_PATH)."""
    path = BUNDLE / "loop3" / "checks.yaml"
    with pytest.raises(InputError) as err:
        run_replay(_abc_spec(**{"assert": {"no.such": 1}}), _ctx(path, 0))
    assert err.value.findings[0].code == "REPLAY.ASSERT.UNKNOWN_PATH"


def test_unknown_policy_in_spec_is_unusable_input() -> None:
    """An unknown policy id is REPLAY.POLICY.UNKNOWN."""
    path = BUNDLE / "loop3" / "checks.yaml"
    with pytest.raises(InputError) as err:
        run_replay(_abc_spec(policy="nope"), _ctx(path, 0))
    assert err.value.findings[0].code == "REPLAY.POLICY.UNKNOWN"


def test_path_escape_is_refused() -> None:
    """A workload path outside the bundle is GATE.PATH.ESCAPE."""
    path = BUNDLE / "loop3" / "checks.yaml"
    with pytest.raises(InputError) as err:
        run_replay(_abc_spec(workload="../../../pyproject.toml"), _ctx(path, 0))
    assert err.value.findings[0].code == "GATE.PATH.ESCAPE"


def test_cli_replay_text_and_exit_zero(cli: Any) -> None:
    """`cbaudit replay` on the A/B/C fixture exits 0 and names the occupancy."""
    r = cli("replay", BUNDLE / "loop3" / "abc.workload.yaml", "--policy", "static")
    assert r.code == 0, r.err
    assert "13/22" in r.out


def test_cli_unknown_policy_exit_two(cli: Any) -> None:
    """An unknown policy is a located one-line error and exit 2."""
    r = cli("replay", BUNDLE / "loop3" / "abc.workload.yaml", "--policy", "nope")
    assert r.code == 2 and "REPLAY.POLICY.UNKNOWN" in r.err


def test_cli_bad_workload_exit_two_and_no_trace(cli: Any, tmp_path: Path) -> None:
    """A broken workload exits 2 with a located finding and writes no trace file."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "schema_version: 1\nworkload_id: w\nclock: {unit: tick}\n"
        "budgets: {token_budget: 0, sequence_budget: 1}\nrequests: []\n"
    )
    trace = tmp_path / "t.jsonl"
    r = cli("replay", bad, "--policy", "orca", "--trace-out", trace)
    assert r.code == 2 and str(bad) in r.err
    assert not trace.exists() and list(tmp_path.iterdir()) == [bad]


def test_trace_out_gets_the_mode_a_plain_open_would(cli: Any, tmp_path: Path) -> None:
    """The trace is streamed to a temporary file (created 0600) and renamed into place: it
    gets the mode open() would give under the umask, or keeps the mode of the file it
    replaces, as the JSON report does."""
    import os

    workload = BUNDLE / "lesson" / "four-slot.workload.yaml"
    trace, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    old = os.umask(0o022)
    try:
        r = cli("replay", workload, "--policy", "orca", "--trace-out", trace, "-o", report)
        assert r.code == 0, r.err
        assert trace.stat().st_mode & 0o777 == 0o644
        assert report.stat().st_mode & 0o777 == 0o644
        trace.chmod(0o640)
        assert cli("replay", workload, "--policy", "orca", "--trace-out", trace).code == 0
        assert trace.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_trace_out_is_accepted_by_validate_plan(cli: Any, tmp_path: Path) -> None:
    """The --trace-out JSONL passes `validate-plan --trace`."""
    trace = tmp_path / "t.jsonl"
    r = cli(
        "replay",
        BUNDLE / "lesson" / "four-slot.workload.yaml",
        "--policy",
        "sarathi-serve",
        "--trace-out",
        trace,
    )
    assert r.code == 0, r.err
    v = cli("validate-plan", "--trace", trace)
    assert v.code == 0, v.out + v.err
