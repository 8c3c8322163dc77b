"""The lecture bundle's replays/ folder passes the gate on its own (lecture 4's behaviours)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import EVIDENCE

REPLAYS = EVIDENCE / "lecture-4-continuous-batching" / "replays"


def _bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(REPLAYS, root / "replays")
    (root / "bundle.yaml").write_text(
        "schema_version: 1\nbundle: replays-only\ntitle: t\ninclude:\n  - replays/checks.yaml\n"
    )
    return root


def _results(out: str) -> dict[str, Any]:
    return {r["subject"].split(":", 1)[1]: r for r in json.loads(out)["results"]}


def test_the_replays_pass_and_each_negative_names_its_code(cli: Any, tmp_path: Path) -> None:
    res = cli("gate", _bundle(tmp_path), "-f", "json")
    assert res.code == 0, res.out[-2000:]
    results = _results(res.out)
    assert len(results) == 9
    assert all(r["status"] == "passed" for r in results.values())
    auto = results["lecture4-replay-auto-preemption"]["metrics"]
    modes = {e["request_id"]: e["mode"] for e in auto["preemption_log"]["preemptions"]}
    assert modes == {"short-a": "recompute", "short-b": "recompute", "long-b": "swap"}
    pools = results["lecture4-replay-hybrid-state-pool"]["metrics"]["pools"]
    assert pools["binding_pool"] == "state" and pools["state"]["peak_slots_held"] == 19


def test_a_wrong_expected_number_fails_the_gate(cli: Any, tmp_path: Path) -> None:
    """The expected file is compared: one changed number is a failure (exit 1)."""
    root = _bundle(tmp_path)
    path = root / "replays" / "expected" / "hybrid-state-pool.json"
    data = json.loads(path.read_text())
    data["pools"]["state"]["peak_slots_held"] = 20
    path.write_text(json.dumps(data))
    res = cli("gate", root, "-f", "json", "-k", "hybrid-state-pool")
    assert res.code == 1
    failed = [r for r in json.loads(res.out)["results"] if r["status"] == "failed"]
    assert failed and failed[0]["findings"][0]["code"] == "GATE.EXPECTED.DRIFT"
