"""The vLLM recorder, exercised with stand-in objects for vLLM's Scheduler and its outputs.

The stand-in replays the decisions of a record made with the real vLLM v0.23.0 scheduler
(evidence/vllm-v0.23.0-conformance/records/); wrapped in the recorder it must write that
record again, field for field.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from repo_paths import CONFORMANCE

from cbaudit.integrations import vllm_recorder
from cbaudit.integrations.vllm_recorder import RECORD_ENV, RecordingMixin

RECORDS = sorted((CONFORMANCE / "records").glob("*.record.jsonl"))


class FullAttentionSpec:
    """Named like vLLM's spec class: the recorder records the class name."""


class _Request:
    def __init__(self, a: dict[str, Any]) -> None:
        self.request_id = a["id"]
        self.num_prompt_tokens = a["prompt_tokens"]
        self.max_tokens = a["max_tokens"]
        self.priority = a["priority"]
        self.arrival_time = a["arrival_time"]
        self.done: dict[str, Any] | None = None

    def is_finished(self) -> bool:
        return self.done is not None

    @property
    def num_output_tokens(self) -> int:
        assert self.done is not None
        return int(self.done["output_tokens"])

    def get_finished_reason(self) -> str | None:
        return None if self.done is None else self.done["reason"]


class StandInScheduler:
    """vLLM's Scheduler as the recorder sees it, deciding what a recorded step says."""

    def __init__(self, config: dict[str, Any], steps: list[dict[str, Any]], **_: Any) -> None:
        self.scheduler_config = SimpleNamespace(
            async_scheduling=config["async_scheduling"],
            max_num_batched_tokens=config["max_num_batched_tokens"],
            max_num_seqs=config["max_num_seqs"],
            policy=config["policy"],
            long_prefill_token_threshold=config["long_prefill_token_threshold"],
            scheduler_reserve_full_isl=config["scheduler_reserve_full_isl"],
            enable_chunked_prefill=config["enable_chunked_prefill"],
        )
        self.cache_config = SimpleNamespace(enable_prefix_caching=config["enable_prefix_caching"])
        self.kv_cache_config = SimpleNamespace(
            kv_cache_groups=[SimpleNamespace(kv_cache_spec=FullAttentionSpec())]
        )
        self.free = config["num_blocks"] - 1
        self.kv_cache_manager = SimpleNamespace(
            block_pool=SimpleNamespace(
                num_gpu_blocks=config["num_blocks"], get_num_free_blocks=lambda: self.free
            )
        )
        self.vllm_config = SimpleNamespace(
            speculative_config=None, parallel_config=SimpleNamespace(pipeline_parallel_size=1)
        )
        self.connector = None
        self.block_size = config["block_size"]
        self.max_num_scheduled_tokens = config["max_num_scheduled_tokens"]
        self.max_model_len = config["max_model_len"]
        self.requests: dict[str, _Request] = {}
        self.running: list[_Request] = []
        self.waiting: list[_Request] = []
        self.steps = iter(steps)
        self.current: dict[str, Any] = {}

    def add_request(self, request: _Request) -> None:
        self.requests[request.request_id] = request
        self.waiting.append(request)

    def finish_requests(self, request_ids: Any, status: Any) -> list[tuple[str, int]]:
        return [(rid, 0) for rid in request_ids]

    def schedule(self) -> Any:
        s = self.current = next(self.steps)
        self.free = s["free_blocks_after_schedule"]
        return SimpleNamespace(
            num_scheduled_tokens=dict(s["scheduled"]),
            total_num_scheduled_tokens=s["total"],
            scheduled_new_reqs=[SimpleNamespace(req_id=r) for r in s["new"]],
            scheduled_cached_reqs=SimpleNamespace(resumed_req_ids=set(s["resumed"])),
            preempted_req_ids=set(s["preempted"]),
            finished_req_ids=set(s["finished"]),
        )

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> str:
        s = self.current
        for rid, done in s["stopped"].items():
            self.requests[rid].done = done
        self.running = [self.requests[r] for r in s["running_after"]]
        self.waiting = [SimpleNamespace()] * s["waiting_after"]
        self.free = s["free_blocks_after"]
        return "engine outputs"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _recorder(header: dict[str, Any], steps: list[dict[str, Any]]) -> Any:
    cls = type("RecordingStandIn", (RecordingMixin, StandInScheduler), {})
    return cls(header["config"], steps)


