"""`cbaudit model ...` results: the lecture's calculators run on profiles, as a Report.

Each function takes loaded profiles and plain numbers, calls `cbaudit.sim.calculators`, and
returns one `Report` whose results carry every input with its unit (in the metric's name:
`_bytes`, `_ms`, `_flops`, `_tokens`, `_per_s`) and every output exactly (JSON numbers are
the exact values, not the lecture's roundings). The figures are `derived`: exact arithmetic
on declared profiles. As predictions of a real step they are worth no more than `modeled`,
and the report's summary says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from cbaudit.model import CheckResult, EvidenceClass, InputDigest, InputError, Report, UsageError
from cbaudit.sim import calculators as calc
from cbaudit.sim.profiles import (
    DATA_DIR,
    MODEL_SCHEMA,
    HardwareProfile,
    ModelProfile,
    exact,
    load_hardware_profile,
    load_model_profile,
    shipped_profile_kinds,
)

T = TypeVar("T")

_AS_PREDICTION = (
    "derived: exact arithmetic on the declared profiles; as a prediction of a real GPU the"
    " figures are modeled (a roofline), never measured"
)


def _num(value: Fraction | int | float) -> int | float:
    """A JSON number: an int when exact and integral, else the nearest float."""
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else float(value)
    return value


def _g(value: Fraction | int | float) -> str:
    return f"{float(value):.6g}"


def _checked(fn: Callable[[], T]) -> T:
    """Run a calculator; an argument it refuses is an unusable invocation (exit 2)."""
    try:
        return fn()
    except ValueError as err:
        raise UsageError(str(err)) from None


def _display(source: str | None) -> str | None:
    """A profile's file as reports name it: shipped ones relative to the package."""
    if source is None:
        return None
    path = Path(source)
    try:
        return f"cbaudit/sim/data/{path.resolve().relative_to(DATA_DIR)}"
    except ValueError:
        return source


def _digests(*profiles: ModelProfile | HardwareProfile | None) -> list[InputDigest]:
    out = []
    for profile in profiles:
        if profile is not None and profile.source is not None:
            out.append(InputDigest.of(Path(profile.source), _display(profile.source)))
    return out


def _build(command: str, results: Sequence[CheckResult], inputs: list[InputDigest]) -> Report:
    summary = {"calculator": command, "evidence": _AS_PREDICTION}
    return Report.build(f"model {command}", results, inputs, summary=summary)


def _result(check: str, subject: str, metrics: dict[str, Any], reason: str) -> CheckResult:
    return CheckResult(
        check=f"model.{check}",
        subject=subject,
        metrics=metrics,
        evidence_class=EvidenceClass.DERIVED,
        reason=reason,
    )


# --------------------------------------------------------------------------- inputs


def _model_inputs(profile: ModelProfile, model: calc.StepModel | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "profile_id": profile.profile_id,
        "form": profile.form,
        "file": _display(profile.source),
        "kv_bytes_per_token": _num(profile.kv_bytes_per_token),
    }
    if model is not None:
        out["weight_bytes"] = _num(model.weight_bytes)
        out["flops_per_token"] = _num(model.flops_per_token)
        out["attention_flops_per_pair"] = _num(model.attention_flops_per_pair)
    if profile.is_hybrid:
        out["state_bytes_per_request"] = _num(profile.state_bytes_per_request)
    return out


def _hardware_inputs(
    hardware: HardwareProfile, rates: calc.Rates | None, dtype: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "profile_id": hardware.profile_id,
        "file": _display(hardware.source),
    }
    if rates is not None:
        out.update(
            {
                "hbm_bandwidth_bytes_per_s": _num(rates.hbm_bytes_per_s),
                "mbu": _num(rates.mbu),
                "effective_bandwidth_bytes_per_s": _num(rates.bytes_per_s),
                "dtype": dtype,
                "peak_flops_per_s": _num(rates.peak_flops_per_s),
                "mfu": _num(rates.mfu),
                "effective_flops_per_s": _num(rates.flops_per_s),
            }
        )
    return out


