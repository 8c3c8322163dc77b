"""The calculators a `calculator_claim` check may name: their inputs, outputs and units.

Each entry of `CALCULATORS` wraps functions of `cbaudit.sim.calculators` (the lecture's cost
models, the same arithmetic `cbaudit model ...` prints): it declares the inputs it takes (a
profile, an integer, a number, a bucket set), the outputs it gives with their unit, and a
`compute` that returns the outputs as exact `Fraction`s (or a label). Declaring the table
imports nothing heavy; `compute` loads the simulator's calculators when a check runs.

Units (`UNITS`): each has a dimension and a factor to that dimension's base (milliseconds,
bytes, FLOPs, tokens, ...). A claim may state a figure in any unit of its output's dimension
(`2.50 s` against `step_ms`, `0.20 GiB` against `state_bytes_per_request`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cbaudit.sim import calculators as calc
    from cbaudit.sim.profiles import HardwareProfile, ModelProfile

Value = Fraction | str


class Dimension(StrEnum):
    """What an output measures; a claim's unit must be of its output's dimension."""

    TIME = "time"  # base: ms
    TIME_PER_TOKEN = "time_per_token"  # base: ms/token
    TIME_PER_TOKEN_SQ = "time_per_token_sq"  # base: ms/token^2
    BYTES = "bytes"  # base: B
    FLOPS = "flops"  # base: FLOP
    TOKENS = "tokens"  # base: tokens
    COUNT = "count"  # graphs, steps, requests
    RATIO = "ratio"  # a pure number (x, eta)
    PERCENT = "percent"
    LABEL = "label"  # a word: `memory`, `swap`, `state_pool`


@dataclass(frozen=True, slots=True)
class Unit:
    dimension: Dimension
    factor: Fraction  # one of this unit in the dimension's base unit


def _u(dimension: Dimension, factor: int | Fraction = 1) -> Unit:
    return Unit(dimension, Fraction(factor))


UNITS: Mapping[str, Unit] = MappingProxyType(
    {
        "ms": _u(Dimension.TIME),
        "s": _u(Dimension.TIME, 1000),
        "us": _u(Dimension.TIME, Fraction(1, 1000)),
        "ms/token": _u(Dimension.TIME_PER_TOKEN),
        "ms/token^2": _u(Dimension.TIME_PER_TOKEN_SQ),
        "B": _u(Dimension.BYTES),
        "KB": _u(Dimension.BYTES, 10**3),
        "MB": _u(Dimension.BYTES, 10**6),
        "GB": _u(Dimension.BYTES, 10**9),
        "TB": _u(Dimension.BYTES, 10**12),
        "KiB": _u(Dimension.BYTES, 2**10),
        "MiB": _u(Dimension.BYTES, 2**20),
        "GiB": _u(Dimension.BYTES, 2**30),
        "FLOP": _u(Dimension.FLOPS),
        "GFLOP": _u(Dimension.FLOPS, 10**9),
        "TFLOP": _u(Dimension.FLOPS, 10**12),
        "PFLOP": _u(Dimension.FLOPS, 10**15),
        "tokens": _u(Dimension.TOKENS),
        "Ktokens": _u(Dimension.TOKENS, 1000),
        "count": _u(Dimension.COUNT),
        "x": _u(Dimension.RATIO),
        "%": _u(Dimension.PERCENT),
        "label": _u(Dimension.LABEL),
    }
)


class InputType(StrEnum):
    """What a calculator input holds."""

    MODEL = "model"  # a shipped model profile id, or a profile file relative to the check
    HARDWARE = "hardware"  # a shipped hardware profile id, or a file
    INTEGER = "integer"  # >= 0
    NUMBER = "number"  # a finite number (an exact decimal)
    TEXT = "text"  # a dtype, a bucket set


@dataclass(frozen=True, slots=True)
class InputDecl:
    type: InputType
    required: bool
    help: str


@dataclass(frozen=True)
class Inputs:
    """A claim's inputs, loaded: profiles read, numbers exact."""

    values: Mapping[str, Any]

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def number(self, name: str) -> Fraction | None:
        value = self.values.get(name)
        return None if value is None else Fraction(value)


