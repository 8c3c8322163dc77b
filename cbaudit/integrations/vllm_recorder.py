"""Record a real vLLM v0.23.0 engine's scheduling decisions, one JSON line per step.

Plug it into your own vLLM (vLLM is not a dependency of cbaudit; this module imports it only
when vLLM asks for the class):

    CBAUDIT_VLLM_RECORD=/var/tmp/run-{pid}.jsonl \\
    vllm serve MODEL --scheduler-cls cbaudit.integrations.vllm_recorder.RecordingScheduler \\
        --no-async-scheduling --no-enable-prefix-caching

`--scheduler-cls` takes a qualified name that vLLM resolves by importing the module and
reading the attribute (`SchedulerConfig.get_scheduler_cls`), in the engine-core process; the
environment variable must reach that process. `{pid}` in the path becomes the process id (one
file per engine core: data-parallel ranks get one each). The file must not exist yet.

Then `cbaudit conform RECORD` replays the recorded workload under `vllm-v1` and compares every
step (docs/conformance.md). The recorder refuses async scheduling (a subclass of the
synchronous `Scheduler` replaces vLLM's `AsyncScheduler`, which would change the decisions);
`conform` refuses records made with prefix caching, speculative decoding, a KV connector,
pipeline parallelism or more than one K/V cache group, which cbaudit does not model.

Format `cbaudit-vllm-record/1`: a header line

    {"kind": "header", "format": "cbaudit-vllm-record/1", "vllm_version", "vllm_commit",
     "pid", "config": {block_size, num_blocks, max_num_batched_tokens, max_num_scheduled_tokens,
     max_num_seqs, policy, long_prefill_token_threshold, max_model_len,
     scheduler_reserve_full_isl, enable_chunked_prefill, async_scheduling,
     enable_prefix_caching, kv_cache_groups, kv_cache_spec, speculative, kv_connector,
     pipeline_parallel_size}}

then, for every `schedule()` call `step` (0, 1, ...), once its `update_from_output()` is done:

    {"kind": "step", "step",
     "arrivals": [{"id", "prompt_tokens", "max_tokens", "priority", "arrival_time"}],
     "aborted": [ids finished from outside since the previous step],
     "scheduled": {id: tokens}, "total", "new": [ids, admission order], "resumed": [ids],
     "preempted": [ids], "finished": [ids vLLM reports finished at this step],
     "stopped": {id: {"output_tokens", "reason"}} (requests this step's update finished),
     "running_after": [ids], "waiting_after", "free_blocks_after",
     "free_blocks_after_schedule"}

Arrivals of a step are the requests added since the previous `schedule()` call.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

RECORD_ENV = "CBAUDIT_VLLM_RECORD"
FORMAT = "cbaudit-vllm-record/1"


def __getattr__(name: str) -> Any:
    """`RecordingScheduler` is built on first access (PEP 562): importing this module needs no
    vLLM, and vLLM's own lookup (`getattr(module, "RecordingScheduler")`) gets the subclass."""
    if name == "RecordingScheduler":
        try:
            from vllm.v1.core.sched.scheduler import Scheduler
        except ImportError as err:
            raise ImportError(
                "cbaudit's RecordingScheduler runs inside vLLM: install vllm==0.23.0 in the"
                " serving environment (cbaudit itself does not depend on vLLM)"
            ) from err
        cls = type("RecordingScheduler", (RecordingMixin, Scheduler), {"__module__": __name__})
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def record_path(template: str, pid: int) -> str:
    """The record file for this process: `{pid}` in the template becomes the process id."""
    return template.replace("{pid}", str(pid))


def vllm_identity() -> tuple[str | None, str | None]:
    """vLLM's version and commit as the running vLLM states them (None when it does not)."""
    try:
        from vllm import _version  # the version file of vLLM's own build

        return str(_version.__version__), str(getattr(_version, "__commit_id__", None) or "")
    except ImportError:
        return None, None


