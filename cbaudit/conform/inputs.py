"""The inputs of `cbaudit conform`, read strictly: anything unknown or inconsistent is a located
`CONFORM.*` error (exit 2), never skipped.

Three formats (docs/conformance.md has them in full):

* a **driver workload** (`{"config": {...}, "requests": [...]}`), the input of the CPU driver
  of vLLM's real scheduler (`../shared/peers/vllm/drive_workload.py` and its README);
* a **driver trace**: one JSON object per engine step, as that driver writes it (idle steps
  included);
* a **recorder file**: a header line with the engine's configuration, then one line per
  `schedule()` call, as `cbaudit.integrations.vllm_recorder` writes it in a real deployment; it
  carries its own workload (arrivals, and each finished request's output length).

Traces and records are read as streams (`iter_*`): memory does not grow with their length.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, iter_jsonl, load_document
from cbaudit.model import Finding, InputError
from cbaudit.sim.engine_config import EngineConfig, engine_config_from_data
from cbaudit.sim.workload import Workload, workload_from_data

RECORD_FORMAT = "cbaudit-vllm-record/1"
#: vLLM releases whose scheduler `vllm-v1` mirrors (its markers pin v0.23.0)
VLLM_VERSION = re.compile(r"0\.23\.0(\+.*)?$")
DRIVER_MAX_MODEL_LEN = 2048  # the driver's default when a workload names none


class Loop(StrEnum):
    """When the engine calls `schedule()`."""

    DRIVER = "driver"  # while a request is unfinished (the CPU driver; idle steps otherwise)
    ENGINE = "engine"  # while it has requests, finished-but-unreported ones included (EngineCore)


class InputKind(StrEnum):
    DRIVER_TRACE = "driver-trace"
    RECORD = "vllm-record"


@dataclass(frozen=True, slots=True)
class Arrival:
    """One request as it reaches the scheduler."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    priority: int
    step: int  # the step whose schedule() first sees it
    position: int  # order of arrival (file position, or order of add_request)
    arrival_time: float | None = None  # vLLM's arrival_time, recorded by the recorder
    produced: int | None = None  # outputs it produced (record: when it finished in the record)


@dataclass(frozen=True)
class ConformWorkload:
    """A workload in the scheduler's own terms: its engine configuration and its arrivals."""

    config: EngineConfig
    loop: Loop
    requests: tuple[Arrival, ...]
    source: str

    def arrival_ranks(self) -> dict[str, int]:
        """Each request's `arrival_order`: the order vLLM's queues compare arrivals by.

        FCFS queues requests in the order they arrive; priority compares `arrival_time`, which
        a driver derives from (step, file position) and a recorder records.
        """

        def key(a: Arrival) -> tuple[int, float, int]:
            by_time = a.arrival_time is not None and self.config.policy == "priority"
            return (a.step, a.arrival_time if by_time and a.arrival_time else 0.0, a.position)

        return {a.request_id: i for i, a in enumerate(sorted(self.requests, key=key))}

    def to_workload(self) -> Workload:
        """The workload cbaudit replays: tick clock (one tick per step), the engine's budgets
        and output limits, each finished request's realized length as hidden truth."""
        ranks = self.arrival_ranks()
        requests = []
        hidden: dict[str, int] = {}
        for a in self.requests:
            requests.append(
                {
                    "request_id": a.request_id,
                    "arrival": a.step,
                    "arrival_order": ranks[a.request_id],
                    "prompt_tokens": a.prompt_tokens,
                    "max_output_tokens": a.max_tokens,
                    "priority": a.priority,
                }
            )
            if a.produced is not None and a.produced < a.max_tokens:
                hidden[a.request_id] = a.produced
        manifest: dict[str, Any] = {
            "schema_version": 1,
            "workload_id": Path(self.source).name,
            "clock": {"unit": "tick"},
            "budgets": self.config.budgets(),
            "requests": requests,
        }
        if hidden:
            manifest["fixture_only_hidden_truth"] = {"realized_output_tokens": hidden}
        return self.config.apply(workload_from_data(manifest, self.source))