@dataclass(frozen=True)
class Calculator:
    """One named calculator: its inputs, its outputs (name -> unit) and its computation."""

    name: str
    summary: str
    inputs: Mapping[str, InputDecl]
    outputs: Mapping[str, str]
    compute: Callable[[Inputs], dict[str, Value]]

    def dimension(self, output: str) -> Dimension:
        return UNITS[self.outputs[output]].dimension


def _req(t: InputType, help_: str) -> InputDecl:
    return InputDecl(t, True, help_)


def _opt(t: InputType, help_: str) -> InputDecl:
    return InputDecl(t, False, help_)


def load_input(decl: InputDecl, value: Any, base_dir: Path | None) -> Any:
    """An input as the calculator reads it: a profile loaded, a number made exact.

    Raises `InputError` (a profile that does not load) or ValueError (a bad value).
    """
    from cbaudit.sim.profiles import exact, load_hardware_profile, load_model_profile

    if decl.type is InputType.MODEL:
        return load_model_profile(str(value), base_dir=base_dir)
    if decl.type is InputType.HARDWARE:
        return load_hardware_profile(str(value), base_dir=base_dir)
    if decl.type is InputType.INTEGER:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"expected an integer >= 0, got {value!r}")
        return value
    if decl.type is InputType.NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"expected a number, got {value!r}")
        return exact(value)
    return str(value)


# --------------------------------------------------------------------------- shared


def _rates(i: Inputs, model: ModelProfile, hardware: HardwareProfile) -> calc.Rates:
    from cbaudit.sim import calculators as calc

    return calc.Rates.of(
        hardware, i.get("dtype") or model.dtype, mbu=i.number("mbu"), mfu=i.number("mfu")
    )


_MODEL = _req(InputType.MODEL, "model profile (shipped id or file)")
_HARDWARE = _req(InputType.HARDWARE, "hardware profile (shipped id or file)")
_DTYPE = _opt(InputType.TEXT, "dtype of the dense peak (default: the model's)")
_MBU = _opt(InputType.NUMBER, "memory-bandwidth utilisation (default: the hardware's)")
_MFU = _opt(InputType.NUMBER, "FLOP utilisation (default: the hardware's)")


# --------------------------------------------------------------------------- step-time


def _step_time(i: Inputs) -> dict[str, Value]:
    from cbaudit.sim import calculators as calc

    profile, hardware = i.get("model"), i.get("hardware")
    model, rates = calc.StepModel.of(profile), _rates(i, profile, hardware)
    rows, context = i.get("decode_rows") or 0, i.get("context") or 0
    budget, prompt = i.get("budget"), i.get("prompt_len")
    if budget is not None and i.get("prefill") is not None:
        raise ValueError("give the prefill chunk or the budget, not both")
    chunk = budget - rows if budget is not None else i.get("prefill") or 0
    if chunk < 0:
        raise ValueError(f"a budget of {budget} leaves no room beside {rows} decode rows")
    step = calc.mixed_step(model, rates, decode_rows=rows, context=context, prefill=chunk)
    out: dict[str, Value] = {
        "weight_bytes": step.weight_bytes,
        "decode_kv_read_bytes": step.decode_kv_bytes,
        "total_bytes": step.bytes,
        "decode_linear_flops": step.decode_linear_flops,
        "decode_attention_flops": step.decode_attention_flops,
        "prefill_linear_flops": step.prefill_linear_flops,
        "prefill_attention_flops": step.prefill_attention_flops,
        "total_flops": step.flops,
        "memory_ms": step.memory_ms,
        "compute_ms": step.compute_ms,
        "step_ms": step.step_ms,
        "binding_term": step.bound.value,
        "prefill_linear_ms": step.prefill_linear_ms,
        "prefill_attention_percent": 100 * step.prefill_attention_share,
        "weight_read_floor_ms": calc.weight_read_floor_ms(model, rates),
    }
    if model.attention_flops_per_pair:
        out["attention_crossover_context"] = calc.attention_crossover_context(model)
    if chunk and rows:
        alone = calc.mixed_step(model, rates, decode_rows=rows, context=context, prefill=0)
        out["decode_only_step_ms"] = alone.step_ms
        out["itl_spike_ratio"] = step.step_ms / alone.step_ms
    if prompt is not None:
        if budget is None:
            raise ValueError("a chunked prefill's TTFT (prompt_len) needs the budget")
        ttft = calc.chunked_prefill(
            model, rates, decode_rows=rows, context=context, prompt_len=prompt, budget=budget
        )
        out["chunk_steps"] = Fraction(ttft.steps)
        out["ttft_ms"] = ttft.ttft_ms
    return out


