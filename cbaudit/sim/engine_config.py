"""A vLLM engine's scheduler and cache arguments, by vLLM's own names, in cbaudit's terms.

`replay --engine-config FILE` and `cbaudit conform` read the arguments a vLLM v0.23.0 engine
runs with and map them onto a workload's budgets, the `vllm-v1` policy's options and each
request's output limit (the rule markers are in `pinned/vllm-v0.23.0-scheduler-rules.yaml`):

* `max_num_scheduled_tokens`, else `max_num_batched_tokens` -> `token_budget`;
* `max_num_seqs` -> `sequence_budget`; `block_size` -> `kv_block_size`;
* `num_gpu_blocks` (`--num-gpu-blocks-override`) -> `kv_total_blocks = num_gpu_blocks - 1`:
  vLLM's block pool keeps one block as its null block (`null_block: false` models a pool
  without one);
* `long_prefill_token_threshold` -> `long_prefill_token_threshold`;
* `policy` -> vllm-v1's `scheduling`; `scheduler_reserve_full_isl` -> its
  `full_sequence_must_fit`;
* `max_model_len` -> vllm-v1's `max_model_len`, and each request stops at `max_model_len`
  tokens (its `max_output_tokens` becomes at most `max_model_len - prompt_tokens`); a prompt
  of `max_model_len` tokens or more is refused, as vLLM's front end refuses it.

Keys take vLLM's Python names or its command-line spelling (`max-num-seqs`). Settings cbaudit
does not model are refused, never ignored: `max_num_partial_prefills` other than 1,
`enable_prefix_caching`, `async_scheduling` or `enable_chunked_prefill: false`, and any
unknown key. The four sizing arguments have no default here (vLLM picks them per hardware and
usage context, so cbaudit cannot know yours); the others take `SchedulerConfig`'s defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cbaudit.model import Finding, InputError, Location
from cbaudit.sim.workload import Workload

REQUIRED = ("block_size", "num_gpu_blocks", "max_num_batched_tokens", "max_num_seqs")
#: key -> (type, default); a default of None means "not set"
OPTIONAL: dict[str, tuple[type, Any]] = {
    "max_num_scheduled_tokens": (int, None),
    "long_prefill_token_threshold": (int, 0),
    "max_model_len": (int, None),
    "policy": (str, "fcfs"),
    "scheduler_reserve_full_isl": (bool, True),
    "null_block": (bool, True),  # cbaudit's: vLLM always keeps one
}
#: settings cbaudit does not model: accepted only at the value that switches them off
UNSUPPORTED: dict[str, tuple[Any, str]] = {
    "max_num_partial_prefills": (1, "the V1 scheduler ignores it and vLLM 0.23.0 refuses it"),
    "enable_prefix_caching": (
        False,
        "cbaudit does not model prefix caching: run vLLM with --no-enable-prefix-caching",
    ),
    "async_scheduling": (
        False,
        "cbaudit does not model async scheduling: run vLLM with --no-async-scheduling",
    ),
    "enable_chunked_prefill": (True, "cbaudit models vLLM with chunked prefill on"),
}
ALIASES = {"num_gpu_blocks_override": "num_gpu_blocks"}
KNOWN = (*REQUIRED, *OPTIONAL, *UNSUPPORTED)


@dataclass(frozen=True)
class EngineConfig:
    """The scheduler and cache arguments of one vLLM engine (vLLM's names)."""

    block_size: int
    num_gpu_blocks: int
    max_num_batched_tokens: int
    max_num_seqs: int
    max_num_scheduled_tokens: int | None = None
    long_prefill_token_threshold: int = 0
    max_model_len: int | None = None
    policy: str = "fcfs"
    scheduler_reserve_full_isl: bool = True
    null_block: bool = True

    @property
    def token_budget(self) -> int:
        """The per-step token budget the scheduler starts each step with."""
        if self.max_num_scheduled_tokens is not None:
            return self.max_num_scheduled_tokens
        return self.max_num_batched_tokens

    @property
    def usable_blocks(self) -> int:
        """Blocks requests can hold: one of vLLM's pool is its null block."""
        return self.num_gpu_blocks - 1 if self.null_block else self.num_gpu_blocks

    def budgets(self) -> dict[str, int]:
        """The workload budgets this engine runs under."""
        return {
            "token_budget": self.token_budget,
            "sequence_budget": self.max_num_seqs,
            "kv_block_size": self.block_size,
            "kv_total_blocks": self.usable_blocks,
            "long_prefill_token_threshold": self.long_prefill_token_threshold,
        }

    def policy_options(self) -> dict[str, Any]:
        """The `vllm-v1` options that mirror this engine's scheduler."""
        out: dict[str, Any] = {
            "scheduling": self.policy,
            "full_sequence_must_fit": self.scheduler_reserve_full_isl,
        }
        if self.max_model_len is not None:
            out["max_model_len"] = self.max_model_len
        return out

    def output_limit(self, prompt_tokens: int, max_tokens: int) -> int:
        """Outputs a request can produce: it stops at `max_tokens` or at `max_model_len`."""
        if self.max_model_len is None:
            return max_tokens
        return min(max_tokens, self.max_model_len - prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        """The configuration by vLLM's names (unset optional values omitted)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in REQUIRED}
        for key in OPTIONAL:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def apply(self, workload: Workload) -> Workload:
        """`workload` under this engine: its budgets, and each request's output limit.

        A prompt of `max_model_len` tokens or more is refused (vLLM's front end refuses it).
        """
        limit = self.max_model_len
        requests = []
        hidden = dict(workload.hidden_realized) if workload.hidden_realized is not None else None
        for r in workload.requests:
            if limit is not None and r.prompt_tokens >= limit:
                raise InputError.at(
                    "ENGINE_CONFIG.PROMPT_TOO_LONG",
                    f"request {r.request_id} has {r.prompt_tokens} prompt tokens; vLLM refuses"
                    f" a prompt of max_model_len = {limit} tokens or more",
                    workload.source,
                    pointer="/requests",
                )
            cap = self.output_limit(r.prompt_tokens, r.max_output_tokens)
            if cap < r.max_output_tokens:
                requests.append(replace(r, max_output_tokens=cap))
                if hidden is not None and hidden.get(r.request_id, 0) > cap:
                    hidden[r.request_id] = cap
            else:
                requests.append(r)
        capped = replace(workload, requests=tuple(requests), hidden_realized=hidden)
        return capped.with_budgets(self.budgets())


def _error(code: str, message: str, source: str, pointer: str, locate: Any) -> InputError:
    loc = locate(pointer) if locate is not None else Location(file=source, pointer=pointer)
    return InputError(Finding(code, message, location=loc))


def engine_config_from_data(
    data: Any, source: str = "<engine-config>", *, pointer: str = "", locate: Any = None
) -> EngineConfig:
    """Build an EngineConfig from parsed data; InputError (located) when unusable.

    `locate(pointer) -> Location` places findings in the file when given.
    """
    if not isinstance(data, Mapping):
        raise _error(
            "ENGINE_CONFIG.SHAPE", "an engine configuration is a mapping", source, pointer, locate
        )
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    for raw_key, value in data.items():
        at = f"{pointer}/{raw_key}"
        key = str(raw_key).replace("-", "_")
        key = ALIASES.get(key, key)
        if key not in KNOWN:
            raise _error(
                "ENGINE_CONFIG.KEY.UNKNOWN",
                f"unknown engine argument {raw_key!r} (known: {', '.join(KNOWN)})",
                source,
                at,
                locate,
            )
        if key in values:
            raise _error(
                "ENGINE_CONFIG.KEY.DUPLICATE",
                f"{raw_key!r} sets {key} again (first at {where[key]})",
                source,
                at,
                locate,
            )
        values[key] = value
        where[key] = at
    for key in REQUIRED:
        if key not in values:
            raise _error(
                "ENGINE_CONFIG.KEY.MISSING",
                f"the engine configuration needs {key} (vLLM picks it per hardware and usage"
                " context, so state the value your engine runs with)",
                source,
                pointer,
                locate,
            )
    for key, (allowed, why) in UNSUPPORTED.items():
        if key in values:
            _typed(values[key], type(allowed), key, source, where[key], locate)
            if values[key] != allowed:
                raise _error(
                    "ENGINE_CONFIG.UNSUPPORTED",
                    f"{key} = {values[key]!r} is not modelled ({why})",
                    source,
                    where[key],
                    locate,
                )
    out: dict[str, Any] = {}
    for key in REQUIRED:
        out[key] = _typed(values[key], int, key, source, where[key], locate)
    for key, (kind, default) in OPTIONAL.items():
        if key in values and values[key] is not None:
            out[key] = _typed(values[key], kind, key, source, where[key], locate)
        else:
            out[key] = default
    cfg = EngineConfig(**out)
    _check_ranges(cfg, source, where, pointer, locate)
    return cfg


def _typed(value: Any, kind: type, key: str, source: str, pointer: str, locate: Any) -> Any:
    ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    if not ok:
        raise _error(
            "ENGINE_CONFIG.VALUE.TYPE",
            f"{key} must be {'an integer' if kind is int else kind.__name__}, got {value!r}",
            source,
            pointer,
            locate,
        )
    return value


def _check_ranges(
    cfg: EngineConfig, source: str, where: Mapping[str, str], pointer: str, locate: Any
) -> None:
    def bad(key: str, message: str) -> InputError:
        return _error("ENGINE_CONFIG.VALUE.RANGE", message, source, where.get(key, pointer), locate)

    for key in ("block_size", "max_num_batched_tokens", "max_num_seqs"):
        if getattr(cfg, key) < 1:
            raise bad(key, f"{key} must be >= 1, got {getattr(cfg, key)}")
    if cfg.usable_blocks < 1:
        raise bad(
            "num_gpu_blocks",
            f"num_gpu_blocks = {cfg.num_gpu_blocks} leaves {cfg.usable_blocks} usable blocks"
            + (" (one is vLLM's null block)" if cfg.null_block else ""),
        )
    if cfg.max_num_scheduled_tokens is not None and cfg.max_num_scheduled_tokens < 1:
        raise bad("max_num_scheduled_tokens", "max_num_scheduled_tokens must be >= 1")
    if cfg.long_prefill_token_threshold < 0:
        raise bad("long_prefill_token_threshold", "long_prefill_token_threshold must be >= 0")
    if cfg.max_model_len is not None and cfg.max_model_len < 2:
        raise bad("max_model_len", f"max_model_len must be >= 2, got {cfg.max_model_len}")
    if cfg.policy not in ("fcfs", "priority"):
        raise bad("policy", f"policy must be fcfs or priority, got {cfg.policy!r}")
    if cfg.max_num_batched_tokens < cfg.max_num_seqs:
        raise bad(
            "max_num_batched_tokens",
            f"max_num_batched_tokens ({cfg.max_num_batched_tokens}) is smaller than"
            f" max_num_seqs ({cfg.max_num_seqs}); vLLM's SchedulerConfig refuses that",
        )


def load_engine_config(path: str | Path, *, display: str | None = None) -> EngineConfig:
    """Read an engine configuration file (YAML or JSON), strictly."""
    from cbaudit.io.loader import load_document

    doc = load_document(path, display=display)
    return engine_config_from_data(doc.data, doc.path, locate=doc.locate)