# ---------------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class Step:
    """One engine step in vLLM's trace vocabulary (driver trace, record, or cbaudit's replay).

    `stopped` and `free_blocks_after_schedule` exist in records only (None elsewhere);
    `aborted` lists requests finished from outside before this step (records only).
    """

    step: int
    idle: bool = False
    scheduled: tuple[tuple[str, int], ...] = ()
    total: int = 0
    new: tuple[str, ...] = ()
    resumed: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    finished: tuple[str, ...] = ()
    running_after: tuple[str, ...] = ()
    waiting_after: int = 0
    free_blocks_after: int = 0
    stopped: tuple[str, ...] | None = None
    free_blocks_after_schedule: int | None = None
    aborted: tuple[str, ...] = ()
    line: int | None = None  # where it was read

    def fields(self, *, record: bool) -> dict[str, Any]:
        """The compared fields (those of a record when `record`)."""
        if self.idle:
            return {"idle": True}
        out: dict[str, Any] = {
            "scheduled": dict(self.scheduled),
            "total": self.total,
            "new": list(self.new),
            "resumed": list(self.resumed),
            "preempted": list(self.preempted),
            "finished": list(self.finished),
            "running_after": list(self.running_after),
            "waiting_after": self.waiting_after,
            "free_blocks_after": self.free_blocks_after,
        }
        if record:
            out["stopped"] = list(self.stopped or ())
            out["free_blocks_after_schedule"] = self.free_blocks_after_schedule
        return out

    def to_json(self, *, record: bool) -> dict[str, Any]:
        return {"step": self.step, **self.fields(record=record)}


# ---------------------------------------------------------------------------------- helpers


class _Reader:
    """Typed field access with located errors for one document."""

    def __init__(self, doc: Document, prefix: str) -> None:
        self.doc = doc
        self.prefix = prefix

    def error(self, code: str, message: str, pointer: str) -> InputError:
        return InputError(
            Finding(f"{self.prefix}.{code}", message, location=self.doc.locate(pointer))
        )

    def keys(
        self, data: Any, pointer: str, required: tuple[str, ...], optional: tuple[str, ...]
    ) -> Mapping[str, Any]:
        if not isinstance(data, Mapping):
            raise self.error("SHAPE", f"expected an object, got {type(data).__name__}", pointer)
        for key in data:
            if key not in required and key not in optional:
                known = ", ".join((*required, *optional))
                raise self.error(
                    "KEY.UNKNOWN", f"unknown field {key!r} (known: {known})", f"{pointer}/{key}"
                )
        for key in required:
            if key not in data:
                raise self.error("KEY.MISSING", f"missing field {key!r}", pointer)
        return data

    def integer(self, data: Mapping[str, Any], key: str, pointer: str, *, minimum: int) -> int:
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(
                "VALUE.TYPE", f"{key} must be an integer, got {value!r}", f"{pointer}/{key}"
            )
        if value < minimum:
            raise self.error(
                "VALUE.RANGE", f"{key} must be >= {minimum}, got {value}", f"{pointer}/{key}"
            )
        return value

    def text(self, data: Mapping[str, Any], key: str, pointer: str) -> str:
        value = data[key]
        if not isinstance(value, str) or not value:
            raise self.error(
                "VALUE.TYPE", f"{key} must be a non-empty string, got {value!r}", f"{pointer}/{key}"
            )
        return value

    def ids(self, data: Mapping[str, Any], key: str, pointer: str) -> tuple[str, ...]:
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(
                "VALUE.TYPE", f"{key} must be a list of request ids", f"{pointer}/{key}"
            )
        if len(set(value)) != len(value):
            raise self.error("VALUE.DUPLICATE", f"{key} names a request twice", f"{pointer}/{key}")
        return tuple(value)

    def tokens(
        self, data: Mapping[str, Any], key: str, pointer: str
    ) -> tuple[tuple[str, int], ...]:
        value = data[key]
        if not isinstance(value, Mapping):
            raise self.error(
                "VALUE.TYPE", f"{key} must map request ids to tokens", f"{pointer}/{key}"
            )
        out = []
        for rid, n in value.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise self.error(
                    "VALUE.RANGE",
                    f"{key}[{rid!r}] must be an integer >= 1, got {n!r}",
                    f"{pointer}/{key}/{rid}",
                )
            out.append((str(rid), n))
        return tuple(out)


