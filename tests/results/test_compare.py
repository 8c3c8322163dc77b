"""compare-results: comparability refusals, statistics, footnotes and exit codes."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cbaudit.model import EvidenceClass, Finding, Location, Severity
from cbaudit.results.compare import (
    CompareOptions,
    _footnote_findings,
    _Footnotes,
    _pair_reason,
    _point_result,
    _point_rows,
    _refusal,
    _regressions,
    _verdict_counts,
)
from cbaudit.results.sample_model import Point, SampleSet
from tests.conftest import EVIDENCE
from tests.results._records import record, spread, write


def _json(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out)
    return data


def _pair(report: dict[str, Any]) -> dict[str, Any]:
    pair: dict[str, Any] = report["results"][0]["metrics"]
    return pair


def _codes(report: dict[str, Any]) -> list[str]:
    return [f["code"] for r in report["results"] for f in r["findings"]]


def test_regression_improvement_and_no_difference(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A 5% slower point is a regression, a faster one an improvement, a same one is ~."""
    a = write(
        tmp_path / "a.json", record("a", {"p1": spread(1.0), "p2": spread(2.0), "p3": spread(3.0)})
    )
    b = write(
        tmp_path / "b.json",
        record("b", {"p1": spread(1.05), "p2": spread(1.9), "p3": spread(3.0, step=0.0011)}),
    )
    r = cli("compare-results", a, b, "-f", "json")
    assert r.code == 0
    rep = _json(r.out)
    rows = {row["point"]: row for row in _pair(rep)["points"]}
    assert rows["p1"]["verdict"] == "regression"
    assert rows["p2"]["verdict"] == "improvement"
    assert rows["p3"]["verdict"] == "~"
    assert rows["p1"]["test"].startswith("mann-whitney-u exact")
    assert rows["p1"]["a"]["n"] == 12 and rows["p1"]["a"]["ci"] is not None
    med = {k: statistics.median(v) for k, v in (("a1", spread(1.0)), ("b1", spread(1.05)))}
    assert rows["p1"]["change_pct"] == pytest.approx((med["b1"] - med["a1"]) / med["a1"] * 100)
    assert "COMPARE.REGRESSION" in _codes(rep)
    geo = _pair(rep)["geomean"]["step_time"]
    assert geo["points"] == 3
    pairs = (
        (spread(1.0), spread(1.05)),
        (spread(2.0), spread(1.9)),
        (spread(3.0), spread(3.0, step=0.0011)),
    )
    ratios = [statistics.median(b) / statistics.median(a) for a, b in pairs]
    assert geo["ratio"] == pytest.approx(statistics.geometric_mean(ratios))


def test_fail_on_regression_exits_one(cli: Callable[..., Any], tmp_path: Path) -> None:
    """--fail-on regression turns a significant regression into exit 1 with an error finding."""
    a = write(tmp_path / "a.json", record("a", {"p": spread(1.0)}))
    b = write(tmp_path / "b.json", record("b", {"p": spread(1.2)}))
    assert cli("compare-results", a, b).code == 0
    r = cli("compare-results", a, b, "--fail-on", "regression", "-f", "json")
    assert r.code == 1
    errors = [
        f for res in _json(r.out)["results"] for f in res["findings"] if f["severity"] == "error"
    ]
    assert [f["code"] for f in errors] == ["COMPARE.REGRESSION"]