def rates_for(
    model: ModelProfile,
    hardware: HardwareProfile,
    *,
    dtype: str | None,
    mbu: float | None,
    mfu: float | None,
) -> tuple[str, calc.Rates]:
    """The dtype (the model's unless given) and the rates, MBU/MFU overridden when given."""
    use = dtype or model.dtype
    rates = _checked(
        partial(
            calc.Rates.of,
            hardware,
            use,
            mbu=_given("--mbu", mbu),
            mfu=_given("--mfu", mfu),
        )
    )
    return use, rates


# --------------------------------------------------------------------------- step-time


def _step_metrics(step: calc.MixedStep) -> dict[str, Any]:
    return {
        "bytes": {
            "weights_bytes": _num(step.weight_bytes),
            "decode_kv_read_bytes": _num(step.decode_kv_bytes),
            "prefill_kv_write_bytes": _num(step.prefill_kv_bytes),
            "total_bytes": _num(step.bytes),
        },
        "flops": {
            "decode_linear_flops": _num(step.decode_linear_flops),
            "decode_attention_flops": _num(step.decode_attention_flops),
            "prefill_linear_flops": _num(step.prefill_linear_flops),
            "prefill_attention_flops": _num(step.prefill_attention_flops),
            "total_flops": _num(step.flops),
        },
        "memory_ms": _num(step.memory_ms),
        "compute_ms": _num(step.compute_ms),
        "step_ms": _num(step.step_ms),
        "binding_term": step.bound.value,
        "prefill_linear_ms": _num(step.prefill_linear_ms),
        "prefill_attention_percent_of_flops": _num(100 * step.prefill_attention_share),
    }


def step_time_report(
    model_profile: ModelProfile,
    hardware: HardwareProfile,
    *,
    dtype: str | None = None,
    mbu: float | None = None,
    mfu: float | None = None,
    decode_rows: int = 0,
    context: int = 0,
    prefill: int | None = None,
    budget: int | None = None,
    prompt_len: int | None = None,
) -> Report:
    """T_step(B, Lc) with its terms and the binding one; the decode-only step beside it (and
    the ITL spike ratio), the weight-read floor, and with a budget and a prompt the TTFT."""
    if prefill is not None and budget is not None:
        raise UsageError("give the prefill chunk (--prefill) or the budget (--budget), not both")
    if prompt_len is not None and budget is None:
        raise UsageError("a chunked prefill's TTFT (--prompt-len) needs the budget (--budget)")
    model = calc.StepModel.of(model_profile)
    use_dtype, rates = rates_for(model_profile, hardware, dtype=dtype, mbu=mbu, mfu=mfu)
    if budget is not None:
        _checked(lambda: calc.chunk_steps(1, budget, decode_rows))
        chunk = budget - decode_rows
    else:
        chunk = prefill or 0
    step = _checked(
        lambda: calc.mixed_step(
            model, rates, decode_rows=decode_rows, context=context, prefill=chunk
        )
    )
    inputs: dict[str, Any] = {
        "model": _model_inputs(model_profile, model),
        "hardware": _hardware_inputs(hardware, rates, use_dtype),
        "step": {
            "decode_rows": decode_rows,
            "context_tokens": context,
            "prefill_tokens": chunk,
            **({"budget_tokens": budget} if budget is not None else {}),
            **({"prompt_tokens": prompt_len} if prompt_len is not None else {}),
        },
    }
    outputs = _step_metrics(step)
    outputs["weight_read_floor_ms"] = _num(calc.weight_read_floor_ms(model, rates))
    if model.attention_flops_per_pair:
        outputs["attention_crossover_context_tokens"] = _num(
            calc.attention_crossover_context(model)
        )
    reason = (
        f"T_step = max({_g(step.memory_ms)} ms memory, {_g(step.compute_ms)} ms compute)"
        f" = {_g(step.step_ms)} ms: {step.bound.value} binds"
    )
    if chunk and decode_rows:
        alone = calc.mixed_step(model, rates, decode_rows=decode_rows, context=context, prefill=0)
        outputs["decode_only_step_ms"] = _num(alone.step_ms)
        outputs["itl_spike_ratio"] = _num(step.step_ms / alone.step_ms)
        reason += (
            f"; {_g(step.step_ms / alone.step_ms)}x the decode-only step ({_g(alone.step_ms)} ms)"
        )
    if prompt_len is not None and budget is not None:
        ttft = _checked(
            lambda: calc.chunked_prefill(
                model,
                rates,
                decode_rows=decode_rows,
                context=context,
                prompt_len=prompt_len,
                budget=budget,
            )
        )
        outputs["ttft"] = {
            "chunk_tokens": ttft.chunk,
            "steps": ttft.steps,
            "ttft_ms": _num(ttft.ttft_ms),
        }
        reason += f"; TTFT = {ttft.steps} steps x {_g(step.step_ms)} ms = {_g(ttft.ttft_ms)} ms"
    subject = (
        f"{model_profile.profile_id} on {hardware.profile_id}: {decode_rows} decode rows at"
        f" context {context} + a prefill chunk of {chunk} tokens"
    )
    result = _result("step-time", subject, {"inputs": inputs, "outputs": outputs}, reason)
    return _build("step-time", [result], _digests(model_profile, hardware))