# ---------------------------------------------------------------------------------- driver


DRIVER_CONFIG_REQUIRED = (
    "block_size",
    "num_blocks",
    "max_num_batched_tokens",
    "max_num_seqs",
    "policy",
)
DRIVER_CONFIG_OPTIONAL = (
    "long_prefill_token_threshold",
    "max_model_len",
    "scheduler_reserve_full_isl",
    "max_num_scheduled_tokens",
    "loop",
)
REQUEST_KEYS = ("id", "prompt_tokens", "output_tokens", "arrival_step")


def read_driver_workload(path: str | Path, *, display: str | None = None) -> ConformWorkload:
    """A driver workload; its config keys are the driver's (`num_blocks` is vLLM's
    `num_gpu_blocks`; `max_model_len` defaults to the driver's 2048)."""
    doc = load_document(path, display=display, fmt="json")
    rd = _Reader(doc, "CONFORM.WORKLOAD")
    top = rd.keys(doc.data, "", ("config", "requests"), ())
    cfg = rd.keys(top["config"], "/config", DRIVER_CONFIG_REQUIRED, DRIVER_CONFIG_OPTIONAL)
    loop_raw = cfg.get("loop", Loop.DRIVER.value)
    if loop_raw not in (Loop.DRIVER.value, Loop.ENGINE.value):
        raise rd.error(
            "VALUE.RANGE", f"loop must be driver or engine, got {loop_raw!r}", "/config/loop"
        )
    engine: dict[str, Any] = {k: v for k, v in cfg.items() if k not in ("num_blocks", "loop")}
    engine["num_gpu_blocks"] = cfg["num_blocks"]
    engine.setdefault("max_model_len", DRIVER_MAX_MODEL_LEN)
    config = engine_config_from_data(engine, doc.path, pointer="/config", locate=_renamed(doc))
    requests = top["requests"]
    if not isinstance(requests, list) or not requests:
        raise rd.error("VALUE.TYPE", "requests must be a non-empty list", "/requests")
    out: list[Arrival] = []
    seen: set[str] = set()
    for k, raw in enumerate(requests):
        at = f"/requests/{k}"
        r = rd.keys(raw, at, REQUEST_KEYS, ("priority",))
        rid = rd.text(r, "id", at)
        if rid in seen:
            raise rd.error("REQUEST.DUPLICATE", f"request id {rid!r} is used twice", f"{at}/id")
        seen.add(rid)
        prompt = rd.integer(r, "prompt_tokens", at, minimum=1)
        _prompt_fits(rd, config, prompt, f"{at}/prompt_tokens")
        priority = r.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise rd.error(
                "VALUE.TYPE", f"priority must be an integer, got {priority!r}", f"{at}/priority"
            )
        out.append(
            Arrival(
                request_id=rid,
                prompt_tokens=prompt,
                max_tokens=rd.integer(r, "output_tokens", at, minimum=1),
                priority=priority,
                step=rd.integer(r, "arrival_step", at, minimum=0),
                position=k,
            )
        )
    return ConformWorkload(config, Loop(loop_raw), tuple(out), doc.path)


def _renamed(doc: Document) -> Any:
    """Locate engine-config pointers in a driver workload (`num_gpu_blocks` is `num_blocks`)."""

    def locate(pointer: str) -> Any:
        return doc.locate(pointer.replace("/config/num_gpu_blocks", "/config/num_blocks"))

    return locate


def _prompt_fits(rd: _Reader, config: EngineConfig, prompt: int, pointer: str) -> None:
    if config.max_model_len is not None and prompt >= config.max_model_len:
        raise rd.error(
            "REQUEST.PROMPT_TOO_LONG",
            f"{prompt} prompt tokens: vLLM's front end refuses a prompt of max_model_len ="
            f" {config.max_model_len} tokens or more",
            pointer,
        )


DRIVER_STEP_KEYS = (
    "step",
    "scheduled",
    "total",
    "new",
    "resumed",
    "preempted",
    "finished",
    "running_after",
    "waiting_after",
    "free_blocks_after",
)