STEP_TIME = Calculator(
    name="step-time",
    summary="T_step(B, Lc) = max(bytes / (beta MBU), FLOPs / (pi MFU)); with a budget and a"
    " prompt, TTFT = ceil(L / (T - B)) * T_step(B, T - B)",
    inputs={
        "model": _MODEL,
        "hardware": _HARDWARE,
        "dtype": _DTYPE,
        "mbu": _MBU,
        "mfu": _MFU,
        "decode_rows": _opt(InputType.INTEGER, "B, decode rows in the step"),
        "context": _opt(InputType.INTEGER, "Lbar, their mean context (tokens)"),
        "prefill": _opt(InputType.INTEGER, "Lc, the prefill chunk (tokens)"),
        "budget": _opt(InputType.INTEGER, "T, the token budget (the chunk is T - B)"),
        "prompt_len": _opt(InputType.INTEGER, "L, a prompt prefilled in chunks (needs budget)"),
    },
    outputs={
        "weight_bytes": "B",
        "decode_kv_read_bytes": "B",
        "total_bytes": "B",
        "decode_linear_flops": "FLOP",
        "decode_attention_flops": "FLOP",
        "prefill_linear_flops": "FLOP",
        "prefill_attention_flops": "FLOP",
        "total_flops": "FLOP",
        "memory_ms": "ms",
        "compute_ms": "ms",
        "step_ms": "ms",
        "binding_term": "label",
        "prefill_linear_ms": "ms",
        "prefill_attention_percent": "%",
        "weight_read_floor_ms": "ms",
        "attention_crossover_context": "tokens",
        "decode_only_step_ms": "ms",
        "itl_spike_ratio": "x",
        "chunk_steps": "count",
        "ttft_ms": "ms",
    },
    compute=_step_time,
)


# --------------------------------------------------------------------------- preemption


def _preemption(i: Inputs) -> dict[str, Value]:
    from cbaudit.sim import calculators as calc

    profile, hardware = i.get("model"), i.get("hardware")
    model, rates = calc.StepModel.of(profile), _rates(i, profile, hardware)
    link = i.number("link_bytes_per_s")
    link = calc.host_link_bytes_per_s(hardware) if link is None else link
    kv = i.number("kv_bytes_per_token")
    recompute = calc.RecomputeCost.of(model, rates)
    swap = calc.SwapCost(model.kv_bytes_per_token if kv is None else kv, link)
    length = i.get("length")
    (row,) = calc.preemption_table(recompute, [swap], [length])
    out: dict[str, Value] = {
        "a_ms_per_token": recompute.a_ms_per_token,
        "c_ms_per_token_sq": recompute.c_ms_per_token_sq,
        "s_ms_per_token": swap.s_ms_per_token,
        "recompute_ms": row.recompute_ms,
        "swap_ms": row.swap_ms[0],
        "cheaper": row.cheaper[0],
    }
    crossover = recompute.crossover(swap)
    out["crossover_tokens" if crossover is not None else "crossover"] = (
        crossover if crossover is not None else "none"
    )
    return out


