"""Replay reports that compare-results can compare: samples, coordinates, end-to-end pairs."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbaudit.checks.context import GateContext
from cbaudit.checks.parse import run_entry
from cbaudit.model import InputError
from cbaudit.oracles.replay import REPLAY, REPLAY_REPORT
from cbaudit.sim import replay_compare as rc
from tests.sim.helpers import BUNDLE

COMPARE = BUNDLE / "compare"
SPEC = COMPARE / "poisson.generator.yaml"
ABC = BUNDLE / "loop3" / "abc.workload.yaml"
TRACE_SPEC = Path(__file__).parent / "data" / "gen_trace_wrap.yaml"


def _replay(cli: Callable[..., Any], out: Path, workload: Path, *args: str) -> dict[str, Any]:
    """A replay report with samples and per-request records inline (later args override)."""
    r = cli("replay", workload, "--samples", "--per-request", *args, "-f", "json", "-o", out)
    assert r.code == 0, r.err
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def _compare(cli: Callable[..., Any], a: Path, b: Path, *args: str) -> tuple[int, dict[str, Any]]:
    r = cli("compare-results", a, b, "-f", "json", *args)
    data: dict[str, Any] = json.loads(r.out)
    return r.code, data


def _differing(report: dict[str, Any]) -> list[str]:
    pair = report["results"][0]["metrics"]
    return [d["coordinate"] for d in pair["differing_coordinates"]]


def _codes(report: dict[str, Any]) -> set[str]:
    return {f["code"] for r in report["results"] for f in r["findings"]}


# --- what a report carries ------------------------------------------------------------------


def test_samples_agree_with_the_latency_distributions(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Every sample list has the n, min, max and mean of the report's ms latency distribution."""
    rep = _replay(cli, tmp_path / "r.json", SPEC, "--policy", "sarathi-serve", "--seed", "1")
    metrics = rep["results"][0]["metrics"]
    names = {"queue_delay": "queue_delay", "ttft": "ttft", "tbt": "tbt", "tpot": "tpot"}
    names["e2e_latency"] = "e2e"
    assert sorted(metrics["samples"]) == sorted(names)
    assert set(metrics["units"].values()) == {"ms"}
    for sample, latency in names.items():
        values = metrics["samples"][sample]
        dist = metrics["latency"][latency]["ms"]
        assert len(values) == dist["n"], sample
        assert min(values) == dist["min"] and max(values) == dist["max"], sample
        assert math.fsum(values) / len(values) == pytest.approx(dist["mean"], abs=1e-6), sample
    assert rep["summary"]["coordinates"]["metric"]["unit"] == "ms"