# --------------------------------------------------------------------------- preemption


def preemption_report(
    model_profile: ModelProfile,
    hardware: HardwareProfile,
    *,
    lengths: Sequence[int],
    kv_bytes: Sequence[float] = (),
    link_bytes_per_s: float | None = None,
    dtype: str | None = None,
    mfu: float | None = None,
) -> Report:
    """The recompute-vs-swap table: a, c, s and L* per K/V size, then one result per length."""
    if not lengths:
        raise UsageError("give at least one length (--lengths 512,4096)")
    model = calc.StepModel.of(model_profile)
    use_dtype, rates = rates_for(model_profile, hardware, dtype=dtype, mbu=None, mfu=mfu)
    link = (
        calc.host_link_bytes_per_s(hardware)
        if link_bytes_per_s is None
        else _positive("--link-bytes-per-s", link_bytes_per_s)
    )
    sizes = [_positive("--kv-bytes", k) for k in kv_bytes] or [
        Fraction(model_profile.kv_bytes_per_token)
    ]
    recompute = calc.RecomputeCost.of(model, rates)
    swaps = [calc.SwapCost(size, link) for size in sizes]
    rows = _checked(lambda: calc.preemption_table(recompute, swaps, lengths))
    columns: dict[str, dict[str, Any]] = {}
    for swap in swaps:
        crossover = recompute.crossover(swap)
        columns[_column(swap)] = {
            "kv_bytes_per_token": _num(swap.kv_bytes_per_token),
            "s_ms_per_token": _num(swap.s_ms_per_token),
            "crossover_tokens": None if crossover is None else _num(crossover),
            "rule": (
                "swap is cheaper at every length (s <= a)"
                if crossover is None
                else f"recompute is cheaper below L* = {_g(crossover)} tokens"
            ),
        }
    hw_inputs = _hardware_inputs(hardware, rates, use_dtype)
    for key in ("hbm_bandwidth_bytes_per_s", "mbu", "effective_bandwidth_bytes_per_s"):
        hw_inputs.pop(key, None)  # recompute is FLOP-bound, swap link-bound
    hw_inputs["host_link_bytes_per_s"] = _num(link)
    head_metrics = {
        "inputs": {"model": _model_inputs(model_profile, model), "hardware": hw_inputs},
        "outputs": {
            "a_ms_per_token": _num(recompute.a_ms_per_token),
            "c_ms_per_token_squared": _num(recompute.c_ms_per_token_sq),
            "swap": columns,
        },
    }
    head_reason = "; ".join(
        f"{c['kv_bytes_per_token']} B/token: {c['rule']}" for c in columns.values()
    )
    results = [
        _result(
            "preemption-cost",
            f"{model_profile.profile_id} on {hardware.profile_id}: T_recompute = aL + cL^2,"
            " T_swap = sL",
            head_metrics,
            head_reason,
        )
    ]
    for row in rows:
        swap_text = ", ".join(
            f"swap {_g(ms)} ms at {_num(s.kv_bytes_per_token)} B/token ({cheap} cheaper)"
            for ms, s, cheap in zip(row.swap_ms, swaps, row.cheaper, strict=True)
        )
        results.append(
            _result(
                "preemption-cost",
                f"L = {row.length} tokens",
                {
                    "length_tokens": row.length,
                    "recompute_ms": _num(row.recompute_ms),
                    "swap": {
                        _column(s): {"swap_ms": _num(ms), "cheaper": cheap}
                        for ms, s, cheap in zip(row.swap_ms, swaps, row.cheaper, strict=True)
                    },
                },
                f"recompute {_g(row.recompute_ms)} ms; {swap_text}",
            )
        )
    return _build("preemption-cost", results, _digests(model_profile, hardware))