def iter_driver_trace(path: str | Path, *, display: str | None = None) -> Iterator[Step]:
    """The steps of a driver trace, in order; step numbers must run 0, 1, 2, ..."""
    for expected, doc in enumerate(iter_jsonl(path, display=display)):
        rd = _Reader(doc, "CONFORM.TRACE")
        data = doc.data
        if isinstance(data, Mapping) and data.get("idle") is True:
            rd.keys(data, "", ("step", "scheduled", "idle"), ())
            if data["scheduled"] != {}:
                raise rd.error("VALUE.RANGE", "an idle step schedules nothing", "/scheduled")
            step = Step(
                step=rd.integer(data, "step", "", minimum=0), idle=True, line=doc.line_offset + 1
            )
        else:
            rd.keys(data, "", DRIVER_STEP_KEYS, ())
            step = _busy_step(rd, data, "")
        if step.step != expected:
            raise rd.error("STEP.ORDER", f"step {step.step} where step {expected} was due", "/step")
        yield step


def _busy_step(rd: _Reader, data: Mapping[str, Any], at: str, **extra: Any) -> Step:
    return Step(
        step=rd.integer(data, "step", at, minimum=0),
        scheduled=rd.tokens(data, "scheduled", at),
        total=rd.integer(data, "total", at, minimum=0),
        new=rd.ids(data, "new", at),
        resumed=rd.ids(data, "resumed", at),
        preempted=rd.ids(data, "preempted", at),
        finished=rd.ids(data, "finished", at),
        running_after=rd.ids(data, "running_after", at),
        waiting_after=rd.integer(data, "waiting_after", at, minimum=0),
        free_blocks_after=rd.integer(data, "free_blocks_after", at, minimum=0),
        line=rd.doc.line_offset + 1,
        **extra,
    )


# ---------------------------------------------------------------------------------- records


HEADER_KEYS = ("kind", "format", "vllm_version", "config")
HEADER_OPTIONAL = ("vllm_commit", "pid")
RECORD_CONFIG_KEYS = (
    "block_size",
    "num_blocks",
    "max_num_batched_tokens",
    "max_num_scheduled_tokens",
    "max_num_seqs",
    "policy",
    "long_prefill_token_threshold",
    "max_model_len",
    "scheduler_reserve_full_isl",
    "enable_chunked_prefill",
    "async_scheduling",
    "enable_prefix_caching",
    "kv_cache_groups",
    "kv_cache_spec",
    "speculative",
    "kv_connector",
    "pipeline_parallel_size",
)
#: engine facts a record must show switched off, and what to tell the user when one is on
RECORD_REFUSED: dict[str, tuple[Any, str]] = {
    "enable_prefix_caching": (
        False,
        "it was recorded with prefix caching on, which cbaudit does not model: record again"
        " with --no-enable-prefix-caching",
    ),
    "async_scheduling": (
        False,
        "it was recorded with async scheduling, which cbaudit does not model: record again"
        " with --no-async-scheduling",
    ),
    "enable_chunked_prefill": (True, "cbaudit models vLLM with chunked prefill on"),
    "speculative": (False, "speculative decoding is not modelled"),
    "kv_connector": (False, "a KV connector (disaggregated or offloaded K/V) is not modelled"),
    "kv_cache_groups": (
        1,
        "cbaudit models one K/V cache group (a model with one kind of attention)",
    ),
    "kv_cache_spec": ("FullAttentionSpec", "cbaudit models full attention only"),
    "pipeline_parallel_size": (1, "pipeline parallelism schedules several batches at once"),
}
RECORD_STEP_KEYS = (
    *DRIVER_STEP_KEYS,
    "kind",
    "arrivals",
    "stopped",
    "aborted",
    "free_blocks_after_schedule",
)
ARRIVAL_KEYS = ("id", "prompt_tokens", "max_tokens", "priority", "arrival_time")


def is_record(path: str | Path, *, display: str | None = None) -> bool:
    """True when the file's first line is a recorder header."""
    for doc in iter_jsonl(path, display=display):
        return isinstance(doc.data, Mapping) and doc.data.get("kind") == "header"
    return False


