"""The replay-report adapter: run coordinates, point names, and large sample sizes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cbaudit.results.coordinates import COMPARISON_SET, comparable, comparison_keys
from cbaudit.results.stats import min_attainable_p
from tests.results._records import BASE_COORDS, spread


def _report(
    path: Path, samples: dict[str, dict[str, list[float]]], run: dict[str, Any] | None
) -> Path:
    coords: dict[str, Any] = dict(BASE_COORDS)
    if run is not None:
        coords["run"] = run
    doc = {
        "command": "replay",
        "summary": {"coordinates": coords},
        "results": [
            {"subject": subject, "metrics": {"samples": s, "units": dict.fromkeys(s, "ms")}}
            for subject, s in samples.items()
        ],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _pair(cli: Callable[..., Any], a: Path, b: Path) -> dict[str, Any]:
    r = cli("compare-results", a, b, "-f", "json")
    assert r.code == 0, r.err
    pair: dict[str, Any] = json.loads(r.out)["results"][0]["metrics"]
    return pair


def test_run_coordinate_on_one_side_only_is_unreported(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """A run coordinate that only A reports keeps the pair incomparable as unreported."""
    a = _report(tmp_path / "a.json", {"w": {"ttft": spread(1.0)}}, {"policy": "orca"})
    b = _report(tmp_path / "b.json", {"w": {"ttft": spread(1.0)}}, None)
    r = cli("compare-results", a, b, "-f", "json")
    rep = json.loads(r.out)
    pair = rep["results"][0]["metrics"]
    assert pair["comparable"] is False
    assert pair["differing_coordinates"] == [
        {"coordinate": "run.policy", "a": "orca", "b": None, "unreported": True}
    ]
    codes = {f["code"] for f in rep["results"][0]["findings"]}
    assert codes == {"COMPARE.COORDINATE.UNREPORTED", "COMPARE.INCOMPARABLE"}


def test_equal_run_coordinates_compare(cli: Callable[..., Any], tmp_path: Path) -> None:
    """Equal run coordinates (mappings spelled canonically) leave the pair comparable."""
    run = {"policy": "orca", "budgets": {"token_budget": 8, "sequence_budget": 2}}
    a = _report(tmp_path / "a.json", {"w": {"ttft": spread(1.0)}}, run)
    b = _report(tmp_path / "b.json", {"w": {"ttft": spread(1.0)}}, dict(reversed(run.items())))
    assert _pair(cli, a, b)["comparable"] is True


def test_several_sampled_results_keep_subject_in_point_names(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """With two sampled results per report, points are named subject:metric."""
    samples = {"x": {"ttft": spread(1.0)}, "y": {"ttft": spread(2.0)}}
    a = _report(tmp_path / "a.json", samples, None)
    b = _report(tmp_path / "b.json", samples, None)
    assert [row["point"] for row in _pair(cli, a, b)["points"]] == ["x:ttft", "y:ttft"]


def test_comparison_keys_append_extras_after_the_declared_set() -> None:
    """comparison_keys is C followed by the sorted extra coordinates of either side."""
    a = {key: "v" for key in COMPARISON_SET} | {"run.policy": "p"}
    b = {key: "v" for key in COMPARISON_SET} | {"run.budgets": "x"}
    assert comparison_keys(a, b) == (*COMPARISON_SET, "run.budgets", "run.policy")
    assert comparable(a, a) is True and comparable(a, b) is False


def test_min_attainable_p_for_large_samples_does_not_overflow() -> None:
    """Hundreds of samples per side give a smallest p of 0.0 instead of an OverflowError."""
    assert min_attainable_p(900, 900) == 0.0
    assert min_attainable_p(3, 3) == 0.1