PREEMPTION_COST = Calculator(
    name="preemption-cost",
    summary="T_recompute(L) = aL + cL^2, T_swap(L) = sL, L* = (s - a) / c",
    inputs={
        "model": _MODEL,
        "hardware": _HARDWARE,
        "dtype": _DTYPE,
        "mfu": _MFU,
        "length": _req(InputType.INTEGER, "L, the victim's tokens"),
        "kv_bytes_per_token": _opt(InputType.NUMBER, "kv swapped per token (default: model's)"),
        "link_bytes_per_s": _opt(InputType.NUMBER, "host link, each way (default: hardware's)"),
    },
    outputs={
        "a_ms_per_token": "ms/token",
        "c_ms_per_token_sq": "ms/token^2",
        "s_ms_per_token": "ms/token",
        "recompute_ms": "ms",
        "swap_ms": "ms",
        "cheaper": "label",
        "crossover_tokens": "tokens",
        "crossover": "label",
    },
    compute=_preemption,
)


# --------------------------------------------------------------------------- graph padding


def _graph_padding(i: Inputs) -> dict[str, Value]:
    from cbaudit.sim import calculators as calc

    max_batch = i.get("max_batch")
    pad = calc.graph_padding(calc.parse_buckets(i.get("buckets")), max_batch)
    out: dict[str, Value] = {
        "graphs": Fraction(pad.graphs),
        "mean_padding_tokens": pad.mean_padding,
        "worst_padding_tokens": Fraction(pad.worst_padding),
        "worst_batch": Fraction(pad.worst_batch),
    }
    profile, hardware = i.get("model"), i.get("hardware")
    token_ms, step_ms = i.number("token_ms"), i.number("step_ms")
    if (profile is None) != (hardware is None):
        raise ValueError("the padded token's cost needs both model and hardware")
    if profile is not None:
        if i.get("context") is None:
            raise ValueError("the padded token's cost needs the mean context (context)")
        model, rates = calc.StepModel.of(profile), _rates(i, profile, hardware)
        token_ms = calc.padded_token_ms(model, rates, i.get("context"))
        if step_ms is None:
            step_ms = calc.mixed_step(
                model, rates, decode_rows=max_batch, context=i.get("context"), prefill=0
            ).step_ms
    if token_ms is not None:
        waste = calc.PaddingWaste(pad.mean_padding, token_ms, step_ms)
        out["padded_token_ms"] = token_ms
        out["waste_ms"] = waste.waste_ms
        share = waste.share_of_step
        if share is not None and step_ms is not None:
            out["step_ms"] = step_ms
            out["waste_percent_of_step"] = 100 * share
    return out


GRAPH_PADDING = Calculator(
    name="graph-padding",
    summary="b(B) = min{b_i >= B}: E[b(B) - B] over B uniform in 1..N, the worst case, and"
    " E[waste] = E[Delta] * Lbar kv / (beta MBU)",
    inputs={
        "buckets": _req(InputType.TEXT, "pow2, stride:G or a list 1,2,4"),
        "max_batch": _req(InputType.INTEGER, "N, the largest batch"),
        "model": _opt(InputType.MODEL, "model profile (for a padded token's cost)"),
        "hardware": _opt(InputType.HARDWARE, "hardware profile (for a padded token's cost)"),
        "dtype": _DTYPE,
        "mbu": _MBU,
        "mfu": _MFU,
        "context": _opt(InputType.INTEGER, "Lbar, the mean context (tokens)"),
        "token_ms": _opt(InputType.NUMBER, "a padded token's cost (instead of a model)"),
        "step_ms": _opt(InputType.NUMBER, "the step the waste is a share of"),
    },
    outputs={
        "graphs": "count",
        "mean_padding_tokens": "tokens",
        "worst_padding_tokens": "tokens",
        "worst_batch": "count",
        "padded_token_ms": "ms",
        "waste_ms": "ms",
        "step_ms": "ms",
        "waste_percent_of_step": "%",
    },
    compute=_graph_padding,
)


# --------------------------------------------------------------------------- hybrid pools