class RecordingMixin:
    """Put before vLLM's `Scheduler` in the bases: every decision unchanged, one line per step.

    The attributes it reads are `Scheduler`'s own (`scheduler_config`, `cache_config`,
    `kv_cache_config`, `kv_cache_manager`, `requests`, `running`, `waiting`, ...).
    """

    _rec_file: TextIO
    # what the base Scheduler provides (declared for type checkers; set by its __init__)
    scheduler_config: Any
    cache_config: Any
    kv_cache_config: Any
    kv_cache_manager: Any
    vllm_config: Any
    connector: Any
    requests: Any
    running: Any
    waiting: Any
    block_size: Any
    max_num_scheduled_tokens: Any
    max_model_len: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        template = os.environ.get(RECORD_ENV)
        if not template:
            raise RuntimeError(
                f"cbaudit's RecordingScheduler needs {RECORD_ENV}=PATH in the environment of"
                " vLLM's engine-core process"
            )
        if self.scheduler_config.async_scheduling:
            raise RuntimeError(
                "cbaudit's RecordingScheduler needs --no-async-scheduling: it is a synchronous"
                " Scheduler, and would replace the AsyncScheduler the engine asked for"
            )
        path = record_path(template, os.getpid())
        try:
            self._rec_file = open(path, "x", encoding="utf-8", buffering=1)  # noqa: SIM115 - open for the engine's life
        except FileExistsError:
            raise RuntimeError(
                f"{path} exists; cbaudit's recorder never appends to or overwrites a record"
                " (use {pid} in the path, or remove the old file)"
            ) from None
        self._rec_step = 0
        self._rec_arrivals: list[dict[str, Any]] = []
        self._rec_aborted: list[str] = []
        self._rec_open: dict[int, dict[str, Any]] = {}
        version, commit = vllm_identity()
        self._rec_write(
            {
                "kind": "header",
                "format": FORMAT,
                "vllm_version": version,
                "vllm_commit": commit,
                "pid": os.getpid(),
                "config": self._rec_config(),
            }
        )

    def _rec_config(self) -> dict[str, Any]:
        sc = self.scheduler_config
        groups = self.kv_cache_config.kv_cache_groups
        parallel = getattr(self.vllm_config, "parallel_config", None)
        return {
            "block_size": self.block_size,
            "num_blocks": self.kv_cache_manager.block_pool.num_gpu_blocks,
            "max_num_batched_tokens": sc.max_num_batched_tokens,
            "max_num_scheduled_tokens": self.max_num_scheduled_tokens,
            "max_num_seqs": sc.max_num_seqs,
            "policy": str(getattr(sc.policy, "value", sc.policy)),
            "long_prefill_token_threshold": sc.long_prefill_token_threshold,
            "max_model_len": self.max_model_len,
            "scheduler_reserve_full_isl": bool(sc.scheduler_reserve_full_isl),
            "enable_chunked_prefill": bool(sc.enable_chunked_prefill),
            "async_scheduling": bool(sc.async_scheduling),
            "enable_prefix_caching": bool(self.cache_config.enable_prefix_caching),
            "kv_cache_groups": len(groups),
            "kv_cache_spec": type(groups[0].kv_cache_spec).__name__ if groups else None,
            "speculative": getattr(self.vllm_config, "speculative_config", None) is not None,
            "kv_connector": getattr(self, "connector", None) is not None,
            "pipeline_parallel_size": int(getattr(parallel, "pipeline_parallel_size", 1)),
        }

    def _rec_write(self, obj: dict[str, Any]) -> None:
        self._rec_file.write(json.dumps(obj, sort_keys=True) + "\n")

    def _rec_free_blocks(self) -> int:
        return int(self.kv_cache_manager.block_pool.get_num_free_blocks())

    def close_record(self) -> None:
        """Close the record file (the engine's shutdown closes it too, with the process)."""
        self._rec_file.close()

    # ------------------------------------------------------------------ vLLM's hooks

    def add_request(self, request: Any) -> None:
        is_new = request.request_id not in self.requests
        super().add_request(request)  # type: ignore[misc]
        if is_new:  # a known id is a streaming-input update of a request already recorded
            self._rec_arrivals.append(
                {
                    "id": request.request_id,
                    "prompt_tokens": request.num_prompt_tokens,
                    "max_tokens": request.max_tokens,
                    "priority": request.priority,
                    "arrival_time": request.arrival_time,
                }
            )

    def finish_requests(self, request_ids: Any, finished_status: Any) -> Any:
        done = super().finish_requests(request_ids, finished_status)  # type: ignore[misc]
        self._rec_aborted.extend(str(rid) for rid, _ in done)
        return done

    def schedule(self) -> Any:
        out = super().schedule()  # type: ignore[misc]
        cached = out.scheduled_cached_reqs
        resumed = getattr(cached, "resumed_req_ids", None) or ()
        self._rec_open[id(out)] = {
            "kind": "step",
            "step": self._rec_step,
            "arrivals": self._rec_arrivals,
            "aborted": sorted(self._rec_aborted),
            "scheduled": dict(out.num_scheduled_tokens),
            "total": out.total_num_scheduled_tokens,
            "new": [r.req_id for r in out.scheduled_new_reqs],
            "resumed": sorted(resumed),
            "preempted": sorted(out.preempted_req_ids or ()),
            "finished": sorted(out.finished_req_ids or ()),
            "free_blocks_after_schedule": self._rec_free_blocks(),
        }
        self._rec_step += 1
        self._rec_arrivals = []
        self._rec_aborted = []
        return out

    def update_from_output(self, scheduler_output: Any, model_runner_output: Any) -> Any:
        scheduled = {rid: self.requests.get(rid) for rid in scheduler_output.num_scheduled_tokens}
        result = super().update_from_output(scheduler_output, model_runner_output)  # type: ignore[misc]
        rec = self._rec_open.pop(id(scheduler_output), None)
        if rec is not None:
            stopped = {}
            for rid, r in scheduled.items():
                if r is not None and r.is_finished():
                    reason = r.get_finished_reason()
                    stopped[rid] = {
                        "output_tokens": r.num_output_tokens,
                        "reason": None if reason is None else str(reason),
                    }
            rec["stopped"] = stopped
            rec["running_after"] = [r.request_id for r in self.running]
            rec["waiting_after"] = len(self.waiting)
            rec["free_blocks_after"] = self._rec_free_blocks()
            self._rec_write(rec)
        return result
