"""compare-results on peers' result files: vLLM's `bench serve` JSON, GuideLLM reports, pyperf.

The fixtures (tests/results/peer_files, see its README) follow each peer's real layout. The
comparability rules are the same as for cbaudit's own files: a differing or unreported
coordinate refuses the pair; only comparable pairs get statistics.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cbaudit.io.loader import load_document
from cbaudit.results.samples import ADAPTERS, adapt
from tests.conftest import CliRun

PEERS = Path(__file__).parent / "peer_files"


def _json(cli: Callable[..., CliRun], *args: str | Path) -> tuple[int, dict[str, Any]]:
    run = cli("compare-results", *args, "-f", "json")
    assert run.err == "", run.err
    data: dict[str, Any] = json.loads(run.out)
    return run.code, data


def _codes(report: dict[str, Any]) -> list[str]:
    return [f["code"] for r in report["results"] for f in r["findings"]]


def _points(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["subject"]: r["metrics"]
        for r in report["results"]
        if r["check"] == "compare-results.point"
    }


def test_each_fixture_is_claimed_by_exactly_one_adapter() -> None:
    """Detection is unambiguous: every peer file matches its own adapter and no other."""
    expected = {"vllm": "vllm-bench-serve", "guidellm": "guidellm-report", "pyperf": "pyperf"}
    for path in sorted(PEERS.glob("*.json")):
        data = load_document(path).data
        claimed = [a.name for a in ADAPTERS.values() if a.detect(data)]
        assert claimed == [expected[path.name.split("-")[0]]], path.name


def test_vllm_detailed_runs_at_one_rate_are_compared(cli: Callable[..., CliRun]) -> None:
    """Two runs with equal coordinates get per-request statistics for TTFT, TPOT, ITL and
    end-to-end latency; failed requests (an error text) are left out."""
    code, report = _json(
        cli, PEERS / "vllm-serve-rate10-run1.json", PEERS / "vllm-serve-rate10-run2.json"
    )
    assert code == 0
    assert report["summary"] == {"comparable": True, "ranking_produced": False}
    points = _points(report)
    assert set(points) == {"ttft", "tpot", "itl", "e2e_latency"}
    run1 = json.loads((PEERS / "vllm-serve-rate10-run1.json").read_text())
    ok = [i for i, e in enumerate(run1["errors"]) if e == ""]
    assert len(ok) == run1["num_prompts"] - 1 == points["ttft"]["a"]["n"]
    assert points["itl"]["a"]["n"] == sum(len(run1["itls"][i]) for i in ok)
    assert "normal approximation" in points["ttft"]["test"]
    assert {p["verdict"] for p in points.values()} == {"~"}


def test_vllm_tpot_is_vllms_definition(cli: Callable[..., CliRun]) -> None:
    """TPOT per request is (latency - TTFT) / (output tokens - 1), vLLM's definition, so its
    median matches the file's own `median_tpot_ms`."""
    _, report = _json(
        cli, PEERS / "vllm-serve-rate10-run1.json", PEERS / "vllm-serve-rate10-run2.json"
    )
    run1 = json.loads((PEERS / "vllm-serve-rate10-run1.json").read_text())
    median = _points(report)["tpot"]["a"]["median"]
    assert median == pytest.approx(run1["median_tpot_ms"], rel=1e-9)


def test_vllm_regression_is_found_and_can_fail_ci(cli: Callable[..., CliRun]) -> None:
    """A run 35% slower per token is a significant regression; `--fail-on regression` exits 1."""
    args = (PEERS / "vllm-serve-rate10-run1.json", PEERS / "vllm-serve-rate10-slower.json")
    code, report = _json(cli, *args)
    assert code == 0
    assert {"ttft", "tpot", "itl"} <= {
        k for k, p in _points(report).items() if p["verdict"] == "regression"
    }
    assert "COMPARE.REGRESSION" in _codes(report)
    code, _ = _json(cli, *args, "--fail-on", "regression")
    assert code == 1