def _column(swap: calc.SwapCost) -> str:
    """The key of a swap column, by its K/V bytes per token: `kv_320000_bytes`."""
    return f"kv_{_num(swap.kv_bytes_per_token)}_bytes"


def _given(name: str, value: float | None) -> Fraction | None:
    """A number the user gave, exactly as written; not a finite number: exit 2."""
    if value is None:
        return None
    if not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value}")
    return exact(value)


def _positive(name: str, value: float) -> Fraction:
    out = _given(name, value)
    if out is None or not out > 0:
        raise UsageError(f"{name} must be > 0, got {value}")
    return out


# --------------------------------------------------------------------------- graph padding


def graph_padding_report(
    buckets: Sequence[str],
    max_batch: int,
    *,
    model_profile: ModelProfile | None = None,
    hardware: HardwareProfile | None = None,
    context: int | None = None,
    step_ms: float | None = None,
    token_ms: float | None = None,
    dtype: str | None = None,
    mbu: float | None = None,
) -> Report:
    """Padding per bucket set; with a per-token cost (a model, hardware and context, or
    `token_ms`) the waste per step, and with a step time (`step_ms`, or the model's decode
    step at the max batch) its share."""
    if not buckets:
        raise UsageError("give at least one bucket set (--buckets pow2)")
    if (model_profile is None) != (hardware is None):
        raise UsageError("the padded token's cost needs both --model and --hardware")
    if model_profile is not None and context is None:
        raise UsageError("the padded token's cost needs the mean context (--context)")
    if model_profile is not None and token_ms is not None:
        raise UsageError("give the per-token cost (--token-ms) or a model, not both")
    if step_ms is not None and model_profile is None and token_ms is None:
        raise UsageError(
            "a share of --step-ms needs the padded token's cost (--token-ms, or --model,"
            " --hardware and --context)"
        )
    specs = [_checked(partial(calc.parse_buckets, text)) for text in buckets]
    cost: dict[str, Any] = {}  # what the padded token's cost and the step time come from
    unit: Fraction | None = None
    step: Fraction | None = None
    if token_ms is not None:
        unit = _positive("--token-ms", token_ms)
        cost["token_ms"] = _num(unit)
    if model_profile is not None and hardware is not None and context is not None:
        model = calc.StepModel.of(model_profile)
        use_dtype, rates = rates_for(model_profile, hardware, dtype=dtype, mbu=mbu, mfu=None)
        unit = _checked(lambda: calc.padded_token_ms(model, rates, context))
        cost["model"] = _model_inputs(model_profile, model)
        cost["hardware"] = _hardware_inputs(hardware, rates, use_dtype)
        cost["context_tokens"] = context
        if step_ms is None:
            decode = calc.mixed_step(
                model, rates, decode_rows=max_batch, context=context, prefill=0
            )
            step = decode.step_ms
            cost["step_basis"] = (
                f"the model's decode step at B = {max_batch}, context {context}"
                f" ({decode.bound.value}-bound)"
            )
    if step_ms is not None:
        step = _positive("--step-ms", step_ms)
        cost["step_basis"] = "given (--step-ms)"
    results = []
    if unit is not None:
        head: dict[str, Any] = {"padded_token_ms": _num(unit)}
        reason = f"a padded token costs {_g(unit)} ms"
        if step is not None:
            head["step_ms"] = _num(step)
            reason += f"; the step takes {_g(step)} ms"
        results.append(
            _result(
                "graph-padding",
                "the cost of a padded token: Lbar kv / (beta MBU)"
                if model_profile is not None
                else "the cost of a padded token (given)",
                {"inputs": cost, "outputs": head},
                reason,
            )
        )
    for spec in specs:
        pad = _checked(partial(calc.graph_padding, spec, max_batch))
        outputs: dict[str, Any] = {
            "graphs": pad.graphs,
            "mean_padding_tokens": _num(pad.mean_padding),
            "worst_padding_tokens": pad.worst_padding,
            "worst_batch": pad.worst_batch,
        }
        reason = (
            f"{pad.graphs} graphs; mean padding {_g(pad.mean_padding)} tokens,"
            f" worst {pad.worst_padding} (B = {pad.worst_batch})"
        )
        if unit is not None:
            waste = calc.PaddingWaste(pad.mean_padding, unit, step)
            outputs["waste_ms_per_step"] = _num(waste.waste_ms)
            reason += f"; waste {_g(waste.waste_ms)} ms per step"
            share = waste.share_of_step
            if share is not None:
                outputs["waste_percent_of_step"] = _num(100 * share)
                reason += f" ({_g(100 * share)}% of a {_g(step or 0)} ms step)"
        results.append(
            _result(
                "graph-padding",
                f"{spec.text}, B uniform in 1..{max_batch}",
                {"inputs": {"buckets": spec.text, "max_batch": max_batch}, "outputs": outputs},
                reason,
            )
        )
    return _build("graph-padding", results, _digests(model_profile, hardware))


