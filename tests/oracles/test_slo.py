"""Loop 7 (article 0x07): SLO clocks, least-slack and bounded admission, goodput, overload."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from repo_paths import EVIDENCE

from cbaudit.contract.live_request import LiveRequest
from cbaudit.model import CheckStatus, InputError
from cbaudit.oracles import slo_oracle
from cbaudit.oracles.fixtures import load_fixture
from cbaudit.policies.least_slack import LeastSlackPolicy
from cbaudit.policies.registry import POLICIES
from cbaudit.sim import slo
from cbaudit.sim.cost_unit import UnitCostModel
from cbaudit.sim.engine import Engine, Validation
from cbaudit.sim.metrics import INSUFFICIENT
from cbaudit.sim.workload import load_workload, workload_from_data

LOOP7 = EVIDENCE / "m5-2-continuous-batching" / "loop7"
FIXTURE = LOOP7 / "slo_overload.yaml"
BURST = LOOP7 / "burst.workload.yaml"
NEGATIVES = sorted((LOOP7 / "negative").glob("*.yaml"))


def _burst(policy: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    run = Engine(
        load_workload(BURST), POLICIES.create(policy, options or {}), UnitCostModel()
    ).run()
    assert run.findings == [] and run.stop_reason == "completed"
    return slo.slo_report(run, window_ms=60)


def test_deadline_origins_and_slack() -> None:
    """First deadline = arrival + TTFT; next = previous emission + TBT; slack = h - cost."""
    assert slo.first_token_deadline(0, 30) == 30
    assert slo.next_token_deadline(40, 20) == 60
    assert slo.headroom(30, 30) == 0
    finish = slo.lower_bound_finish(30, 10, first=True, prefill_units=1)
    assert (finish, slo.predicted_slack(30, finish)) == (40, -10)
    assert slo.lower_bound_finish(50, 10, first=False, prefill_units=3) == 60


def test_least_slack_clock_runs_from_emission_not_selection() -> None:
    """A live stream's deadline is last emission + TBT; a waiting one's is arrival + TTFT."""
    policy = LeastSlackPolicy({})
    r = LiveRequest(0, "r", 0, 1, 4, 0.0, 0, 0, None)
    r.ttft_limit, r.tbt_limit = 3.0, 2.0
    first = policy.slack_of(r, now=3.0, token_budget=2)
    assert (first.target, first.deadline, first.slack) == ("first", 3.0, -1.0)
    r.e, r.c, r.last_emit = 1, 1, 4.0
    nxt = policy.slack_of(r, now=5.0, token_budget=2)
    assert (nxt.target, nxt.deadline, nxt.headroom, nxt.slack) == ("next", 6.0, 1.0, 0.0)


def test_burst_accept_all_versus_four_live_cap() -> None:
    """Accept-all: 6 complete, 2 miss TTFT; cap: 2 rejected, 4 valid; same request goodput."""
    acc = _burst("least-slack")
    cap = _burst("bounded-admission", {"live_cap": 4})
    assert acc["counts"] == {
        "offered": 6,
        "admitted": 6,
        "completed": 6,
        "slo_valid": 4,
        "completed_miss": 2,
        "rejected": 0,
        "unfinished": 0,
    }
    assert [r["ttft_ms"] for r in acc["requests"]] == [10, 10, 30, 30, 40, 40]
    assert acc["violations"]["ttft"] == 2
    assert (cap["counts"]["rejected"], cap["counts"]["slo_valid"]) == (2, 4)
    assert [r["status"] for r in cap["requests"][4:]] == ["rejected", "rejected"]
    assert acc["rates"]["request_goodput"] == cap["rates"]["request_goodput"]
    assert acc["rates"]["request_goodput"] == {"value": 66.666667, "unit": "requests/s"}
    assert acc["rates"]["token_throughput"]["value"] == 200.0
    assert cap["rates"]["token_throughput"]["value"] == 133.333333
    assert cap["attainment"]["completion_conditioned"]["fraction"] == "4/4"
    assert acc["partition"]["closes"] and cap["partition"]["closes"]


@pytest.mark.parametrize(
    ("policy", "options"), [("least-slack", {}), ("bounded-admission", {"live_cap": 4})]
)
def test_recorder_decides_as_the_policy_alone(policy: str, options: dict[str, Any]) -> None:
    """The oracle's recorder hands the policy the candidates it logged (`choose_from`): the
    replay is the one the policy makes alone, and the log holds one cut per decision."""
    alone = Engine(load_workload(BURST), POLICIES.create(policy, options), UnitCostModel()).run()
    recorder = slo_oracle._Recorder(POLICIES.create(policy, options), 10.0)
    logged = Engine(load_workload(BURST), recorder, UnitCostModel()).run()
    assert slo.slo_report(logged, window_ms=60) == slo.slo_report(alone, window_ms=60)
    assert logged.iterations == alone.iterations
    cuts = recorder.cuts
    assert len(cuts) == alone.iterations
    selected = [c for cut in cuts for c in cut["candidates"] if c["decision"] == "selected"]
    assert len(selected) == alone.rows_per_iteration.prefix_sum(alone.iterations)  # a row each
    assert recorder.negative_selections() == sum(1 for c in selected if c["slack_ms"] < 0)


def test_oracle_reproduces_the_article() -> None:
    """The Loop 7 fixture passes: negative-slack picks, tail 19.8/10/500, 118 rejected, 50.833%."""
    result = slo_oracle.run(load_fixture(FIXTURE))
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    m = result.metrics
    assert m["burst"]["accept-all"]["negative_slack_selections"] == 2
    assert m["burst"]["four-live-cap"]["negative_slack_selections"] == 0
    assert m["burst"]["same_request_goodput"] is True
    tail = m["tail_probe"]["tail-98x10-2x500"]
    assert [tail["distribution"][k] for k in ("mean", "p95", "p99")] == [19.8, 10, 500]
    assert [tail["gates"][k]["passes"] for k in ("mean", "p95", "p99")] == [True, True, False]
    small = m["tail_probe"]["burst-twelve-samples"]["distribution"]
    assert (small["p50"], small["p99"]) == (20, INSUFFICIENT)
    sat = m["saturation"]
    assert sat["overload"]["demand_rows"] == 480
    assert sat["overload"]["capacity_rows"] == 260
    assert sat["overload"]["unavoidable_excess_rows"] == 220
    capped = sat["four-live-cap"]
    assert capped["counts"]["rejected"] == 118
    assert capped["attainment"]["offered_load"]["percent"] == 50.833
    assert capped["attainment"]["completion_conditioned"]["percent"] == 100.0
    titles = [c["title"] for c in result.charts]
    assert any("TTFT" in t for t in titles) and any("TBT" in t for t in titles)
    assert any("offered, admitted, completed" in t for t in titles)


def test_parse_goodput() -> None:
    """`ttft:MS tpot:MS e2el:MS` (repeated or in one string) gives ms limits; bad items fail."""
    assert slo.parse_goodput(["ttft:30 tpot:20", "e2el:100"]) == {
        "ttft_ms": 30.0,
        "tpot_ms": 20.0,
        "e2e_ms": 100.0,
    }
    for bad in (["ttft=30"], ["latency:5"], ["ttft:-1"], ["ttft:x"], ["ttft:1", "ttft:2"]):
        with pytest.raises(ValueError):
            slo.parse_goodput(bad)


def test_one_output_has_no_tpot_and_still_counts() -> None:
    """A one-output request has TPOT undefined (None), and TTFT still decides its validity."""
    assert slo.judge(10, None, None, 10, {"ttft_ms": 30, "tpot_ms": 5}) == ()
    assert slo.judge(40, None, None, 40, {"ttft_ms": 30, "tpot_ms": 5}) == ("ttft",)
    assert slo.queue_recurrence([3, 3, 0], [2, 2, 2]) == [0, 1, 2, 0]


@settings(max_examples=20, deadline=None)
@given(
    arrivals=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=10),
    cap=st.integers(min_value=1, max_value=4),
    window=st.integers(min_value=10, max_value=120),
)
def test_outcome_partition_always_closes(arrivals: list[int], cap: int, window: int) -> None:
    """offered = valid + miss + rejected + unfinished for any arrivals, cap and window."""
    data = {
        "schema_version": 1,
        "workload_id": "p",
        "clock": {"unit": "tick", "tick_ms": 10},
        "budgets": {"token_budget": 2, "sequence_budget": 2},
        "requests": [
            {
                "request_id": f"q{i}",
                "arrival": a,
                "prompt_tokens": 1 + i % 3,
                "max_output_tokens": 3,
                "slo": {"ttft_ms": 30, "tbt_ms": 20},
            }
            for i, a in enumerate(sorted(arrivals))
        ],
    }
    run = Engine(
        workload_from_data(data),
        POLICIES.create("bounded-admission", {"live_cap": cap}),
        UnitCostModel(),
        validation=Validation.FAST,
    ).run()
    assert run.findings == []
    led = slo.slo_report(run, window_ms=window)
    c = led["counts"]
    assert c["offered"] == c["slo_valid"] + c["completed_miss"] + c["rejected"] + c["unfinished"]
    assert c["admitted"] == c["offered"] - c["rejected"]
    assert led["partition"]["closes"] is True


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.stem)
def test_negative_fixture_produces_its_code(path: Path) -> None:
    """Every Loop 7 negative fixture is rejected with the code it declares, and located."""
    declared = yaml.safe_load(path.read_text())["expect_code"]
    try:
        findings = slo_oracle.run(load_fixture(path, root=LOOP7)).findings
    except InputError as err:
        findings = err.findings
    hits = [f for f in findings if f.code == declared]
    assert hits, [f.render() for f in findings]
    assert all(f.location.pointer is not None for f in hits)


def test_loop7_has_nineteen_negatives_with_known_codes() -> None:
    """At least 19 negatives, each with a code from the oracle's table."""
    codes = [yaml.safe_load(p.read_text())["expect_code"] for p in NEGATIVES]
    assert len(codes) >= 19
    assert set(codes) <= set(slo_oracle.CODES)