def test_min_change_suppresses_small_changes(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A significant 2% change is ~ under --min-change 5."""
    a = write(tmp_path / "a.json", record("a", {"p": spread(1.0)}))
    b = write(tmp_path / "b.json", record("b", {"p": spread(1.02)}))
    rows = _pair(_json(cli("compare-results", a, b, "--min-change", "5", "-f", "json").out))[
        "points"
    ]
    assert rows[0]["verdict"] == "~" and rows[0]["p_value"] < 0.05


def test_higher_is_better_direction(cli: Callable[..., Any], tmp_path: Path) -> None:
    """For a higher-is-better metric a lower median is the regression."""
    metric = {
        "name": "token_throughput",
        "unit": "tokens/s",
        "denominator": "window",
        "percentile": "median",
    }
    a = write(tmp_path / "a.json", record("a", {"p": spread(100.0, step=0.1)}, metric=metric))
    b = write(tmp_path / "b.json", record("b", {"p": spread(90.0, step=0.1)}, metric=metric))
    row = _pair(_json(cli("compare-results", a, b, "-f", "json").out))["points"][0]
    assert row["direction"] == "higher_is_better" and row["verdict"] == "regression"


def test_footnotes_few_samples_variance_and_point_sets(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Three samples, a noisy point and a one-sided point each get a numbered footnote."""
    a = write(
        tmp_path / "a.json",
        record(
            "a", {"few": [1.0, 1.1, 1.2], "noisy": spread(1.0, step=0.05), "only-a": spread(1.0)}
        ),
    )
    b = write(
        tmp_path / "b.json", record("b", {"few": [1.3, 1.4, 1.5], "noisy": spread(1.0, step=0.05)})
    )
    rep = _json(cli("compare-results", a, b, "-f", "json").out)
    notes = {n["kind"]: n["n"] for n in _pair(rep)["footnotes"]}
    assert set(notes) == {"few", "noisy", "only_a"}
    rows = {row["point"]: row for row in _pair(rep)["points"]}
    assert notes["few"] in rows["few"]["footnotes"]
    assert rows["few"]["verdict"] == "~"  # p = 0.1 at n = 3 + 3: never below 0.05
    assert notes["noisy"] in rows["noisy"]["footnotes"]
    assert rows["only-a"]["verdict"] == "not compared"
    assert {"COMPARE.NOTE.FEW", "COMPARE.NOTE.NOISY", "COMPARE.NOTE.ONLY_A"} <= set(_codes(rep))


def test_single_value_shown_without_significance(cli: Callable[..., Any], tmp_path: Path) -> None:
    """n = 1 on a side: values shown, no test, no verdict."""
    a = write(tmp_path / "a.json", record("a", {"p": [1.0]}))
    b = write(tmp_path / "b.json", record("b", {"p": [2.0]}))
    row = _pair(_json(cli("compare-results", a, b, "-f", "json").out))["points"][0]
    assert row["p_value"] is None and row["verdict"] == "not tested"
    assert row["a"]["n"] == 1 and row["a"]["ci"] is None


def test_incomparable_lists_every_differing_coordinate(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """Differing model, load and evidence class: no ranking, each difference with both values."""
    a = write(tmp_path / "a.json", record("a", {"p": spread(1.0)}))
    b = write(
        tmp_path / "b.json",
        record("b", {"p": spread(2.0)}, model="other", load="busy", evidence_class="measured_cpu"),
    )
    r = cli("compare-results", a, b, "-f", "json")
    assert r.code == 0
    pair = _pair(_json(r.out))
    assert pair["comparable"] is False and "points" not in pair
    diffs = {d["coordinate"]: (d["a"], d["b"]) for d in pair["differing_coordinates"]}
    assert diffs == {
        "model": ("toy-model", "other"),
        "load": ("one step per sample", "busy"),
        "evidence_class": ("synthetic", "measured_cpu"),
    }
    codes = _codes(_json(r.out))
    assert codes.count("COMPARE.COORDINATE.DIFFERS") == 3 and "COMPARE.INCOMPARABLE" in codes
    assert cli("compare-results", a, b, "--fail-on", "incomparable").code == 1


def test_unreported_coordinates_never_match(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Two `unreported` workloads are not equal: the pair is refused."""
    a = write(tmp_path / "a.json", record("a", {"p": spread(1.0)}, workload="unreported"))
    b = write(tmp_path / "b.json", record("b", {"p": spread(1.0)}, workload="unreported"))
    rep = _json(cli("compare-results", a, b, "-f", "json").out)
    assert _pair(rep)["comparable"] is False
    assert "COMPARE.COORDINATE.UNREPORTED" in _codes(rep)


def test_manifest_mismatch_refused_unless_allowed(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A differing dtype refuses the comparison; --allow dtype accepts it and records it."""
    man = {
        "gpu": "H200",
        "dtype": "bfloat16",
        "torch": "2.13.0",
        "cuda": "12.8",
        "geometry": "8b",
        "backend": "varlen",
        "graph_mode": "graph",
    }
    ra = record("a", {"p": spread(1.0)})
    rb = record("b", {"p": spread(1.0)})
    ra["manifest"] = man
    rb["manifest"] = {**man, "dtype": "float16"}
    a, b = write(tmp_path / "a.json", ra), write(tmp_path / "b.json", rb)
    rep = _json(cli("compare-results", a, b, "-f", "json").out)
    assert _pair(rep)["comparable"] is False
    assert "COMPARE.MANIFEST.MISMATCH" in _codes(rep)
    ok = _json(cli("compare-results", a, b, "--allow", "dtype", "-f", "json").out)
    assert _pair(ok)["comparable"] is True
    assert _pair(ok)["manifest_allowed"] == ["dtype"]
    assert "COMPARE.MANIFEST.ALLOWED" in _codes(ok)


def test_replay_report_adapter(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A replay JSON report with one sampled result compares per metric."""
    coords = {
        "model": "m",
        "hardware_parallelism": "h",
        "workload": "w",
        "baseline": "b",
        "metric": {
            "name": "per-request",
            "unit": "s",
            "denominator": "request",
            "percentile": "median",
        },
        "slo": "s",
        "load": "l",
        "evidence_class": "synthetic",
    }

    def rep(values: list[float]) -> Path:
        doc = {
            "command": "replay",
            "summary": {"coordinates": coords},
            "results": [
                {
                    "subject": "fcfs",
                    "metrics": {"samples": {"ttft": values}, "units": {"ttft": "s"}},
                }
            ],
        }
        path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        return path

    a, b = rep(spread(1.0)), rep(spread(1.5))
    row = _pair(_json(cli("compare-results", a, b, "-f", "json").out))["points"][0]
    assert row["point"] == "ttft" and row["verdict"] == "regression"


def test_bench_results_adapter(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Two bench files: identical samples are ~ everywhere; a dtype change is refused."""
    src = EVIDENCE / "m5-2-continuous-batching" / "bench" / "results-cpu-tiny.json"
    if not src.is_file():
        pytest.skip("the bench helper's results file is not in this tree")
    a = tmp_path / "a.json"
    shutil.copy(src, a)
    same = _json(cli("compare-results", a, src, "-f", "json").out)
    assert _pair(same)["comparable"] is True
    assert {row["verdict"] for row in _pair(same)["points"]} == {"~"}
    data = json.loads(src.read_text())
    data["manifest"]["backend"] = "flex"
    b = tmp_path / "b.json"
    b.write_text(json.dumps(data), encoding="utf-8")
    refused = _json(cli("compare-results", a, b, "-f", "json").out)
    assert _pair(refused)["comparable"] is False
    assert [d["field"] for d in _pair(refused)["manifest_differences"]] == ["backend"]


def test_json_output_is_deterministic(cli: Callable[..., Any], tmp_path: Path) -> None:
    """The same inputs give byte-identical JSON, written atomically with -o."""
    a = write(tmp_path / "a.json", record("a", {"p": spread(1.0), "q": spread(2.0)}))
    b = write(tmp_path / "b.json", record("b", {"p": spread(1.1), "q": spread(2.0)}))
    out1, out2 = tmp_path / "o1.json", tmp_path / "o2.json"
    assert cli("compare-results", a, b, "-f", "json", "-o", out1).code == 0
    assert cli("compare-results", a, b, "-f", "json", "-o", out2).code == 0
    assert out1.read_bytes() == out2.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (
            '{"kind": "cbaudit.result-records", "schema_version": 1, "records": [{"id": "x"}]}',
            "SCHEMA.REQUIRED",
        ),
        ('{"hello": 1}', "COMPARE.INPUT.UNKNOWN_TYPE"),
    ],
)
def test_unusable_input_exits_two_with_location(
    cli: Callable[..., Any], tmp_path: Path, content: str, code: str
) -> None:
    """Bad input is a located one-line message and exit 2, never a traceback."""
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    good = write(tmp_path / "good.json", record("g", {"p": spread(1.0)}))
    r = cli("compare-results", bad, good)
    assert r.code == 2
    assert code in r.err and "bad.json" in r.err and "Traceback" not in r.err


def test_ambiguous_file_and_bad_options_exit_two(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Two records without #ID, an unknown --allow field and a bad --fail-on are exit 2."""
    two = write(
        tmp_path / "two.json", record("x", {"p": spread(1.0)}), record("y", {"p": spread(1.0)})
    )
    r = cli("compare-results", two, two)
    assert r.code == 2 and "COMPARE.INPUT.AMBIGUOUS" in r.err
    assert cli("compare-results", f"{two}#x", f"{two}#y").code == 0
    assert cli("compare-results", f"{two}#x", f"{two}#y", "--allow", "colour").code == 2
    assert cli("compare-results", f"{two}#x", f"{two}#y", "--fail-on", "slowness").code == 2
    assert cli("compare-results", f"{two}#x", f"{two}#nope").code == 2


def test_registry_shorthand_without_suffix(cli) -> None:  # type: ignore[no-untyped-def]
    """`--registry registry:NAME` finds the shipped NAME.yaml."""
    r = cli("compare-results", "--registry", "registry:source_reported_results", "--format", "json")
    assert r.code == 0, r.err


# The named steps of compare_pair, one at a time.


def _set(label: str, points: dict[str, list[float]]) -> SampleSet:
    return SampleSet(
        label=label,
        file=f"{label}.json",
        pointer="/records/0",
        adapter="result-records",
        coordinates={},
        evidence_class=EvidenceClass.SYNTHETIC,
        points={k: Point(k, "step_time", "ms", tuple(v)) for k, v in points.items()},
    )


def test_refusal_step_appends_incomparable_and_ranks_nothing() -> None:
    """A refused pair keeps the comparability findings, adds COMPARE.INCOMPARABLE (an error
    under --fail-on incomparable) and names the number of differences."""
    a = _set("a", {})
    earlier = Finding("COMPARE.COORDINATE.DIFFERS", "model: A='x' B='y'", Severity.WARNING)
    opts = CompareOptions(fail_on=frozenset({"incomparable"}))
    out = _refusal(a, "a vs b", 2, [earlier], {"comparable": False}, opts)
    assert [(f.code, f.severity) for f in out.findings] == [
        ("COMPARE.COORDINATE.DIFFERS", Severity.WARNING),
        ("COMPARE.INCOMPARABLE", Severity.ERROR),
    ]
    assert out.reason == "incomparable: 2 difference(s); no ranking"
    assert out.findings[1].location == Location(file="a.json", pointer="/records/0")


def test_point_rows_step_marks_one_sided_points() -> None:
    """A point on one side only is not compared and gets the only_a/only_b footnote; shared
    points are analysed."""
    a = _set("a", {"p": spread(1.0), "only-a": spread(1.0)})
    b = _set("b", {"p": spread(1.2), "only-b": spread(1.0)})
    notes = _Footnotes(0.95, 0.05)
    rows = _point_rows(a, b, {}, CompareOptions(), notes)
    assert [(r["point"], r["verdict"]) for r in rows] == [
        ("only-a", "not compared"),
        ("only-b", "not compared"),
        ("p", "changed"),  # no metric registry entry: direction unknown
    ]
    assert notes.order == ["only_a", "only_b", "direction"]


def test_regressions_step_locates_each_regression_in_b() -> None:
    """Only regression rows become findings, located in B, with the change and the p value."""
    same = {"metric": "tbt", "p_value": 0.001, "direction": "lower"}
    rows = [
        {"point": "p1", "verdict": "regression", "change_pct": 5.0, **same},
        {"point": "p2", "verdict": "improvement", "change_pct": -5.0, **same},
    ]
    found = _regressions(rows, _set("b", {}), CompareOptions())
    assert [(f.code, f.severity, f.location.file) for f in found] == [
        ("COMPARE.REGRESSION", Severity.WARNING, "b.json")
    ]
    assert found[0].message == "point p1: tbt changed +5.00% (p=0.001, lower)"


def test_footnote_findings_step() -> None:
    """Each rendered footnote is one COMPARE.NOTE.<KIND> note carrying its number."""
    notes = _Footnotes(0.95, 0.05)
    notes.ref("noisy")
    notes.ref("only_b")
    found = _footnote_findings(notes.render(), _set("a", {}))
    assert [(f.code, f.severity) for f in found] == [
        ("COMPARE.NOTE.NOISY", Severity.NOTE),
        ("COMPARE.NOTE.ONLY_B", Severity.NOTE),
    ]
    assert found[1].message == "[2] point present only in B: not compared"


def test_verdict_counts_and_pair_reason_steps() -> None:
    """Verdicts are counted by name in sorted order; the reason lists them, then each metric's
    geometric mean, and leaves the means out when there are none."""
    rows = [{"verdict": v} for v in ("~", "regression", "~", "not compared")]
    counts = _verdict_counts(rows)
    assert list(counts.items()) == [("not compared", 1), ("regression", 1), ("~", 2)]
    geo = {"tbt": {"change_pct": -1.5, "points": 2}, "e2e": {"change_pct": 2.0, "points": 1}}
    assert _pair_reason(counts, geo) == (
        "comparable; 1 not compared, 1 regression, 2 ~;"
        " e2e geomean +2.00% over 1, tbt geomean -1.50% over 2"
    )
    assert _pair_reason({"~": 1}, {}) == "comparable; 1 ~"


def test_point_result_step() -> None:
    """A compared point's reason is its line; a one-sided point's reason names its footnote."""
    a = _set("a", {})
    lone = _point_result({"point": "p", "verdict": "not compared", "footnotes": [2]}, a)
    assert (lone.check, lone.subject, lone.reason) == (
        "compare-results.point",
        "p",
        "not compared [2]",
    )