def test_tick_clock_samples_are_ticks_matching_each_request(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """A tick clock without tick_ms gives tick samples equal to the per-request values."""
    rep = _replay(cli, tmp_path / "r.json", ABC, "--policy", "orca")
    metrics = rep["results"][0]["metrics"]
    assert set(metrics["units"].values()) == {"tick"}
    assert rep["summary"]["coordinates"]["metric"]["unit"] == "tick"
    per_request = [metrics["requests"][rid]["e2e"] for rid in ("A", "B", "C")]
    assert metrics["samples"]["e2e_latency"] == per_request
    assert metrics["samples"]["ttft"] == [metrics["requests"][r]["ttft"] for r in "ABC"]


def test_coordinates_name_workload_policy_budgets_and_cost_model(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """The coordinates carry the workload sha256, offered load, policy, budgets and cost model."""
    rep = _replay(
        cli, tmp_path / "r.json", SPEC, "--policy", "orca", "--seed", "3", "--horizon", "500"
    )
    coords = rep["summary"]["coordinates"]
    [digest] = rep["inputs"]
    assert coords["workload"] == f"compare-poisson generator spec sha256:{digest['sha256']}"
    assert json.loads(coords["load"])["offered"]["arrivals"] == {
        "process": "poisson",
        "rate_per_s": 900,
    }
    policy = json.loads(coords["run"]["policy"])
    assert (policy["id"], policy["version"], policy["options"]) == ("orca", "1", {})
    assert json.loads(coords["run"]["budgets"]) == {"sequence_budget": 8, "token_budget": 64}
    assert json.loads(coords["run"]["cost_model"])["name"] == "unit"
    assert coords["run"]["horizon"] == "500"
    assert coords["evidence_class"] == "synthetic"
    assert coords["slo"] == "none"
    assert coords["model"].startswith("none: the unit cost model")
    assert coords["recorded"]["seed"] == 3
    assert coords["recorded"]["workload_kind"] == "generator"


def test_roofline_coordinates_carry_model_and_hardware_profiles(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Under the roofline, model and hardware coordinates are the profiles; class `modeled`."""
    rep = _replay(
        cli,
        tmp_path / "r.json",
        SPEC,
        "--policy",
        "orca",
        "--cost-model",
        "roofline",
        "--cost-option",
        "hardware=nvidia-h100-sxm",
    )
    coords = rep["summary"]["coordinates"]
    assert json.loads(coords["model"])["profile"]["profile_id"] == "llama-3-8b-gqa-fp16"
    assert json.loads(coords["hardware_parallelism"])["profile"]["profile_id"] == (
        "nvidia-h100-sxm"
    )
    assert coords["evidence_class"] == rep["results"][0]["evidence_class"]


def test_trace_backed_generator_binds_the_trace_file(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """A generator that reads a CSV trace lists it as an input and in the workload coordinate."""
    rep = _replay(cli, tmp_path / "r.json", TRACE_SPEC, "--policy", "orca")
    paths = {Path(d["path"]).name: d["sha256"] for d in rep["inputs"]}
    assert set(paths) == {"gen_trace_wrap.yaml", "azure_small.csv"}
    assert (
        f"azure_small.csv sha256:{paths['azure_small.csv']}"
        in (rep["summary"]["coordinates"]["workload"])
    )


def test_trace_csv_is_identified_by_its_sha256(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A trace CSV replays with a `trace` workload coordinate and its seed only recorded."""
    trace = tmp_path / "t.csv"
    trace.write_text(
        "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,8,3\n0.001,4,2\n", encoding="utf-8"
    )
    rep = _replay(cli, tmp_path / "r.json", trace, "--policy", "orca", "--seed", "9")
    coords = rep["summary"]["coordinates"]
    [digest] = rep["inputs"]
    assert coords["workload"] == f"t trace sha256:{digest['sha256']}"
    assert coords["recorded"]["workload_kind"] == "trace"
    assert coords["recorded"]["seed_role"] == rc.SEED_ROLE_FIXED
    assert rep["results"][0]["metrics"]["samples"]["ttft"] == [1, 1]


def test_goodput_limits_are_the_slo_coordinate(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--goodput limits appear in the slo coordinate; without them it is `none`."""
    rep = _replay(cli, tmp_path / "r.json", SPEC, "--policy", "orca", "--goodput", "ttft:5")
    assert json.loads(rep["summary"]["coordinates"]["slo"]) == {"goodput_ms": {"ttft_ms": 5.0}}


def test_no_samples_keeps_the_coordinates(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--no-samples leaves the samples out but still states the coordinates."""
    rep = _replay(cli, tmp_path / "r.json", ABC, "--policy", "orca", "--no-samples")
    assert "samples" not in rep["results"][0]["metrics"]
    assert rep["summary"]["coordinates"]["run"]["preemption"] == "recompute"


def test_report_with_samples_is_byte_identical(cli: Callable[..., Any], tmp_path: Path) -> None:
    """The same generator spec, seed and policy give a byte-identical report."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        _replay(cli, out, SPEC, "--policy", "sarathi-serve", "--seed", "5")
    assert a.read_bytes() == b.read_bytes()


def test_generator_seed_draws_a_new_repeat(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Two seeds give different samples under the same workload coordinate."""
    a = _replay(cli, tmp_path / "a.json", SPEC, "--policy", "orca", "--seed", "1")
    b = _replay(cli, tmp_path / "b.json", SPEC, "--policy", "orca", "--seed", "2")
    ma, mb = a["results"][0]["metrics"], b["results"][0]["metrics"]
    assert ma["samples"]["ttft"] != mb["samples"]["ttft"]
    assert a["summary"]["coordinates"]["workload"] == b["summary"]["coordinates"]["workload"]
    assert (
        a["summary"]["coordinates"]["recorded"]["seed"],
        b["summary"]["coordinates"]["recorded"]["seed"],
    ) == (1, 2)


def test_gate_replay_metrics_stay_without_samples() -> None:
    """The `replay` gate kind's metrics (its expected files) carry no samples."""
    path = BUNDLE / "loop3" / "checks.yaml"
    ctx = GateContext(
        base_dir=path.parent, manifest=str(path), pointer="/checks/1", bundle_root=BUNDLE
    )
    spec = {"id": "t", "kind": "replay", "workload": "abc.workload.yaml", "policy": "orca"}
    [res] = run_entry(REPLAY, spec, ctx)
    assert "samples" not in res.metrics and "units" not in res.metrics


# --- bad input ------------------------------------------------------------------------------


def test_generator_without_seed_is_a_located_error(
    cli_proc: Callable[..., Any], tmp_path: Path
) -> None:
    """A generator spec with no seed and no --seed exits 2 with GEN.SPEC.NO_SEED; no output."""
    data = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    del data["seed"]
    spec = tmp_path / "noseed.yaml"
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "r.json"
    r = cli_proc("replay", spec, "--policy", "orca", "-f", "json", "-o", out)
    assert r.code == 2
    assert "GEN.SPEC.NO_SEED" in r.err and str(spec) in r.err
    assert "Traceback" not in r.err
    assert not out.exists()


def test_bad_manifest_is_still_located(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A manifest with an unknown clock unit exits 2 with a located schema or workload code."""
    data = yaml.safe_load(ABC.read_text(encoding="utf-8"))
    data["clock"]["unit"] = "fortnight"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    r = cli("replay", bad, "--policy", "orca")
    assert r.code == 2
    assert "SCHEMA.ENUM" in r.err and "/clock/unit" in r.err


# --- end to end through compare-results ------------------------------------------------------


def test_two_policies_are_refused_naming_the_policy(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Two policies on one workload: refused on run.policy alone; --fail-on incomparable exits 1."""
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    _replay(cli, a, SPEC, "--policy", "sarathi-serve", "--seed", "1")
    _replay(cli, b, SPEC, "--policy", "orca", "--seed", "1")
    code, rep = _compare(cli, a, b)
    assert code == 0
    pair = rep["results"][0]["metrics"]
    assert pair["comparable"] is False and pair["ranking_produced"] is False
    assert _differing(rep) == ["run.policy"]
    assert {"COMPARE.COORDINATE.DIFFERS", "COMPARE.INCOMPARABLE"} <= _codes(rep)
    assert "points" not in pair
    finding = next(
        f for f in rep["results"][0]["findings"] if f["code"] == "COMPARE.COORDINATE.DIFFERS"
    )
    assert finding["location"]["pointer"] == "/summary/coordinates/run/policy"
    code, _ = _compare(cli, a, b, "--fail-on", "incomparable")
    assert code == 1


@pytest.mark.parametrize(
    ("extra", "coordinate"),
    [
        (("--cost-option", "tick_ms=2"), "run.cost_model"),
        (("--budget", "sequence_budget=4"), "run.budgets"),
        (("--horizon", "50"), "run.horizon"),
        (("--goodput", "ttft:5"), "slo"),
    ],
)
def test_a_changed_run_option_is_refused(
    cli: Callable[..., Any], tmp_path: Path, extra: tuple[str, str], coordinate: str
) -> None:
    """The same policy and workload under another cost option, budget, horizon or SLO is refused."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _replay(cli, a, SPEC, "--policy", "orca", "--seed", "1")
    _replay(cli, b, SPEC, "--policy", "orca", "--seed", "1", *extra)
    _, rep = _compare(cli, a, b)
    assert _differing(rep) == [coordinate]
    assert "COMPARE.INCOMPARABLE" in _codes(rep)


def test_two_seeds_are_comparable_repeats_with_statistics(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Two seeds of one spec under one policy: comparable, medians, CIs and U tests per metric."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _replay(cli, a, SPEC, "--policy", "sarathi-serve", "--seed", "1")
    _replay(cli, b, SPEC, "--policy", "sarathi-serve", "--seed", "2")
    code, rep = _compare(cli, a, b)
    assert code == 0
    pair = rep["results"][0]["metrics"]
    assert pair["comparable"] is True and pair["differing_coordinates"] == []
    rows = {row["point"]: row for row in pair["points"]}
    assert sorted(rows) == ["e2e_latency", "queue_delay", "tbt", "tpot", "ttft"]
    for row in rows.values():
        assert row["unit"] == "ms" and row["direction"] == "lower_is_better"
        assert row["p_value"] is not None and row["test"].startswith("mann-whitney-u normal")
        assert row["a"]["ci"] is not None and row["b"]["ci"] is not None
    assert rows["ttft"]["a"]["n"] == rows["ttft"]["b"]["n"] == 80
    assert "COMPARE.INCOMPARABLE" not in _codes(rep)


def test_same_inputs_at_another_time_are_all_no_change(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """A manifest replayed twice (its seed only recorded) is comparable and `~` everywhere."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _replay(cli, a, ABC, "--policy", "orca", "--seed", "1")
    _replay(cli, b, ABC, "--policy", "orca", "--seed", "2")
    _, rep = _compare(cli, a, b)
    pair = rep["results"][0]["metrics"]
    assert pair["comparable"] is True
    assert {row["verdict"] for row in pair["points"]} == {"~"}


def test_slower_samples_at_equal_coordinates_are_a_regression(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """The same coordinates with TTFT samples 50% slower (a code change) give COMPARE.REGRESSION."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    data = _replay(cli, a, SPEC, "--policy", "sarathi-serve", "--seed", "1")
    samples = data["results"][0]["metrics"]["samples"]
    samples["ttft"] = [v * 1.5 for v in samples["ttft"]]
    b.write_text(json.dumps(data), encoding="utf-8")
    code, rep = _compare(cli, a, b, "--fail-on", "regression")
    assert code == 1
    rows = {row["point"]: row for row in rep["results"][0]["metrics"]["points"]}
    assert rows["ttft"]["verdict"] == "regression"
    assert rows["e2e_latency"]["verdict"] == "~"
    assert "COMPARE.REGRESSION" in _codes(rep)


# --- the gate kind and the bundle checks ----------------------------------------------------


def _checks() -> list[dict[str, Any]]:
    data = yaml.safe_load((COMPARE / "checks.yaml").read_text(encoding="utf-8"))
    checks: list[dict[str, Any]] = data["checks"]
    return checks


def _ctx(base: Path, bundle: Path, i: int, update: bool = False) -> GateContext:
    return GateContext(
        base_dir=base,
        manifest=str(base / "checks.yaml"),
        pointer=f"/checks/{i}",
        bundle_root=bundle,
        update=update,
    )


def test_shipped_compare_checks_pass() -> None:
    """Every check of compare/checks.yaml passes against the reports and expected files on disk."""
    from repo_paths import loop_checks, run_declared

    for check in loop_checks("compare"):
        for res in run_declared(check):
            assert res.outcome.value == "passed", (check.check_id, res.findings)
            assert res.evidence_class.value == check.entry["evidence_class"]


def test_stale_replay_report_is_drift(tmp_path: Path) -> None:
    """A checked-in report whose samples no longer match the replay is GATE.EXPECTED.DRIFT."""
    bundle = tmp_path / "bundle"
    shutil.copytree(COMPARE, bundle / "compare")
    report = bundle / "compare" / "reports" / "orca-seed1.json"
    data = json.loads(report.read_text(encoding="utf-8"))
    data["results"][0]["metrics"]["samples"]["ttft"][0] += 1
    report.write_text(json.dumps(data), encoding="utf-8")
    i, spec = next(
        (i, s) for i, s in enumerate(_checks()) if s["id"] == "compare-replay-orca-seed1"
    )
    [res] = run_entry(REPLAY_REPORT, spec, _ctx(bundle / "compare", bundle, i))
    assert [f.code for f in res.findings] == ["GATE.EXPECTED.DRIFT"]
    [res] = run_entry(REPLAY_REPORT, spec, _ctx(bundle / "compare", bundle, i, update=True))
    assert (bundle / "compare" / "reports" / "orca-seed1.json").read_bytes() == (
        COMPARE / "reports" / "orca-seed1.json"
    ).read_bytes()


@pytest.mark.parametrize(
    ("change", "field"),
    [({"report": None}, "report"), ({"workload": 3}, "workload"), ({"samples": "yes"}, "samples")],
)
def test_bad_replay_report_spec_is_unusable(change: dict[str, Any], field: str) -> None:
    """A missing report, a non-path workload or non-boolean samples is GATE.SPEC.INVALID."""
    spec = {**_checks()[0], **change}
    with pytest.raises(InputError) as err:
        run_entry(REPLAY_REPORT, spec, _ctx(COMPARE, BUNDLE, 0))
    [finding] = err.value.findings
    assert finding.code == "GATE.SPEC.INVALID"
    assert finding.location.pointer == f"/checks/0/{field}"


def test_initial_state_and_horizon_are_run_coordinates(tmp_path: Path) -> None:
    """A replay_report from an initial state names it and the horizon under `run`."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE / "loop6-starvation", bundle / "loop6")
    spec = {
        "id": "t",
        "kind": "replay_report",
        "workload": "pressure.workload.yaml",
        "policy": "decode-first",
        "options": {"horizon": 4, "initial_state": "initial.state.json"},
        "report": "reports/t.json",
    }
    [res] = run_entry(REPLAY_REPORT, spec, _ctx(bundle / "loop6", bundle, 0, update=True))
    assert [f.code for f in res.findings] == ["GATE.EXPECTED.UPDATED"]
    report = json.loads((bundle / "loop6" / "reports" / "t.json").read_text(encoding="utf-8"))
    run = report["summary"]["coordinates"]["run"]
    assert run["horizon"] == "4"
    views = json.loads(run["initial_state"])
    assert views["D1"]["queue"] == "running" and views["P"]["queue"] == "waiting"
    assert res.metrics["coordinates"] == report["summary"]["coordinates"]


# --- summaries by default, samples streamed beside the report ------------------------------


def _plain(cli: Callable[..., Any], out: Path, *args: str) -> dict[str, Any]:
    r = cli(
        "replay", SPEC, "--policy", "sarathi-serve", "--seed", "1", *args, "-f", "json", "-o", out
    )
    assert r.code == 0, r.err
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def test_default_report_holds_summaries_only(cli: Callable[..., Any], tmp_path: Path) -> None:
    metrics = _plain(cli, tmp_path / "r.json")["results"][0]["metrics"]
    assert "samples" not in metrics and "requests" not in metrics
    assert metrics["latency"]["tbt"]["n"] > 0


def test_samples_out_gives_the_inline_samples(cli: Callable[..., Any], tmp_path: Path) -> None:
    """The streamed file holds the same samples as the inline ones (tbt as ascending counts),
    and compare-results reads them from there with the same statistics."""
    inline = _replay(cli, tmp_path / "i.json", SPEC, "--policy", "sarathi-serve", "--seed", "1")
    streamed = _plain(cli, tmp_path / "s.json", "--samples-out", str(tmp_path / "s.jsonl"))
    ref = streamed["results"][0]["metrics"]["samples_file"]
    assert ref["path"] == "s.jsonl" and len(ref["sha256"]) == 64
    from cbaudit.io.replay_samples import read_samples

    read, unit = read_samples(str(tmp_path / "s.json"), ref, "")
    want = inline["results"][0]["metrics"]["samples"]
    assert {k: v for k, v in read.items() if k != "tbt"} == {
        k: v for k, v in want.items() if k != "tbt"
    }
    assert read["tbt"] == sorted(want["tbt"])
    assert unit == inline["results"][0]["metrics"]["units"]["tbt"]
    other = _plain(cli, tmp_path / "o.json", "--samples-out", str(tmp_path / "o.jsonl"))
    code, rep = _compare(cli, tmp_path / "s.json", tmp_path / "o.json")
    assert code == 0 and "COMPARE.REPLAY.NO_SAMPLES" not in _codes(rep)
    assert other["results"][0]["metrics"]["samples_file"]["sha256"] == ref["sha256"]
    code_i, rep_i = _compare(cli, tmp_path / "i.json", tmp_path / "s.json")
    assert code_i == 0
    assert rep_i["results"][0]["metrics"]["points"] == rep["results"][0]["metrics"]["points"]


def test_samples_out_is_byte_identical(cli: Callable[..., Any], tmp_path: Path) -> None:
    for name in ("a", "b"):
        _plain(cli, tmp_path / f"{name}.json", "--samples-out", str(tmp_path / f"{name}.jsonl"))
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        ("append", "COMPARE.REPLAY.SAMPLES_FILE.CHANGED"),
        ("delete", "COMPARE.REPLAY.SAMPLES_FILE"),
    ],
)
def test_a_changed_or_missing_samples_file_is_refused(
    cli: Callable[..., Any], tmp_path: Path, damage: str, code: str
) -> None:
    for name in ("a", "b"):
        _plain(cli, tmp_path / f"{name}.json", "--samples-out", str(tmp_path / f"{name}.jsonl"))
    target = tmp_path / "a.jsonl"
    if damage == "append":
        target.write_bytes(target.read_bytes() + b"{}\n")
    else:
        target.unlink()
    r = cli("compare-results", tmp_path / "a.json", tmp_path / "b.json", "-f", "json")
    assert r.code == 2
    assert code in r.err


def test_a_malformed_samples_file_is_refused(tmp_path: Path) -> None:
    import hashlib

    from cbaudit.io.replay_samples import read_samples

    body = b'{"format":"cbaudit-replay-samples","version":1,"unit":"ms"}\n{"ttft":1}\n'
    (tmp_path / "x.jsonl").write_bytes(body)  # no tbt line: truncated
    ref = {"path": "x.jsonl", "sha256": hashlib.sha256(body).hexdigest()}
    with pytest.raises(InputError) as err:
        read_samples(str(tmp_path / "r.json"), ref, "/p")
    assert [f.code for f in err.value.findings] == ["COMPARE.REPLAY.SAMPLES_FILE.FORMAT"]