def _hybrid(i: Inputs) -> dict[str, Value]:
    from cbaudit.sim import calculators as calc

    profile, hardware = i.get("model"), i.get("hardware")
    link = i.number("link_bytes_per_s")
    if link is None and hardware is not None:
        link = calc.host_link_bytes_per_s(hardware)
    pools = calc.hybrid_pools(
        Fraction(profile.kv_bytes_per_token),
        Fraction(profile.state_bytes_per_request),
        i.get("context"),
        link_bytes_per_s=link,
        replay_tokens_per_s=i.number("replay_tokens_per_s"),
        memory_bytes=i.number("memory_bytes"),
        state_share=i.number("state_share"),
    )
    out: dict[str, Value] = {
        "kv_bytes_per_token": pools.kv_bytes_per_token,
        "state_bytes_per_request": pools.state_bytes,
        "kv_bytes_per_request": pools.kv_bytes,
        "request_bytes": pools.request_bytes,
    }
    optional = {
        "swap_state_ms": pools.swap_state_ms,
        "swap_kv_ms": pools.swap_kv_ms,
        "replay_ms": pools.replay_ms,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    for pool, ceiling in pools.ceilings.items():
        out[f"max_concurrent_{pool}"] = Fraction(ceiling)
    if pools.binding_pool is not None:
        out["binding_pool"] = pools.binding_pool
    return out


HYBRID_POOLS = Calculator(
    name="hybrid-pools",
    summary="per-token K/V plus a fixed per-request state: bytes, concurrency ceilings, state"
    " swap 2V / beta_link, replay L / R",
    inputs={
        "model": _MODEL,
        "context": _req(InputType.INTEGER, "L, the request's tokens"),
        "hardware": _opt(InputType.HARDWARE, "hardware profile (its host link)"),
        "link_bytes_per_s": _opt(InputType.NUMBER, "host link, each way"),
        "replay_tokens_per_s": _opt(InputType.NUMBER, "R, the replay (prefill) rate"),
        "memory_bytes": _opt(InputType.NUMBER, "M, the memory budget of the pools"),
        "state_share": _opt(InputType.NUMBER, "the share of M given to the state pool"),
    },
    outputs={
        "kv_bytes_per_token": "B",
        "state_bytes_per_request": "B",
        "kv_bytes_per_request": "B",
        "request_bytes": "B",
        "swap_state_ms": "ms",
        "swap_kv_ms": "ms",
        "replay_ms": "ms",
        "max_concurrent_unified": "count",
        "max_concurrent_state_pool": "count",
        "max_concurrent_kv_pool": "count",
        "binding_pool": "label",
    },
    compute=_hybrid,
)


# --------------------------------------------------------------------------- static batching


def _static_batching(i: Inputs) -> dict[str, Value]:
    from cbaudit.sim import calculators as calc

    batch = i.get("batch")
    eta = calc.batch_efficiency(batch)
    out: dict[str, Value] = {"efficiency": Fraction(eta)}
    profile = i.get("model")
    if profile is not None:
        if i.get("context") is None:
            raise ValueError("the continuous batching gain needs the mean context (context)")
        out["continuous_batching_gain"] = Fraction(
            calc.continuous_batching_gain(
                calc.StepModel.of(profile), batch=batch, context=i.get("context"), efficiency=eta
            )
        )
    return out


STATIC_BATCHING = Calculator(
    name="static-batching",
    summary="eta(B) ~ 1 / (ln B + gamma); the continuous batching gain"
    " (W + eta B Lbar kv) / (eta (W + B Lbar kv))",
    inputs={
        "batch": _req(InputType.INTEGER, "B, the static batch"),
        "model": _opt(InputType.MODEL, "model profile (for the gain)"),
        "context": _opt(InputType.INTEGER, "Lbar, the mean context (for the gain)"),
    },
    outputs={"efficiency": "x", "continuous_batching_gain": "x"},
    compute=_static_batching,
)


def _table(*calculators: Calculator) -> Mapping[str, Calculator]:
    out: dict[str, Calculator] = {}
    for c in calculators:
        if c.name in out:
            raise ValueError(f"calculator {c.name!r} is registered twice")
        unknown = sorted(u for u in c.outputs.values() if u not in UNITS)
        if unknown:
            raise ValueError(f"calculator {c.name!r}: unknown units {unknown}")
        out[c.name] = c
    return MappingProxyType(out)


CALCULATORS: Mapping[str, Calculator] = _table(
    STEP_TIME, PREEMPTION_COST, GRAPH_PADDING, HYBRID_POOLS, STATIC_BATCHING
)
