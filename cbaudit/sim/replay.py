"""`replay` as a library call: build the engine from options, run it, turn it into a result.

Parse -> build -> run -> result; the CLI and the gate kind both come through here and nothing
here prints or exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cbaudit.contract.workload_records import Queue
from cbaudit.io.atomic import new_file_mode
from cbaudit.model import CheckResult, EvidenceClass, Finding, InputError, Location, UsageError
from cbaudit.policies.registry import POLICIES
from cbaudit.sim.engine import Engine, InitialView, ReplayRun, TraceSink, Validation
from cbaudit.sim.metrics import summarize
from cbaudit.sim.workload import Workload

if TYPE_CHECKING:  # an engine config is loaded (and its module imported) only when given
    from cbaudit.sim.engine_config import EngineConfig

CHECK_NAME = "replay"


@dataclass(frozen=True)
class ReplayOptions:
    """Everything that selects one replay besides the workload."""

    policy: str
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    cost_model: str = "unit"
    cost_options: Mapping[str, Any] = field(default_factory=dict)
    horizon: int | None = None
    seed: int | None = None
    budgets: Mapping[str, Any] = field(default_factory=dict)
    windows: tuple[int, ...] = ()
    validation: Validation = Validation.CONTRACT
    initial: Mapping[str, InitialView] = field(default_factory=dict)
    per_request: bool = True
    # SLO outcome ledger (article 0x07): goodput limits (`ttft_ms`, `tbt_ms`, `tpot_ms`,
    # `e2e_ms`) replacing per-request SLOs, and the observation window; either one turns it on.
    goodput: Mapping[str, float] = field(default_factory=dict)
    slo_window_ms: float | None = None
    # Preemption model (article 0x0C, lecture 4): empty = recompute; {mode: swap | auto |
    # recompute, link_bytes_per_ms, ...} (cbaudit.sim.preemption_swap).
    preemption: Mapping[str, Any] = field(default_factory=dict)
    # A hybrid model's state pool (lecture 4): {capacity_bytes, bytes_per_request | model}
    # (cbaudit.sim.state_pool); empty = none.
    state_pool: Mapping[str, Any] = field(default_factory=dict)
    # CUDA-graph buckets (lecture 4): {buckets: pow2 | stride:G | [sizes], max_batch}
    # (cbaudit.sim.graph_padding); empty = no padding.
    graph_buckets: Mapping[str, Any] = field(default_factory=dict)
    # A vLLM engine's arguments (`--engine-config`): budgets, vllm-v1 options, output limits.
    engine_config: EngineConfig | None = None
    # quiet decode stretches in closed form (cbaudit.sim.stretch); False runs every iteration
    # through the policy and the checks. Not part of `describe`: both give the same report.
    stretches: bool = True

    def describe(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.preemption:
            extra["preemption"] = dict(sorted(self.preemption.items()))
        if self.state_pool:
            extra["state_pool"] = dict(sorted(self.state_pool.items()))
        if self.graph_buckets:
            extra["graph_buckets"] = dict(sorted(self.graph_buckets.items()))
        if self.goodput:
            extra["goodput"] = dict(sorted(self.goodput.items()))
        if self.slo_window_ms is not None:
            extra["slo_window_ms"] = self.slo_window_ms
        if self.engine_config is not None:
            extra["engine_config"] = self.engine_config.to_json()
        return {
            **extra,
            "policy": self.policy,
            "policy_options": dict(self.policy_options),
            "cost_model": self.cost_model,
            "cost_options": dict(self.cost_options),
            "horizon": self.horizon,
            "seed": self.seed,
            "budgets": dict(self.budgets),
            "windows": list(self.windows),
            "validation": self.validation.value,
        }


def engine_policy_options(options: ReplayOptions) -> dict[str, Any]:
    """vllm-v1's options under `options.engine_config`; UsageError when the replay's own
    policy, options or budgets would contradict the engine it describes."""
    cfg = options.engine_config
    assert cfg is not None
    if options.policy != "vllm-v1":
        raise UsageError(
            f"--engine-config describes a vLLM engine: it sets vllm-v1's options, not those of"
            f" {options.policy!r} (give --policy vllm-v1, or set budgets with --budget)"
        )
    mapped = cfg.policy_options()
    both = sorted(set(mapped) & set(options.policy_options))
    if both:
        raise UsageError(
            f"--policy-option {', '.join(both)} contradicts --engine-config (which sets it);"
            " change the engine configuration instead"
        )
    budgets = sorted(set(cfg.budgets()) & set(options.budgets))
    if budgets:
        raise UsageError(
            f"--budget {', '.join(budgets)} contradicts --engine-config (which sets it);"
            " change the engine configuration instead"
        )
    return {**mapped, **options.policy_options}


def make_policy(
    policy_id: str,
    options: Mapping[str, Any],
    *,
    file: str | None = None,
    pointer: str | None = None,
) -> Any:
    """Instantiate a registered policy; unknown ids and bad options are located input errors."""
    if policy_id not in POLICIES:
        raise InputError.at(
            "REPLAY.POLICY.UNKNOWN",
            f"unknown policy {policy_id!r} (known: {', '.join(POLICIES.ids())})",
            file,
            pointer=pointer,
        )
    try:
        return POLICIES.create(policy_id, options)
    except ValueError as err:
        raise InputError.at("REPLAY.POLICY.OPTION", str(err), file, pointer=pointer) from None


def make_cost_model(
    name: str,
    options: Mapping[str, Any],
    *,
    file: str | None = None,
    pointer: str = "",
    base_dir: Path | None = None,
) -> Any:
    """A cost model from the shared registry (`cbaudit.sim.cost_models.COST_MODELS`).

    `unit`, the default, is built by its registered factory without loading the registry's
    module (the roofline and table models and their profiles): a short replay starts faster.
    """
    if name == "unit":
        from types import SimpleNamespace

        from cbaudit.sim.cost_unit import from_options

        return from_options(options, SimpleNamespace(file=file, pointer=pointer))
    from cbaudit.sim.cost_models import OptionSource, get_cost_model

    return get_cost_model(
        name, options, source=OptionSource(file=file, pointer=pointer, base_dir=base_dir)
    )


def parse_initial(data: Any, source: str, pointer: str = "") -> dict[str, InitialView]:
    """Initial request views from SchedulerState-shaped data (`requests: [view, ...]`)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("requests"), list):
        raise InputError.at(
            "REPLAY.INITIAL.SHAPE", "initial state needs a requests list", source, pointer=pointer
        )
    out: dict[str, InitialView] = {}
    for i, v in enumerate(data["requests"]):
        ptr = f"{pointer}/requests/{i}"
        try:
            queue = Queue(v["queue"])
            out[str(v["request_id"])] = InitialView(
                emitted=int(v["emitted_tokens"]),
                computed=int(v["computed_tokens"]),
                queue=queue,
                snapshot_version=int(v.get("snapshot_version", 0)),
                ready=bool(v.get("ready", True)),
                readiness_reason=v.get("readiness_reason"),
                last_served=int(v.get("last_served", -1)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError.at(
                "REPLAY.INITIAL.SHAPE", f"bad initial view: {err}", source, pointer=ptr
            ) from None
    return out


def run(
    workload: Workload,
    options: ReplayOptions,
    *,
    trace: TraceSink | None = None,
    progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
    base_dir: Path | None = None,
    steps: int = 0,
) -> tuple[ReplayRun, dict[str, Any], EvidenceClass]:
    """Run one replay; returns the run, its metrics and the time metrics' evidence class.

    `steps` > 0 records the first `steps` iterations (`step_trace`) into `run.extra["steps"]`.
    """
    policy_options = dict(options.policy_options)
    if options.engine_config is not None:
        policy_options = engine_policy_options(options)
        workload = options.engine_config.apply(workload)
    if options.budgets:
        workload = workload.with_budgets(options.budgets)
    policy = make_policy(options.policy, policy_options, file=source)
    problem = getattr(policy, "budget_problem", None)
    why = problem(workload.budgets) if problem is not None else None
    if why is not None:
        raise InputError.at("REPLAY.POLICY.OPTION", why, source, pointer="/budgets")
    cost = make_cost_model(options.cost_model, options.cost_options, file=source, base_dir=base_dir)
    evidence = getattr(cost, "evidence_class", EvidenceClass.SYNTHETIC)
    buckets = None
    if options.graph_buckets:
        from cbaudit.sim.graph_padding import GraphPaddedCost, make_graph_buckets

        try:
            buckets = make_graph_buckets(options.graph_buckets)
        except ValueError as err:
            raise InputError.at("REPLAY.GRAPH_BUCKETS.OPTION", str(err), source) from None
        if buckets is not None:
            cost = GraphPaddedCost(cost, buckets)
    state_pool, preemption = _pools(options, cost, source, base_dir)
    if preemption is not None and workload.budgets.kv_block_size is not None:
        preemption.block_size = workload.budgets.kv_block_size
    recorder = None
    if steps > 0:
        from cbaudit.sim.step_trace import StepRecorder

        recorder = StepRecorder(cost, steps)
    engine = Engine(
        workload,
        policy,
        cost,
        horizon=options.horizon,
        validation=options.validation,
        trace=trace,
        initial=options.initial,
        progress=progress,
        preemption=preemption,
        step_observer=recorder,
        stretches=options.stretches,
        state_pool=state_pool,
    )
    result = engine.run()
    if recorder is not None:
        result.extra["steps"] = recorder.steps
    metrics = summarize(
        result, windows=options.windows, time_evidence=evidence, per_request=options.per_request
    )
    if options.goodput or options.slo_window_ms is not None:
        from cbaudit.sim.slo import slo_report

        try:
            metrics["slo"] = slo_report(
                result,
                window_ms=options.slo_window_ms,
                goodput=options.goodput or None,
                per_request=options.per_request,
            )
        except ValueError as err:
            raise InputError.at(
                "REPLAY.SLO.CLOCK", str(err), workload.source, pointer="/clock"
            ) from None
        metrics["evidence_classes"]["slo"] = evidence.value
    if callable(getattr(policy, "report", None)):
        metrics["policy_report"] = policy.report()
    if "preemption" in result.extra:
        metrics["preemption"] = result.extra["preemption"]
    if preemption is not None and preemption.extended:
        metrics["preemption_log"] = preemption.log_report()
    if state_pool is not None:
        kv_bytes = getattr(getattr(cost, "model", None), "kv_bytes_per_token", None)
        if kv_bytes is None:
            kv_bytes = state_pool.kv_bytes_per_token
        bs = workload.budgets.kv_block_size
        block_bytes = None if kv_bytes is None or bs is None else int(kv_bytes * bs)
        metrics["pools"] = state_pool.report(workload.budgets.kv_total_blocks, block_bytes)
    if buckets is not None:
        metrics["graph_padding"] = buckets.totals(result.tokens_per_iteration)
    metrics["options"] = options.describe()
    metrics["cost_model"] = (
        cost.describe() if hasattr(cost, "describe") else {"name": options.cost_model}
    )
    return result, metrics, evidence


def _pools(
    options: ReplayOptions, cost: Any, source: str | None, base_dir: Path | None
) -> tuple[Any, Any]:
    """The state pool and the preemption model the options declare (either may be None)."""
    if not options.state_pool and not options.preemption:
        return None, None  # the engine's recompute path, without loading either module
    from cbaudit.sim.preemption_swap import defaults_of, make_preemption
    from cbaudit.sim.state_pool import make_state_pool

    defaults = defaults_of(cost)
    model = getattr(cost, "model", None)
    model_state = getattr(model, "state_bytes_per_request", None)
    try:
        pool = make_state_pool(options.state_pool, model_state, base_dir)
    except ValueError as err:
        raise InputError.at("REPLAY.STATE_POOL.OPTION", str(err), source) from None
    if pool is not None:
        defaults = replace(defaults, state_bytes=pool.bytes_per_request)
    try:
        preemption = make_preemption(options.preemption, defaults, state_pool=pool)
    except ValueError as err:
        raise InputError.at("REPLAY.PREEMPTION.OPTION", str(err), source) from None
    return pool, preemption


def to_result(
    run_: ReplayRun, metrics: Mapping[str, Any], evidence: EvidenceClass, subject: str
) -> CheckResult:
    """The replay as one check result: contract findings from the engine become its findings."""
    findings = tuple(
        Finding(
            f.code,
            f"iteration {f.iteration}: {f.message}",
            location=Location(file=subject, pointer=f"/iterations/{f.iteration}/{f.record}"),
        )
        for f in run_.findings
    )
    worst = EvidenceClass.SYNTHETIC if evidence is EvidenceClass.SYNTHETIC else evidence
    occ = metrics["slot_occupancy"]
    reason = (
        f"{run_.identity.policy_id}: {run_.iterations} iterations,"
        f" {metrics['requests_finished']}/{metrics['requests_total']} finished,"
        f" slot occupancy {occ['fraction']} ({run_.stop_reason})"
    )
    return CheckResult(
        check=CHECK_NAME,
        subject=subject,
        findings=findings,
        metrics=dict(metrics),
        evidence_class=worst,
        reason=reason,
    )


class JsonlTrace:
    """A JSONL trace written to a temporary file and renamed into place only on success."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def write(self, kind: str, data: Mapping[str, Any]) -> None:
        self._fh.write(
            json.dumps({"record": kind, "data": data}, sort_keys=True, separators=(",", ":"))
        )
        self._fh.write("\n")


@contextlib.contextmanager
def trace_file(path: Path) -> Iterator[JsonlTrace]:
    """Open an atomic JSONL trace at `path` (the old file, or the whole new one; never half)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError.at("REPLAY.TRACE.NO_DIR", f"directory {parent} does not exist", str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield JsonlTrace(fh)
        os.chmod(tmp, new_file_mode(path))  # (mkstemp's 0600 is not the output's mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_asserts(
    metrics: Mapping[str, Any], asserts: Mapping[str, Any], *, file: str | None, pointer: str
) -> list[Finding]:
    """Exact checks of metric paths (`a.b.c`); a fraction-bearing target also takes "n/d"."""
    out: list[Finding] = []
    for path, want in asserts.items():
        node: Any = metrics
        for part in str(path).split("."):
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            else:
                raise InputError.at(
                    "REPLAY.ASSERT.UNKNOWN_PATH",
                    f"metric path {path!r} does not exist in the replay metrics",
                    file,
                    pointer=f"{pointer}/{path}",
                )
        got = node
        if isinstance(node, Mapping) and "fraction" in node and isinstance(want, str):
            got = node["fraction"]
            same = _as_fraction(want) == Fraction(got)
        else:
            same = _same(got, want)
        if not same:
            out.append(
                Finding(
                    "REPLAY.ASSERT.MISMATCH",
                    f"{path}: expected {want!r}, the replay gives {got!r}",
                    location=Location(file=file, pointer=f"{pointer}/{path}"),
                )
            )
    return out


def _as_fraction(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want
    if isinstance(got, int | float) and isinstance(want, int | float):
        return got == want
    if isinstance(got, Sequence) and isinstance(want, Sequence) and not isinstance(got, str):
        return list(got) == list(want)
    return bool(got == want)