def read_record_header(
    path: str | Path, *, display: str | None = None
) -> tuple[dict[str, Any], EngineConfig]:
    """The header of a recorder file and the engine configuration it states."""
    for doc in iter_jsonl(path, display=display):
        rd = _Reader(doc, "CONFORM.RECORD")
        head = rd.keys(doc.data, "", HEADER_KEYS, HEADER_OPTIONAL)
        if head["kind"] != "header" or head["format"] != RECORD_FORMAT:
            raise rd.error(
                "FORMAT",
                f"not a {RECORD_FORMAT} header (kind {head['kind']!r}, format {head['format']!r})",
                "/format",
            )
        version = head["vllm_version"]
        if not isinstance(version, str) or not VLLM_VERSION.match(version):
            raise rd.error(
                "VLLM_VERSION",
                f"recorded by vLLM {version!r}; vllm-v1 mirrors vLLM 0.23.0 (its rules are pinned"
                " to that release), so another version's decisions are not its claim",
                "/vllm_version",
            )
        cfg = rd.keys(head["config"], "/config", RECORD_CONFIG_KEYS, ())
        for key, (allowed, why) in RECORD_REFUSED.items():
            if cfg[key] != allowed:
                raise rd.error("UNSUPPORTED", f"{key} = {cfg[key]!r}: {why}", f"/config/{key}")
        engine = {
            k: cfg[k] for k in RECORD_CONFIG_KEYS if k not in RECORD_REFUSED and k != "num_blocks"
        }
        engine["num_gpu_blocks"] = cfg["num_blocks"]
        config = engine_config_from_data(engine, doc.path, pointer="/config", locate=_renamed(doc))
        return dict(head), config
    raise AssertionError("iter_jsonl yields at least one record or raises")  # pragma: no cover


def iter_record_steps(
    path: str | Path, *, display: str | None = None
) -> Iterator[tuple[Step, tuple[Mapping[str, Any], ...], Mapping[str, int]]]:
    """(step, its arrivals, outputs of the requests its update finished) for every step line."""
    expected = 0
    first = True
    for doc in iter_jsonl(path, display=display):
        if first:
            first = False
            continue
        rd = _Reader(doc, "CONFORM.RECORD")
        data = rd.keys(doc.data, "", RECORD_STEP_KEYS, ())
        if data["kind"] != "step":
            raise rd.error(
                "FORMAT", f"kind {data['kind']!r} after the header: expected 'step'", "/kind"
            )
        arrivals = data["arrivals"]
        if not isinstance(arrivals, list):
            raise rd.error("VALUE.TYPE", "arrivals must be a list", "/arrivals")
        for i, a in enumerate(arrivals):
            rd.keys(a, f"/arrivals/{i}", ARRIVAL_KEYS, ())
        stopped_raw = data["stopped"]
        if not isinstance(stopped_raw, Mapping):
            raise rd.error(
                "VALUE.TYPE", "stopped must map request ids to their outputs", "/stopped"
            )
        produced: dict[str, int] = {}
        for rid, info in stopped_raw.items():
            at = f"/stopped/{rid}"
            item = rd.keys(info, at, ("output_tokens", "reason"), ())
            produced[str(rid)] = rd.integer(item, "output_tokens", at, minimum=0)
        fbs = rd.integer(data, "free_blocks_after_schedule", "", minimum=0)
        step = _busy_step(
            rd,
            data,
            "",
            stopped=tuple(sorted(produced)),
            free_blocks_after_schedule=fbs,
            aborted=rd.ids(data, "aborted", ""),
        )
        if step.step != expected:
            raise rd.error("STEP.ORDER", f"step {step.step} where step {expected} was due", "/step")
        expected += 1
        yield step, tuple(arrivals), produced
    if first:
        raise InputError.at("CONFORM.RECORD.EMPTY", "no header line", display or str(path))