# --------------------------------------------------------------------------- hybrid pools


def hybrid_report(
    model_profile: ModelProfile,
    *,
    context: int,
    hardware: HardwareProfile | None = None,
    link_bytes_per_s: float | None = None,
    replay_tokens_per_s: float | None = None,
    memory_bytes: float | None = None,
    state_share: float | None = None,
) -> Report:
    """Per-request bytes of both pools, swap and replay times, and concurrency ceilings."""
    link: Fraction | None = None
    if link_bytes_per_s is not None:
        link = _positive("--link-bytes-per-s", link_bytes_per_s)
    elif hardware is not None:
        link = calc.host_link_bytes_per_s(hardware)
    pools = _checked(
        lambda: calc.hybrid_pools(
            Fraction(model_profile.kv_bytes_per_token),
            Fraction(model_profile.state_bytes_per_request),
            context,
            link_bytes_per_s=link,
            replay_tokens_per_s=_given("--replay-tokens-per-s", replay_tokens_per_s),
            memory_bytes=_given("--memory-bytes", memory_bytes),
            state_share=_given("--state-share", state_share),
        )
    )
    model_inputs = _model_inputs(model_profile, None)
    model_inputs["state_bytes_per_request"] = _num(pools.state_bytes)
    if model_profile.state_layout is not None:
        lay = model_profile.state_layout
        model_inputs["state_layout"] = (
            f"{lay.layers} layers x {lay.heads} heads x {lay.rows} x {lay.cols} x"
            f" {_num(lay.element_bytes)} B"
        )
    kv_layout = getattr(model_profile.shape, "kv_layout", None)
    if kv_layout is not None:
        model_inputs["kv_layout"] = (
            f"{kv_layout.layers} layers x {_num(kv_layout.bytes_per_layer)} B per token"
        )
    inputs: dict[str, Any] = {"model": model_inputs, "context_tokens": context}
    if hardware is not None:
        inputs["hardware"] = _hardware_inputs(hardware, None, None)
    if link is not None:
        inputs["host_link_bytes_per_s"] = _num(link)
    if pools.replay_tokens_per_s is not None:
        inputs["replay_tokens_per_s"] = _num(pools.replay_tokens_per_s)
    if pools.memory_bytes is not None:
        inputs["memory_bytes"] = _num(pools.memory_bytes)
    if pools.state_share is not None:
        inputs["state_share"] = _num(pools.state_share)
    kib, gib = Fraction(1024), Fraction(1024**3)
    outputs: dict[str, Any] = {
        "kv_bytes_per_token": _num(pools.kv_bytes_per_token),
        "kv_kib_per_token": _num(pools.kv_bytes_per_token / kib),
        "state_bytes_per_request": _num(pools.state_bytes),
        "state_gib_per_request": _num(pools.state_bytes / gib),
        "kv_bytes_per_request": _num(pools.kv_bytes),
        "request_bytes": _num(pools.request_bytes),
    }
    reason = (
        f"{_g(pools.kv_bytes_per_token / kib)} KiB/token of K/V,"
        f" {_g(pools.state_bytes / gib)} GiB of state per request"
    )
    if pools.swap_state_ms is not None and pools.swap_kv_ms is not None:
        outputs["swap_state_ms"] = _num(pools.swap_state_ms)
        outputs["swap_kv_ms"] = _num(pools.swap_kv_ms)
        reason += f"; state swap out and back {_g(pools.swap_state_ms)} ms"
    if pools.replay_ms is not None:
        outputs["replay_ms"] = _num(pools.replay_ms)
        reason += f"; replay of {context} tokens {_g(pools.replay_ms / 1000)} s"
    if pools.ceilings:
        outputs["max_concurrent_requests"] = dict(pools.ceilings)
        binding = pools.binding_pool
        if binding is not None:
            outputs["binding_pool"] = binding
        reason += "; at most " + ", ".join(f"{v} ({k})" for k, v in pools.ceilings.items())
        reason += " requests" + (f", {binding} binds" if binding else "")
    result = _result(
        "hybrid-pools",
        f"{model_profile.profile_id}: a request of {context} tokens",
        {"inputs": inputs, "outputs": outputs},
        reason,
    )
    return _build("hybrid-pools", [result], _digests(model_profile, hardware))


# --------------------------------------------------------------------------- profiles


def profiles_report() -> Report:
    """Every shipped profile: its kind, id, description and the figures the calculators read
    (`null` for a total a `totals` profile does not declare)."""
    results = []
    kinds = shipped_profile_kinds()
    for pid in sorted(kinds):
        if kinds[pid] == MODEL_SCHEMA:
            model = load_model_profile(pid)
            metrics: dict[str, Any] = {"kind": kinds[pid], **_model_inputs(model, None)}
            for key, attr in (
                ("weight_bytes", "weight_bytes_total"),
                ("flops_per_token", "linear_flops_per_token"),
                ("attention_flops_per_pair", "attention_flops_per_pair"),
            ):
                try:
                    metrics[key] = _num(getattr(model, attr))
                except InputError:  # PROFILE.FIELD.MISSING: not declared
                    metrics[key] = None
            results.append(_result("profile", pid, metrics, model.description or ""))
        else:
            hardware = load_hardware_profile(pid)
            metrics = {"kind": kinds[pid], "file": _display(hardware.source)}
            metrics.update(hardware.to_json())
            results.append(_result("profile", pid, metrics, hardware.name))
    return _build("profiles", results, [])
