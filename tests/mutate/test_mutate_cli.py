"""`cbaudit mutate`: exit codes, formats, determinism, bundle mode, unusable input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _mutate_paths import BUNDLE, LOOP2_VALID, LOOP6

from cbaudit.io.schemas import validate


def test_fixture_campaign_passes(cli: Callable[..., Any]) -> None:
    """Every mutant of the Loop 2 case is detected: exit 0 with the score in the summary."""
    r = cli("mutate", LOOP2_VALID, "--format", "json")
    assert r.code == 0, r.out
    report = json.loads(r.out)
    assert report["summary"]["score"] == 100.0
    assert report["results"][0]["check"] == "mutation"
    assert report["results"][0]["charts"][0]["type"] == "matrix"


def test_json_is_byte_identical_across_runs(cli: Callable[..., Any]) -> None:
    """Same inputs and seed give byte-identical JSON, with or without worker processes."""
    one = cli("mutate", LOOP6, "--format", "json", "--seed", "4").out
    two = cli("mutate", LOOP6, "--format", "json", "--seed", "4", "--jobs", "2").out
    assert one == two


def test_stryker_format_validates(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--format stryker -o FILE writes the public report shape."""
    out = tmp_path / "mutation.json"
    r = cli("mutate", LOOP2_VALID, "--format", "stryker", "-o", out, "--operators", "plan.ledger")
    assert r.code == 0
    data = json.loads(out.read_text())
    assert validate(data, "mutation-report") == []
    [entry] = data["files"].values()
    assert {m["mutatorName"] for m in entry["mutants"]} == {
        "plan.ledger.tokens-drift",
        "plan.ledger.sequences-drift",
        "plan.ledger.token-budget-drift",
        "plan.ledger.sequence-budget-drift",
    }


def test_survivor_exits_one_and_prints_the_patch(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A fixture whose baseline already has the code lets that operator's mutants survive."""
    data = json.loads(LOOP2_VALID.read_text())
    data["plan"]["decision_id"] = 4  # already PLAN.DECISION.MISMATCH before any mutation
    data.pop("result")
    case = tmp_path / "dirty.case.json"
    case.write_text(json.dumps(data, indent=1))
    r = cli("mutate", case, "--operators", "plan.decision")
    assert r.code == 1
    assert "MUTATE.BASELINE.NOT_CLEAN" in r.out
    assert "MUTATE.MUTANT.SURVIVED" in r.out and '"path":"/plan/decision_id"' in r.out


def test_break_threshold(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--break PCT fails a campaign whose score is below PCT."""
    data = json.loads(LOOP2_VALID.read_text())
    data["plan"]["decision_id"] = 4
    data.pop("result")
    case = tmp_path / "dirty.case.json"
    case.write_text(json.dumps(data))
    r = cli(
        "mutate",
        case,
        "--operators",
        "plan.decision",
        "--operators",
        "plan.ledger",
        "--break",
        "95",
        "-f",
        "json",
    )
    assert r.code == 1
    codes = {f["code"] for res in json.loads(r.out)["results"] for f in res["findings"]}
    assert "MUTATE.SCORE.BELOW_BREAK" in codes


def test_bundle_runs_fixtures_and_declared_negatives(cli: Callable[..., Any]) -> None:
    """A bundle path mutates every valid fixture and runs each declared negative."""
    r = cli(
        "mutate", BUNDLE, "--format", "json", "--operators", "plan.interval", "--operators", "chunk"
    )
    report = json.loads(r.out)
    results = {(x["check"], x["subject"]): x for x in report["results"]}
    assert results[("mutation", str(BUNDLE))]["status"] == "passed"
    loop2 = results[("declared-negatives", "loop 2")]
    assert loop2["status"] == "passed"
    assert loop2["metrics"]["declared"] == loop2["metrics"]["rejected_as_declared"] >= 54
    assert "loop6/chunked_prefill.yaml" in report["summary"]["fixtures"]


def test_relations_only(cli: Callable[..., Any]) -> None:
    """--relation all runs the four metamorphic relations, each its own result line."""
    r = cli("mutate", "--relation", "all", "--format", "json")
    assert r.code == 0, r.out
    subjects = [x["subject"] for x in json.loads(r.out)["results"]]
    assert subjects == [
        "hidden-output-invariance",
        "request-order-permutation",
        "time-scaling",
        "chunk-partition-invariance",
    ]


def test_unusable_fixture_exits_two(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Malformed input is a located one-line message and exit 2, never a traceback."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"workload": ')
    r = cli("mutate", bad)
    assert r.code == 2
    assert "bad.json" in r.err and "Traceback" not in r.err


def test_unrecognised_fixture_exits_two(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A fixture no target recognises is MUTATE.FIXTURE.UNKNOWN_TARGET, exit 2."""
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    r = cli("mutate", other)
    assert r.code == 2 and "MUTATE.FIXTURE.UNKNOWN_TARGET" in r.err


def test_usage_errors_exit_two(cli: Callable[..., Any]) -> None:
    """No PATH and no relation, an unknown operator or relation: exit 2."""
    assert cli("mutate").code == 2
    assert cli("mutate", LOOP2_VALID, "--operators", "nope").code == 2
    assert cli("mutate", "--relation", "nope").code == 2


def test_stryker_output_file_not_half_written(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A failing invocation leaves no output file behind."""
    out = tmp_path / "m.json"
    assert cli("mutate", tmp_path / "missing.json", "-f", "stryker", "-o", out).code == 2
    assert not out.exists()


def test_list_operators(cli: Callable[..., Any]) -> None:
    """--list-operators prints one line per operator with its expected code."""
    r = cli("mutate", "--list-operators")
    assert r.code == 0
    line = next(x for x in r.out.splitlines() if x.startswith("plan.decode.two-rows"))
    assert "PLAN.DECODE.MULTI_ROW" in line


def test_target_is_checked_and_refused_for_a_bundle(cli: Callable[..., Any]) -> None:
    """An unknown --target, or --target with a bundle directory, is a usage error (exit 2)."""
    r = cli("mutate", LOOP2_VALID, "--target", "plan-cas")
    assert r.code == 2 and "--target 'plan-cas' is not one of" in r.err
    r = cli("mutate", BUNDLE, "--target", "plan-case")
    assert r.code == 2 and "bundle directory" in r.err
