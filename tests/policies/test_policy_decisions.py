"""Single decisions on the loop 9 and loop 10 fixtures, asserted from the article."""

from __future__ import annotations

from typing import Any

from cbaudit.io.loader import load_document
from cbaudit.sim.replay import parse_initial
from cbaudit.sim.snapshot import decide_snapshot
from cbaudit.sim.workload import load_workload, workload_from_data
from tests.sim.helpers import BUNDLE, replay

SNAP = BUNDLE / "loop10-runtime" / "snapshots"
STARVE = BUNDLE / "loop6-starvation"


def _decide(name: str, policy: str, **options: Any) -> dict[str, Any]:
    doc = load_document(SNAP / f"{name}.json")
    wl = workload_from_data(doc.data["workload"], doc.path)
    return decide_snapshot(
        wl, parse_initial(doc.data["state"], doc.path), policy, options, source="t"
    )


def test_fcfs_preempts_the_tail() -> None:
    """FCFS: tail victim B releases its rows and A schedules one row."""
    d = _decide("s2-preemption", "vllm-v1", scheduling="fcfs")
    assert d["preempted"] == ["B"] and d["selected"] == ["A[2,3) DECODE_ROW"]
    assert d["findings"] == []


def test_priority_preempts_the_current_request() -> None:
    """PRIORITY: max(priority, arrival) is A itself; no running row is scheduled."""
    d = _decide("s2-preemption", "vllm-v1", scheduling="priority")
    assert d["preempted"] == ["A"] and d["selected"] == []
    assert "B: DEFERRED_AFTER_PREEMPTION" in d["not_selected"]


def test_remote_kv_request_is_not_runnable() -> None:
    """A request waiting on remote K/V is skipped by every policy; the ready one runs."""
    for policy in ("orca", "sarathi-serve", "vllm-v1", "decode-first", "prefill-first"):
        d = _decide("s3-remote-kv", policy)
        assert d["selected"] == ["S[0,8) PREFILL_CHUNK"], policy
        assert "R: NOT_READY_REMOTE_KV" in d["not_selected"]


def test_vllm_clamps_by_long_prefill_threshold() -> None:
    """vllm-v1 clamps the running prompt to long_prefill_token_threshold = 4 rows."""
    assert _decide("s4-long-prefill", "vllm-v1")["selected"] == [
        "A[6,7) DECODE_ROW",
        "L[8,12) PREFILL_CHUNK",
    ]
    assert _decide("s4-long-prefill", "sarathi-serve")["selected"][1] == "L[8,23) PREFILL_CHUNK"


def _starve(policy: str, **options: Any) -> dict[str, Any]:
    doc = load_document(STARVE / "initial.state.json")
    wl = load_workload(STARVE / "pressure.workload.yaml")
    _, m = replay(wl, policy, options, horizon=4, initial=parse_initial(doc.data, doc.path))
    return m["requests"]


def test_decode_first_starves_prefill() -> None:
    """B_tok = 6, six decodes: the waiting prefill gets zero rows in four iterations."""
    reqs = _starve("decode-first")
    assert reqs["P"]["scheduled_tokens"] == 0
    assert all(reqs[f"D{i}"]["scheduled_tokens"] == 4 for i in range(1, 7))


def test_prefill_first_starves_decode() -> None:
    """A 24-token prompt takes all six rows for four iterations; decodes get zero."""
    reqs = _starve("prefill-first")
    assert reqs["P"]["scheduled_tokens"] == 24
    assert all(reqs[f"D{i}"]["scheduled_tokens"] == 0 for i in range(1, 7))


def test_bounded_variant_serves_both() -> None:
    """Reserve one prefill row and rotate decodes: both classes progress every iteration."""
    reqs = _starve("decode-first", prefill_reserve=1, rotate_decodes=True)
    assert reqs["P"]["served_iterations"] == 4
    assert sum(reqs[f"D{i}"]["scheduled_tokens"] for i in range(1, 7)) == 20
    assert min(reqs[f"D{i}"]["served_iterations"] for i in range(1, 7)) >= 2