def test_vllm_runs_at_different_request_rates_are_refused(cli: Callable[..., CliRun]) -> None:
    """Request rate 10 against 20: COMPARE.COORDINATE.DIFFERS on load.request_rate (pointing
    at `/request_rate`), COMPARE.INCOMPARABLE, no statistics and no ranking."""
    code, report = _json(
        cli, PEERS / "vllm-serve-rate10-run1.json", PEERS / "vllm-serve-rate20.json"
    )
    assert code == 0
    assert _codes(report) == ["COMPARE.COORDINATE.DIFFERS", "COMPARE.INCOMPARABLE"]
    (pair,) = report["results"]
    diff = pair["metrics"]["differing_coordinates"]
    assert diff == [
        {"coordinate": "load.request_rate", "a": "10.0", "b": "20.0", "unreported": False}
    ]
    assert pair["findings"][0]["location"]["pointer"] == "/request_rate"
    assert report["summary"] == {"comparable": False, "ranking_produced": False}
    code, _ = _json(
        cli,
        PEERS / "vllm-serve-rate10-run1.json",
        PEERS / "vllm-serve-rate20.json",
        "--fail-on",
        "incomparable",
    )
    assert code == 1


def test_vllm_without_hardware_metadata_is_unreported(cli: Callable[..., CliRun]) -> None:
    """vLLM records no hardware: without `--metadata hardware_parallelism=...` the coordinate
    is unreported and the pair is refused."""
    _, report = _json(
        cli, PEERS / "vllm-serve-rate10-run1.json", PEERS / "vllm-serve-rate10-no-metadata.json"
    )
    assert _codes(report).count("COMPARE.COORDINATE.UNREPORTED") == 2
    assert report["summary"]["comparable"] is False


def test_vllm_summary_only_values_are_shown_not_tested(cli: Callable[..., CliRun]) -> None:
    """Without --save-detailed only summary statistics exist: shown as reported, untested."""
    _, report = _json(
        cli,
        PEERS / "vllm-serve-rate10-run1.json",
        PEERS / "vllm-serve-rate10-summary-only.json",
    )
    points = _points(report)
    assert points["ttft"]["verdict"] == "not tested"
    assert "median" in points["ttft"]["b"]["reported"]
    assert "COMPARE.NOTE.NO_VALUE" in _codes(report)
    # `latencies` survives without --save-detailed; the failed request's zero is left out
    assert points["e2e_latency"]["b"]["n"] == 39


def _broken(tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads((PEERS / name).read_text())
    edit(data)
    out = tmp_path / name
    out.write_text(json.dumps(data, indent=1))
    return out


@pytest.mark.parametrize(
    ("name", "edit", "code", "pointer"),
    [
        (
            "vllm-serve-rate10-run1.json",
            lambda d: d["ttfts"].pop(),
            "COMPARE.PEER.LENGTH",
            "/errors",
        ),
        (
            "vllm-serve-rate10-run1.json",
            lambda d: d["ttfts"].__setitem__(3, "0.05"),
            "COMPARE.PEER.FIELD",
            "/ttfts/3",
        ),
        (
            "vllm-serve-rate10-run1.json",
            lambda d: d.__setitem__("request_rate", "fast"),
            "COMPARE.PEER.FIELD",
            "/request_rate",
        ),
        (
            "vllm-serve-rate10-run1.json",
            lambda d: d["itls"].__setitem__(0, None),
            "COMPARE.PEER.FIELD",
            "/itls/0",
        ),
        (
            "guidellm-sweep-benchmarks.json",
            lambda d: d["metadata"].__setitem__("version", 2),
            "COMPARE.PEER.VERSION",
            "/metadata/version",
        ),
        (
            "guidellm-sweep-benchmarks.json",
            lambda d: d["benchmarks"][1]["config"]["strategy"].pop("rate"),
            "COMPARE.PEER.FIELD",
            "/benchmarks/1/config/strategy",
        ),
        (
            "pyperf-py312-main.json",
            lambda d: d.__setitem__("version", "0.9.6"),
            "COMPARE.PEER.VERSION",
            "/version",
        ),
        (
            "pyperf-py312-main.json",
            lambda d: d["benchmarks"][0]["runs"][1]["values"].__setitem__(0, "x"),
            "COMPARE.PEER.FIELD",
            "/benchmarks/0/runs/1/values/0",
        ),
    ],
)
def test_malformed_peer_files_exit_2_with_a_located_message(
    cli: Callable[..., CliRun],
    tmp_path: Path,
    name: str,
    edit: Callable[[dict[str, Any]], None],
    code: str,
    pointer: str,
) -> None:
    """A detected peer file that is not well formed is unusable input: exit 2, one line
    naming the file, line and pointer and the code."""
    bad = _broken(tmp_path, name, edit)
    other = tmp_path / "other.json"
    shutil.copy(PEERS / name, other)
    selector = "#0" if name.startswith("guidellm") else ""
    run = cli("compare-results", f"{bad}{selector}", f"{other}{selector}")
    assert run.code == 2
    (line,) = run.err.strip().splitlines()
    assert line.startswith(f"cbaudit: {bad}:")
    assert f"#{pointer}: error {code}:" in line
    assert "Traceback" not in run.err


def test_unknown_json_stays_unknown_type(cli: Callable[..., CliRun], tmp_path: Path) -> None:
    """A JSON object of no known format (here: vLLM-like keys without a result) is
    COMPARE.INPUT.UNKNOWN_TYPE, exit 2."""
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"model_id": "x", "backend": "vllm", "benchmarks": []}))
    run = cli("compare-results", odd, odd)
    assert run.code == 2 and "COMPARE.INPUT.UNKNOWN_TYPE" in run.err