def read_record_workload(path: str | Path, *, display: str | None = None) -> ConformWorkload:
    """The workload a recorder file carries: arrivals at the step that first saw them, each
    finished request's recorded output length (`max_tokens` for one still unfinished)."""
    name = display if display is not None else str(path)
    _, config = read_record_header(path, display=display)
    arrivals: list[tuple[Mapping[str, Any], int, int | None]] = []
    seen: dict[str, int] = {}
    produced: dict[str, int] = {}
    for step, new, done in iter_record_steps(path, display=display):
        for a in new:
            rid = a["id"]
            if not isinstance(rid, str) or not rid or rid in seen:
                raise InputError.at(
                    "CONFORM.RECORD.REQUEST.DUPLICATE"
                    if rid in seen
                    else "CONFORM.RECORD.VALUE.TYPE",
                    f"arrival {rid!r} at step {step.step}: request ids must be new,"
                    " non-empty strings",
                    name,
                    line=step.line,
                )
            seen[rid] = step.step
            arrivals.append((a, step.step, step.line))
        produced.update(done)
    out: list[Arrival] = []
    for k, (a, at_step, line) in enumerate(arrivals):
        values = {}
        for key, minimum in (("prompt_tokens", 1), ("max_tokens", 1), ("priority", None)):
            v = a[key]
            if (
                isinstance(v, bool)
                or not isinstance(v, int)
                or (minimum is not None and v < minimum)
            ):
                raise InputError.at(
                    "CONFORM.RECORD.VALUE.TYPE", f"arrival {a['id']}: {key} {v!r}", name, line=line
                )
            values[key] = v
        t = a["arrival_time"]
        if isinstance(t, bool) or not isinstance(t, int | float):
            raise InputError.at(
                "CONFORM.RECORD.VALUE.TYPE",
                f"arrival {a['id']}: arrival_time {t!r}",
                name,
                line=line,
            )
        if config.max_model_len is not None and values["prompt_tokens"] >= config.max_model_len:
            raise InputError.at(
                "CONFORM.RECORD.REQUEST.PROMPT_TOO_LONG",
                f"arrival {a['id']}: {values['prompt_tokens']} prompt tokens reached the scheduler"
                f" with max_model_len = {config.max_model_len}",
                name,
                line=line,
            )
        out.append(
            Arrival(
                request_id=a["id"],
                prompt_tokens=values["prompt_tokens"],
                max_tokens=values["max_tokens"],
                priority=values["priority"],
                step=at_step,
                position=k,
                arrival_time=float(t),
                produced=produced.get(a["id"]),
            )
        )
    if not arrivals:
        raise InputError.at(
            "CONFORM.RECORD.EMPTY",
            "the record holds no request: there is nothing to compare",
            name,
        )
    for rid in produced:
        if rid not in seen:
            raise InputError.at(
                "CONFORM.RECORD.REQUEST.UNKNOWN", f"{rid} finished but never arrived", name
            )
    workload = ConformWorkload(config, Loop.ENGINE, tuple(out), name)
    if config.policy == "priority":
        _arrival_times_order(workload, name)
    return workload


def _arrival_times_order(workload: ConformWorkload, name: str) -> None:
    """Under priority vLLM compares arrival times; cbaudit's replay receives requests step by
    step. Refuse a record whose arrival times disagree with the steps they arrived at, or tie
    within one priority (vLLM then breaks ties by request id and running order)."""
    ordered = sorted(workload.requests, key=lambda a: (a.step, a.arrival_time or 0.0, a.position))
    for prev, cur in itertools.pairwise(ordered):
        assert prev.arrival_time is not None and cur.arrival_time is not None
        if cur.arrival_time < prev.arrival_time:
            raise InputError.at(
                "CONFORM.RECORD.ARRIVAL_TIME",
                f"{cur.request_id} reached the scheduler at step {cur.step}, after"
                f" {prev.request_id} (step {prev.step}), but has an earlier arrival_time:"
                " cbaudit cannot replay that order under priority scheduling",
                name,
            )
    by_prio: dict[tuple[int, float], str] = {}
    for a in ordered:
        assert a.arrival_time is not None
        other = by_prio.setdefault((a.priority, a.arrival_time), a.request_id)
        if other != a.request_id:
            raise InputError.at(
                "CONFORM.RECORD.ARRIVAL_TIME",
                f"{a.request_id} and {other} have the same priority and arrival_time; vLLM breaks"
                " that tie by request id in its queue and by running order for victims, which"
                " cbaudit does not model",
                name,
            )