def test_replay_cli_reports_the_slo_ledger(cli: Any, tmp_path: Path) -> None:
    """`replay --slo-window-ms` adds the ledger; rejected requests never count as finished."""
    out = tmp_path / "r.json"
    args = ("replay", BURST, "--policy", "bounded-admission", "--policy-option", "live_cap=4")
    r = cli(*args, "--slo-window-ms", "60", "--per-request", "-f", "json", "-o", out)
    assert r.code == 0, r.err
    metrics = json.loads(out.read_text())["results"][0]["metrics"]
    assert metrics["slo"]["counts"]["rejected"] == 2
    assert metrics["requests_finished"] == 4
    assert metrics["requests"]["r5"]["finish_reason"] == "rejected"
    r = cli("replay", BURST, "--policy", "least-slack", "--goodput", "ttft:20", "-f", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["results"][0]["metrics"]["slo"]["counts"]["slo_valid"] == 2


def test_replay_cli_refuses_bad_slo_options(cli: Any) -> None:
    """A malformed --goodput or a missing live_cap is exit 2 with the reason."""
    r = cli("replay", BURST, "--policy", "least-slack", "--goodput", "ttft")
    assert r.code == 2 and "KEY:MS" in r.err
    r = cli("replay", BURST, "--policy", "bounded-admission")
    assert r.code == 2 and "REPLAY.POLICY.OPTION" in r.err


def test_loop7_checks_pass_through_the_gate(cli: Any, tmp_path: Path) -> None:
    """The loop7 include file passes in a bundle, with its expected reports unchanged."""
    shutil.copytree(LOOP7, tmp_path / "loop7")
    (tmp_path / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: t\ntitle: t\ninclude: [loop7/checks.yaml]\n"
    )
    r = cli("gate", tmp_path, "-j", "1", "-q")
    assert r.code == 0, r.out + r.err
    assert "30 passed" in r.out


@pytest.mark.parametrize(
    ("options", "code", "pointer"),
    [
        ({"goodput": ["ttft"]}, "REPLAY.SPEC.INVALID", "/checks/0/options/goodput"),
        ({"goodput": 5}, "GATE.SPEC.INVALID", "/checks/0/options/goodput"),
        ({"slo_window_ms": 0}, "GATE.SPEC.INVALID", "/checks/0/options/slo_window_ms"),
        ({"slo_window": 60}, "GATE.SPEC.UNKNOWN_FIELD", "/checks/0/options/slo_window"),
    ],
)
def test_replay_gate_kind_refuses_bad_slo_options(
    options: dict[str, Any], code: str, pointer: str
) -> None:
    """The `replay` kind's goodput and window options are validated with located findings."""
    from cbaudit.checks.context import GateContext
    from cbaudit.checks.parse import run_entry
    from cbaudit.oracles.replay import REPLAY

    ctx = GateContext(
        base_dir=LOOP7, manifest="checks.yaml", pointer="/checks/0", bundle_root=LOOP7.parent
    )
    spec = {"id": "x", "workload": "burst.workload.yaml", "policy": "least-slack"}
    with pytest.raises(InputError) as err:
        run_entry(REPLAY, {**spec, "options": options}, ctx)
    finding = err.value.findings[0]
    assert (finding.code, finding.location.pointer) == (code, pointer)


def test_replay_gate_kind_reports_goodput_limits() -> None:
    """A `replay` check with goodput limits reports the ledger under those limits."""
    from cbaudit.checks.context import GateContext
    from cbaudit.checks.parse import run_entry
    from cbaudit.oracles.replay import REPLAY

    ctx = GateContext(
        base_dir=LOOP7, manifest="checks.yaml", pointer="/checks/0", bundle_root=LOOP7.parent
    )
    spec = {
        "id": "x",
        "workload": "burst.workload.yaml",
        "policy": "least-slack",
        "options": {"goodput": {"ttft": 30, "tbt": 20}, "slo_window_ms": 60},
        "assert": {"slo.counts.slo_valid": 4},
    }
    (result,) = run_entry(REPLAY, spec, ctx)
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.metrics["slo"]["goodput_limits_ms"] == {"tbt_ms": 20, "ttft_ms": 30}


def _counting_replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the sections actually replayed (not taken from a reuse scope)."""
    ran: list[str] = []
    real = slo_oracle._replay_section

    def replay(section: Any, spec: Any, tick_ms: float, name: str) -> Any:
        ran.append(name)
        return real(section, spec, tick_ms, name)

    monkeypatch.setattr(slo_oracle, "_replay_section", replay)
    return ran


def test_a_replay_with_the_same_arguments_runs_once_in_a_reuse_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inside `memo.reusing()` a section replayed again with the same JSON arguments is not
    run again; each caller gets its own copy of the report (and the same codes and log);
    other arguments, a scope's end, or arguments that are not plain JSON run it anew."""
    from cbaudit.io import memo

    ran = _counting_replays(monkeypatch)
    data = load_fixture(FIXTURE).data
    section = data["burst"]
    spec = section["policies"][0]
    tick = float(data.get("tick_ms", 10))
    alone = slo_oracle.replay_section(section, spec, tick, "loop7-burst")
    with memo.reusing():
        first = slo_oracle.replay_section(section, spec, tick, "loop7-burst")
        first[0]["counts"]["offered"] = -1  # the caller's own copy
        second = slo_oracle.replay_section(
            json.loads(json.dumps(section)), spec, tick, "loop7-burst"
        )
        slo_oracle.replay_section(section, spec, tick * 2, "loop7-burst")
        slo_oracle.replay_section(section, spec, tick, "loop7-other")
        slo_oracle.replay_section({**section, "note": (1, 2)}, spec, tick, "loop7-burst")
        slo_oracle.replay_section({**section, "note": (1, 2)}, spec, tick, "loop7-burst")
    slo_oracle.replay_section(section, spec, tick, "loop7-burst")
    assert ran == ["loop7-burst"] * 3 + ["loop7-other"] + ["loop7-burst"] * 3
    assert second[0] == alone[0] and second[1] == alone[1]
    assert second[2].cuts == alone[2].cuts
    assert second[0] is not first[0] and second[0]["counts"] is not first[0]["counts"]


def test_the_loop7_oracle_reports_the_same_with_replays_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The article's Loop 7 fixture through the oracle: twice inside a reuse scope (the second
    time every replay is reused) and once outside, the same metrics, findings and charts."""
    from cbaudit.io import memo

    ran = _counting_replays(monkeypatch)
    outside = slo_oracle.run(load_fixture(FIXTURE))
    n = len(ran)
    with memo.reusing():
        once = slo_oracle.run(load_fixture(FIXTURE))
        again = slo_oracle.run(load_fixture(FIXTURE))
    assert len(ran) == 2 * n > 0  # the scope's second run replayed nothing
    for result in (once, again):
        assert json.dumps(result.metrics, sort_keys=True) == json.dumps(
            outside.metrics, sort_keys=True
        )
        assert result.findings == outside.findings
        assert result.charts == outside.charts


def test_what_the_replay_store_holds_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay whose log is larger than the store's limit is not kept (run every time)."""
    from cbaudit.io import memo

    ran = _counting_replays(monkeypatch)
    monkeypatch.setattr(slo_oracle, "REPLAY_LIMIT", 1)
    data = load_fixture(FIXTURE).data
    section = data["burst"]
    with memo.reusing():
        for _ in range(2):
            slo_oracle.replay_section(section, section["policies"][0], 10.0, "loop7-burst")
        assert memo.held("slo.replay_section") == 0
    assert len(ran) == 2