def test_guidellm_sweep_benchmarks_are_selectable_and_refused_across_rates(
    cli: Callable[..., CliRun],
) -> None:
    """Each benchmark of a sweep is `FILE#INDEX`; constant@5 against constant@10 differs on
    load.rate, and GuideLLM never records the server's hardware (unreported)."""
    sweep = PEERS / "guidellm-sweep-benchmarks.json"
    sets = adapt(load_document(sweep))
    assert [s.extra["strategy"] for s in sets] == [
        "synchronous",
        "constant@5.0",
        "constant@10.0",
    ]
    assert {p.key: len(p.samples) for p in sets[1].points.values()} == {
        "ttft": 24,
        "itl_mean_per_request": 24,
        "tpot_incl_first": 24,
        "e2e_latency": 24,
    }
    _, report = _json(cli, f"{sweep}#1", f"{sweep}#2")
    (pair,) = report["results"]
    diffs = {d["coordinate"]: d for d in pair["metrics"]["differing_coordinates"]}
    assert diffs["load.rate"] == {
        "coordinate": "load.rate",
        "a": "5.0",
        "b": "10.0",
        "unreported": False,
    }
    assert diffs["hardware_parallelism"]["unreported"] is True
    assert "COMPARE.COORDINATE.DIFFERS" in _codes(report)
    run = cli("compare-results", sweep, sweep)
    assert run.code == 2 and "COMPARE.INPUT.AMBIGUOUS" in run.err


def test_pyperf_files_from_one_machine_are_compared(cli: Callable[..., CliRun]) -> None:
    """pyperf suites on the same CPU compare per benchmark; calibration runs and warmups are
    not samples; a 14% slower branch is a regression (lower is better for time)."""
    code, report = _json(cli, PEERS / "pyperf-py312-main.json", PEERS / "pyperf-py312-branch.json")
    assert code == 0 and report["summary"]["comparable"] is True
    points = _points(report)
    assert set(points) == {"gate_loop2", "replay_orca_abc", "validate_plan_case"}
    assert {p["a"]["n"] for p in points.values()} == {15}
    assert {p["verdict"] for p in points.values()} == {"regression"}
    assert {p["unit"] for p in points.values()} == {"s"}


def test_pyperf_files_from_different_machines_are_refused(cli: Callable[..., CliRun]) -> None:
    """pyperf records the CPU: another CPU model is a differing hardware coordinate."""
    _, report = _json(cli, PEERS / "pyperf-py312-main.json", PEERS / "pyperf-other-machine.json")
    assert _codes(report) == ["COMPARE.COORDINATE.DIFFERS", "COMPARE.INCOMPARABLE"]
    assert report["results"][0]["findings"][0]["location"]["pointer"] == "/metadata/cpu_model_name"


def test_peer_formats_and_cbaudit_results_never_compare(cli: Callable[..., CliRun]) -> None:
    """A vLLM run against a pyperf suite differs on every coordinate: refused, not ranked."""
    _, report = _json(cli, PEERS / "vllm-serve-rate10-run1.json", PEERS / "pyperf-py312-main.json")
    assert report["summary"] == {"comparable": False, "ranking_produced": False}