def _drive(sched: Any, steps: list[dict[str, Any]]) -> None:
    for s in steps:
        for a in s["arrivals"]:
            sched.add_request(_Request(a))
        if s["aborted"]:
            sched.finish_requests(s["aborted"], "FINISHED_ABORTED")
        out = sched.schedule()
        assert sched.update_from_output(out, None) == "engine outputs"
    sched.close_record()


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.name)
def test_the_recorder_writes_what_the_scheduler_decided(
    record: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Around a stand-in deciding what vLLM decided, the recorder rewrites the record exactly."""
    original = _lines(record)
    header, steps = original[0], original[1:]
    out = tmp_path / "run-{pid}.jsonl"
    monkeypatch.setenv(RECORD_ENV, str(out))
    sched = _recorder(header, steps)
    _drive(sched, steps)
    written = list(tmp_path.glob("run-*.jsonl"))
    assert len(written) == 1 and written[0].name != out.name  # {pid} was filled in
    again = _lines(written[0])
    assert again[1:] == steps
    assert again[0]["config"] == header["config"]
    assert again[0]["format"] == "cbaudit-vllm-record/1" and again[0]["kind"] == "header"


def test_aborts_are_recorded_before_the_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """finish_requests from outside appears as `aborted` on the next step's line."""
    original = _lines(RECORDS[0])
    header, steps = original[0], [dict(s) for s in original[1:4]]
    steps[2]["aborted"] = [steps[0]["arrivals"][0]["id"]]
    monkeypatch.setenv(RECORD_ENV, str(tmp_path / "r.jsonl"))
    _drive(_recorder(header, steps), steps)
    assert [s["aborted"] for s in _lines(tmp_path / "r.jsonl")[1:]] == [s["aborted"] for s in steps]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no-env", RECORD_ENV),
        ("async", "--no-async-scheduling"),
        ("exists", "never appends"),
    ],
)
def test_the_recorder_refuses_to_start_wrongly(
    setup: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No path, async scheduling, or an existing file: the engine does not start recording."""
    original = _lines(RECORDS[0])
    header = json.loads(json.dumps(original[0]))
    path = tmp_path / "r.jsonl"
    if setup == "no-env":
        monkeypatch.delenv(RECORD_ENV, raising=False)
    else:
        monkeypatch.setenv(RECORD_ENV, str(path))
    if setup == "async":
        header["config"]["async_scheduling"] = True
    if setup == "exists":
        path.write_text("old run\n")
    with pytest.raises(RuntimeError, match=message):
        _recorder(header, original[1:])
    if setup == "exists":
        assert path.read_text() == "old run\n"


def test_the_module_needs_no_vllm_until_vllm_asks_for_the_class() -> None:
    """Importing the recorder imports no vLLM; without vLLM the class lookup names the fix."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here; the missing-vLLM message cannot be shown")
    with pytest.raises(ImportError, match=r"vllm==0\.23\.0"):
        _ = vllm_recorder.RecordingScheduler


def test_vllms_lookup_builds_the_subclass_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve_obj_by_qualname imports the module and reads the attribute: that builds
    RecordingScheduler on vLLM's own Scheduler (here a stand-in module in its place)."""
    fake = types.ModuleType("vllm.v1.core.sched.scheduler")
    fake.Scheduler = StandInScheduler  # type: ignore[attr-defined]
    for name in ("vllm", "vllm.v1", "vllm.v1.core", "vllm.v1.core.sched"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "vllm.v1.core.sched.scheduler", fake)
    vars(vllm_recorder).pop("RecordingScheduler", None)
    module_name, _, attr = "cbaudit.integrations.vllm_recorder.RecordingScheduler".rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attr)
        assert cls.__mro__[1:3] == (RecordingMixin, StandInScheduler)
        assert cls.__module__ == "cbaudit.integrations.vllm_recorder"
        assert vllm_recorder.RecordingScheduler is cls  # built once, then a plain attribute
    finally:
        vars(vllm_recorder).pop("RecordingScheduler", None)


def test_the_recorder_imports_nothing_else_of_cbaudit() -> None:
    """It runs in vLLM's engine process: the standard library only."""
    import ast

    tree = ast.parse(Path(vllm_recorder.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert {m.split(".")[0] for m in imported} <= {"__future__", "json", "os", "typing", "vllm"}
