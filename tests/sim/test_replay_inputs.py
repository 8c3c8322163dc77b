"""`cbaudit replay` accepts every workload input: manifests, trace CSVs and generator specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_replay_a_splitwise_csv(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A Splitwise-format CSV replays directly; every request finishes, exit 0."""
    trace = tmp_path / "t.csv"
    trace.write_text(
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,8,3\n0.001,4,2\n0.002,6,1\n"
    )
    r = cli("replay", trace, "--policy", "sarathi-serve", "--format", "json")
    assert r.code == 0, r.err
    metrics = json.loads(r.out)["results"][0]["metrics"]
    assert (metrics["requests_total"], metrics["requests_finished"]) == (3, 3)
    assert metrics["output_tokens"] == 6


def test_replay_a_generator_spec_is_seeded(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A generator spec replays; the same seed gives a byte-identical report."""
    spec = tmp_path / "gen.yaml"
    spec.write_text(
        "kind: workload-generator\nschema_version: 1\nworkload_id: gen-demo\nseed: 3\n"
        "count: 12\nclock: {unit: tick}\n"
        "arrivals: {process: poisson, rate_per_tick: 0.5}\n"
        "prompt_tokens: {dist: uniform, lo: 2, hi: 9}\n"
        "output_tokens: {dist: geometric, mean: 4}\n"
        "max_output_tokens: {cap: 16}\n"
        "policy: {policy_id: orca, policy_version: '1'}\n"
        "budgets: {token_budget: 16, sequence_budget: 4}\n"
    )
    first = cli("replay", spec, "--policy", "orca", "--format", "json")
    assert first.code == 0, first.err
    second = cli("replay", spec, "--policy", "orca", "--format", "json")
    assert first.out == second.out
    assert json.loads(first.out)["results"][0]["metrics"]["requests_total"] == 12


def test_replay_bad_csv_is_located_exit_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A trace row that is not a number is a located TRACE.BAD_ROW with exit 2."""
    trace = tmp_path / "bad.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,eight,3\n")
    r = cli("replay", trace, "--policy", "orca")
    assert r.code == 2
    assert "TRACE.BAD_ROW" in r.err and f"{trace}:2:" in r.err


def test_replay_missing_or_directory_csv_is_exit_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A trace CSV that is absent or a directory is a located LOAD.* error, not exit 3."""
    missing = tmp_path / "absent.csv"
    r = cli("replay", missing, "--policy", "orca")
    assert r.code == 2 and "LOAD.NOT_FOUND" in r.err and str(missing) in r.err
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    r = cli("replay", folder, "--policy", "orca")
    assert r.code == 2 and "LOAD.IS_DIRECTORY" in r.err
    assert "internal error" not in r.err


def test_replay_non_utf8_csv_is_located_load_encoding(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A Latin-1 byte in a trace row is LOAD.ENCODING at its line and column, exit 2."""
    trace = tmp_path / "latin.csv"
    trace.write_bytes(
        b"\xef\xbb\xbfarrived_at,num_prefill_tokens,num_decode_tokens\n0,5,3\n1,4,\xe9\n"
    )
    r = cli("replay", trace, "--policy", "orca")
    assert r.code == 2 and "LOAD.ENCODING" in r.err and f"{trace}:3:5:" in r.err
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x00\x01\xff")
    r = cli("replay", binary, "--policy", "orca")
    assert r.code == 2 and "LOAD.ENCODING" in r.err and f"{binary}:1:3:" in r.err


def _trace(tmp_path: Path) -> Path:
    trace = tmp_path / "t.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0,5,3\n1,4,2\n")
    return trace


def test_replay_refuses_an_option_the_policy_never_reads(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A misspelt policy option is REPLAY.POLICY.OPTION, not a silent default."""
    r = cli("replay", _trace(tmp_path), "--policy", "vllm-v1", "--policy-option", "sheduling=x")
    assert r.code == 2 and "REPLAY.POLICY.OPTION" in r.err and "'sheduling'" in r.err
    ok = cli(
        "replay", _trace(tmp_path), "--policy", "vllm-v1", "--policy-option", "scheduling=fcfs"
    )
    assert ok.code == 0, ok.err


def test_replay_refuses_an_unknown_budget_override(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`--budget token_budgte=8` is WORKLOAD.FIELD.UNKNOWN at /budgets/token_budgte."""
    r = cli("replay", _trace(tmp_path), "--policy", "orca", "--budget", "token_budgte=8")
    assert r.code == 2 and "WORKLOAD.FIELD.UNKNOWN" in r.err and "/budgets/token_budgte" in r.err


def test_replay_window_and_slo_window_must_be_positive(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Occupancy windows start at 1 and the SLO window is a finite positive span."""
    trace = _trace(tmp_path)
    assert cli("replay", trace, "--policy", "orca", "--window", "0").code == 2
    r = cli("replay", trace, "--policy", "orca", "--slo-window-ms", "-1")
    assert r.code == 2 and "--slo-window-ms" in r.err


def test_workload_policy_uses_the_contract_records() -> None:
    """The replay's workload carries the contract's own PolicyIdentity/TieBreak/Budgets."""
    from cbaudit.contract import records
    from cbaudit.model import InputError
    from cbaudit.sim.workload import workload_from_data

    data = {
        "workload_id": "w",
        "clock": {"unit": "tick"},
        "budgets": {"token_budget": 4, "sequence_budget": 2},
        "policy": {
            "policy_id": "p",
            "policy_version": "1",
            "tie_break": {"key": ["arrival_order"], "phase_order": ["PREFILL_CHUNK", "DECODE_ROW"]},
        },
        "requests": [{"request_id": "a", "arrival": 0, "prompt_tokens": 3, "max_output_tokens": 2}],
    }
    wl = workload_from_data(data)
    assert isinstance(wl.policy, records.PolicyIdentity) and isinstance(wl.budgets, records.Budgets)
    assert wl.policy.tie_break.phase_order == (
        records.Phase.PREFILL_CHUNK,
        records.Phase.DECODE_ROW,
    )
    data["policy"]["tie_break"]["phase_order"] = ["DECODE", "PREFILL_CHUNK"]  # type: ignore[index]
    with pytest.raises(InputError) as caught:
        workload_from_data(data)
    f = caught.value.findings[0]
    assert f.code == "WORKLOAD.FIELD.RANGE"
    assert f.location.pointer == "/policy/tie_break/phase_order/0"


@pytest.mark.parametrize("policy", ["reservation-maximum", "reservation-point"])
def test_a_reservation_without_a_ceiling_is_unusable_input(
    tmp_path: Path, cli, policy: str
) -> None:  # type: ignore[no-untyped-def]
    """A reservation policy with neither `ceiling_rows` nor a KV pool cannot run: exit 2 with
    REPLAY.POLICY.OPTION before the first iteration (it was an internal error, exit 3)."""
    r = cli("replay", _trace(tmp_path), "--policy", policy)
    assert r.code == 2, r.err
    assert "REPLAY.POLICY.OPTION" in r.err and "ceiling_rows" in r.err
    assert "internal error" not in r.err
    ok = cli("replay", _trace(tmp_path), "--policy", policy, "--policy-option", "ceiling_rows=64")
    assert ok.code == 0, ok.err
