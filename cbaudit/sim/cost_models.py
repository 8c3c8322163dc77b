"""Cost models: how long one simulated step takes, and what that figure is worth.

Three models live in one explicit registry (`COST_MODELS`, refusing duplicates):

* `unit`: one tick per iteration (synthetic), defined by the replay engine in
  `cbaudit.sim.cost_unit` and only registered here;
* `roofline`: the lecture's step-time model (modeled)
  `T = max(bytes / (beta * MBU), FLOPs / (pi * MFU)) + overhead` from a model profile and a
  hardware profile;
* `table`: step times measured by the benchmark runner, interpolated over the step's totals
  (measured_gpu or measured_cpu from the results file; `modeled` once extrapolation is allowed),
  defined in `cbaudit.sim.cost_table` and imported when a table model is built.

`get_cost_model(name, options)` builds one; each has `step_time_ms(step)`, `evidence_class` and
`describe()`. Options come from a workload or a check spec; errors in them are `InputError`s
located at the options' file and JSON pointer.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

from cbaudit.model import EvidenceClass, InputError
from cbaudit.model.findings import pointer_join
from cbaudit.sim.cost_unit import from_options as unit_from_options
from cbaudit.sim.profiles import (
    HardwareProfile,
    ModelProfile,
    exact,
    load_hardware_profile,
    load_model_profile,
)
from cbaudit.sim.step import StepShape

DEFAULT_MODEL_PROFILE = "llama-3-8b-gqa-fp16"


@runtime_checkable
class CostModel(Protocol):
    """What the replay engine asks of a cost model."""

    @property
    def evidence_class(self) -> EvidenceClass: ...

    def step_time_ms(self, step: StepShape) -> float: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OptionSource:
    """Where a cost model's options were declared: for relative paths and located errors."""

    file: str | None = None
    pointer: str = ""
    base_dir: Path | None = None

    def error(self, code: str, message: str, *keys: str | int) -> InputError:
        return InputError.at(code, message, self.file, pointer=pointer_join(self.pointer, *keys))


class CostModelName(StrEnum):
    """Names of the registered cost models."""

    UNIT = "unit"
    ROOFLINE = "roofline"
    TABLE = "table"


CostModelFactory = Callable[[Mapping[str, Any], OptionSource], CostModel]


# --------------------------------------------------------------------------- option helpers


def _check_keys(options: Mapping[str, Any], allowed: Sequence[str], src: OptionSource) -> None:
    if not isinstance(options, Mapping):
        raise src.error("COST.BAD_OPTION", "cost model options must be a mapping")
    for key in options:
        if key not in allowed:
            raise src.error(
                "COST.UNKNOWN_OPTION",
                f"unknown option {key!r} (allowed: {', '.join(allowed)})",
                str(key),
            )


def _fraction_option(
    options: Mapping[str, Any],
    key: str,
    src: OptionSource,
    *,
    low: Fraction,
    high: Fraction | None = None,
    low_inclusive: bool = False,
) -> Fraction | None:
    if key not in options or options[key] is None:
        return None
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise src.error("COST.BAD_OPTION", f"{key} must be a finite number, got {value!r}", key)
    frac = exact(value)
    too_low = frac < low if low_inclusive else frac <= low
    if too_low or (high is not None and frac > high):
        bounds = f"{'[' if low_inclusive else '('}{low}, {'inf)' if high is None else f'{high}]'}"
        raise src.error("COST.BAD_OPTION", f"{key}={value} is outside {bounds}", key)
    return frac


def _str_option(options: Mapping[str, Any], key: str, src: OptionSource) -> str | None:
    if key not in options or options[key] is None:
        return None
    value = options[key]
    if not isinstance(value, str) or not value:
        raise src.error("COST.BAD_OPTION", f"{key} must be a non-empty string", key)
    return value


# --------------------------------------------------------------------------- roofline


class Bound(StrEnum):
    """Which roofline term sets the step time."""

    MEMORY = "memory"
    COMPUTE = "compute"


class StepSeries(NamedTuple):
    """Step j of a run costs `(n0 + j * n1) / den` ms for j < `switch` (None: every j), and
    `(then_n0 + j * then_n1) / then_den` from `switch` on (`RooflineCostModel.step_series`)."""

    n0: int
    n1: int
    den: int
    switch: int | None
    then_n0: int
    then_n1: int
    then_den: int


# a NamedTuple's own constructor: its fields as one tuple, no Python `__new__` frame
_new_series = tuple.__new__


@dataclass(frozen=True, slots=True)
class RooflineTerms:
    """The exact pieces of one roofline estimate (times in milliseconds, as fractions)."""

    weight_bytes: Fraction
    kv_read_bytes: Fraction
    kv_write_bytes: Fraction
    linear_flops: int
    attention_flops: int
    memory_ms: Fraction
    compute_ms: Fraction
    overhead_ms: Fraction

    @property
    def bytes(self) -> Fraction:
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def flops(self) -> int:
        return self.linear_flops + self.attention_flops

    @property
    def bound(self) -> Bound:
        return Bound.COMPUTE if self.compute_ms > self.memory_ms else Bound.MEMORY

    @property
    def step_ms(self) -> Fraction:
        return max(self.memory_ms, self.compute_ms) + self.overhead_ms


@dataclass(frozen=True)
class RooflineCostModel:
    """The lecture's step-time model over a model profile and a hardware profile.

    Per step (nothing runs for an empty step, which costs 0):

    * bytes = every weight once + K/V history rows read + K/V rows written (one per query row);
    * FLOPs = 2 * parameters * query rows + attention FLOPs of the causal query-key pairs
      (`4 * q_heads * head_dim * layers` per pair: QK^T and PV);
    * T = max(bytes / (bandwidth * MBU), FLOPs / (peak * MFU)) + overhead.

    Activations, norms' traffic, launch gaps and kernel efficiency beyond MBU/MFU are not in
    the model; the figure is `modeled`, never measured.
    """

    model: ModelProfile
    hardware: HardwareProfile
    mbu: Fraction
    mfu: Fraction
    peak_flops: Fraction
    overhead_ms: Fraction = Fraction(0)
    dtype: str = "fp16"
    efficiency_basis: str = "declared in options"

    name = CostModelName.ROOFLINE.value

    @property
    def evidence_class(self) -> EvidenceClass:
        return EvidenceClass.MODELED

    @property
    def bytes_per_ms(self) -> Fraction:
        """Effective bytes moved per millisecond: bandwidth * MBU / 1000."""
        return self.hardware.hbm_bandwidth * self.mbu / 1000

    @property
    def flops_per_ms(self) -> Fraction:
        """Effective FLOPs per millisecond: peak * MFU / 1000."""
        return self.peak_flops * self.mfu / 1000

    def terms(self, step: StepShape) -> RooflineTerms:
        """Exact bytes, FLOPs and both time terms of `step`."""
        m = self.model
        kv = m.kv_bytes_per_token
        if step.is_empty:
            zero = Fraction(0)
            return RooflineTerms(zero, zero, zero, 0, 0, zero, zero, zero)
        weight = m.weight_bytes_total
        read = step.history_rows * kv
        write = step.tokens * kv
        linear = m.linear_flops_per_token * step.tokens
        attention = m.attention_flops_per_pair * step.attention_pairs
        return RooflineTerms(
            weight_bytes=weight,
            kv_read_bytes=read,
            kv_write_bytes=write,
            linear_flops=linear,
            attention_flops=attention,
            memory_ms=(weight + read + write) / self.bytes_per_ms,
            compute_ms=(linear + attention) / self.flops_per_ms,
            overhead_ms=self.overhead_ms,
        )

    @functools.cached_property
    def _exact_ints(self) -> tuple[int, int, int, int, int, int, int, int, int, int]:
        """The model's constants as integers, for `step_time_ms` (computed once).

        memory_ms = (W + (h + t) * kv) / bytes_per_ms = (w + (h + t) * k) * bd / (D * bn) and
        compute_ms = (2 P t + a pairs) * fd / fn, with W = w / D, kv = k / D over a common
        denominator D, bytes_per_ms = bn / bd and flops_per_ms = fn / fd.
        """
        m = self.model
        weight, kv = Fraction(m.weight_bytes_total), Fraction(m.kv_bytes_per_token)
        den = math.lcm(weight.denominator, kv.denominator)
        w = weight.numerator * (den // weight.denominator)
        k = kv.numerator * (den // kv.denominator)
        bpm, fpm = Fraction(self.bytes_per_ms), Fraction(self.flops_per_ms)
        over = Fraction(self.overhead_ms)
        return (
            w,
            k,
            bpm.denominator,
            den * bpm.numerator,
            m.linear_flops_per_token,
            m.attention_flops_per_pair,
            fpm.denominator,
            fpm.numerator,
            over.numerator,
            over.denominator,
        )

    def step_time_ms(self, step: StepShape) -> float:
        """`float(terms(step).step_ms)`, computed in integers (the replay's hot path).

        Both time terms are exact rationals n / d; the larger is chosen by cross-multiplying,
        the overhead added over a common denominator, and one correctly rounded integer
        division gives the same float as the Fraction path, bit for bit.
        """
        if step.is_empty:
            return 0.0
        return self.totals_step_ms(step.tokens, step.history_rows, step.attention_pairs)

    def totals_step_ms(self, tokens: int, history_rows: int, attention_pairs: int) -> float:
        """`step_time_ms` of a non-empty step from the three totals through which its shape
        enters the model (the replay's full iterations compute them without the shape)."""
        w, k, bd, mem_den, two_p, a, fd, fn, on, od = self._exact_ints
        mem_num = (w + (history_rows + tokens) * k) * bd
        comp_num = (two_p * tokens + a * attention_pairs) * fd
        if comp_num * mem_den > mem_num * fn:
            num, den = comp_num, fn
        else:
            num, den = mem_num, mem_den
        if on:
            return (num * od + on * den) / (den * od)
        return num / den

    def step_series(
        self, tokens: int, rows_moved: int, pairs: int, d_rows_moved: int, d_pairs: int
    ) -> StepSeries:
        """`step_time_ms` of a run of steps, as integer coefficients (the replay's stretches).

        Step j of the run has `tokens` query rows, `rows_moved + j * d_rows_moved` K/V rows
        moved (history rows read + rows written) and `pairs + j * d_pairs` attention pairs:
        the shape's only inputs to the model. Both time numerators are then linear in j, so
        step j's time is `(n0 + j * n1) / den` with the (n0, n1, den) of the larger term, and
        the larger term changes at most once, at j = `switch`: the same integers, and so the
        same correctly rounded division, as `step_time_ms` of step j's shape, bit for bit."""
        if tokens == 0:
            return StepSeries(0, 0, 1, None, 0, 0, 1)
        w, k, bd, mem_den, two_p, a, fd, fn, on, od = self._exact_ints
        m0, m1 = (w + rows_moved * k) * bd, d_rows_moved * k * bd
        c0, c1 = (two_p * tokens + a * pairs) * fd, a * d_pairs * fd
        # compute-bound at step j iff (c0 + j c1) * mem_den > (m0 + j m1) * fn, i.e. g0 + j g1 > 0
        g0, g1 = c0 * mem_den - m0 * fn, c1 * mem_den - m1 * fn
        switch: int | None = None
        if g0 > 0 and g1 < 0:
            switch = -(-g0 // -g1)  # the first j with g0 + j g1 <= 0
        elif g0 <= 0 and g1 > 0:
            switch = -g0 // g1 + 1  # the first j with g0 + j g1 > 0
        if on:  # the overhead over each term's common denominator
            m0, m1, mem_den = m0 * od + on * mem_den, m1 * od, mem_den * od
            c0, c1, fn = c0 * od + on * fn, c1 * od, fn * od
        # `StepSeries(...)` without its `__new__` frame (once per stretch; the same tuple)
        if g0 > 0:
            return _new_series(StepSeries, (c0, c1, fn, switch, m0, m1, mem_den))
        return _new_series(StepSeries, (m0, m1, mem_den, switch, c0, c1, fn))

    def decode_crossover_batch(self, context_len: int) -> Fraction | None:
        """Decode rows B at which a pure decode step (each row attending to `context_len`
        keys) turns compute-bound; None when compute never catches up at that context.

        Solves W / bw + B * (h + 1) * kv / bw = B * (2P + a * ctx) / pi, with h = ctx - 1
        history rows read and one row written per decode row, a = attention FLOPs per pair.
        """
        m = self.model
        kv = m.kv_bytes_per_token
        per_row_compute = (
            m.linear_flops_per_token + m.attention_flops_per_pair * context_len
        ) / self.flops_per_ms
        per_row_memory = context_len * kv / self.bytes_per_ms
        gain = per_row_compute - per_row_memory
        if gain <= 0:
            return None
        return (m.weight_bytes_total / self.bytes_per_ms) / gain

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "evidence_class": self.evidence_class.value,
            "formula": "max(bytes / (bandwidth * MBU), FLOPs / (peak * MFU)) + overhead_ms",
            "model": self.model.to_json(),
            "hardware": self.hardware.to_json(),
            "dtype": self.dtype,
            "peak_flops": float(self.peak_flops),
            "mbu": float(self.mbu),
            "mfu": float(self.mfu),
            "efficiency_basis": self.efficiency_basis,
            "overhead_ms": float(self.overhead_ms),
        }

    @classmethod
    def from_options(cls, options: Mapping[str, Any], src: OptionSource) -> RooflineCostModel:
        allowed = ("model", "hardware", "mbu", "mfu", "overhead_ms", "dtype")
        _check_keys(options, allowed, src)
        hw_ref = _str_option(options, "hardware", src)
        if hw_ref is None:
            raise src.error(
                "COST.MISSING_OPTION", "roofline needs `hardware` (a profile id or path)"
            )
        model_ref = _str_option(options, "model", src) or DEFAULT_MODEL_PROFILE
        model = load_model_profile(model_ref, base_dir=src.base_dir)
        model.require_step_totals()
        hardware = load_hardware_profile(hw_ref, base_dir=src.base_dir)
        one = Fraction(1)
        mbu = _fraction_option(options, "mbu", src, low=Fraction(0), high=one)
        mfu = _fraction_option(options, "mfu", src, low=Fraction(0), high=one)
        basis = "declared in options"
        if mbu is None or mfu is None:
            if hardware.mbu is None or hardware.mfu is None:
                raise src.error(
                    "COST.ROOFLINE.NO_EFFICIENCY",
                    f"declare mbu and mfu in options: hardware profile {hardware.profile_id}"
                    " declares none",
                )
            basis = f"hardware profile: {hardware.efficiency_basis}"
            if mbu is not None or mfu is not None:
                basis = "options and " + basis
            mbu = hardware.mbu if mbu is None else mbu
            mfu = hardware.mfu if mfu is None else mfu
        overhead = _fraction_option(
            options, "overhead_ms", src, low=Fraction(0), low_inclusive=True
        )
        dtype = _str_option(options, "dtype", src) or model.dtype
        peak = hardware.peak_flops(dtype)
        if peak is None:
            raise src.error(
                "COST.ROOFLINE.NO_PEAK",
                f"hardware profile {hardware.profile_id} declares no dense {dtype} peak"
                f" (has: {', '.join(sorted(hardware.peak_dense_flops))})",
                "dtype" if "dtype" in options else "hardware",
            )
        return cls(
            model=model,
            hardware=hardware,
            mbu=mbu,
            mfu=mfu,
            peak_flops=peak,
            overhead_ms=overhead or Fraction(0),
            dtype=dtype,
            efficiency_basis=basis,
        )


# --------------------------------------------------------------------------- registry


COST_MODELS: dict[str, CostModelFactory] = {}


def _table_from_options(options: Mapping[str, Any], src: OptionSource) -> CostModel:
    """`TableCostModel.from_options`, its module imported on first use (`cost_table`)."""
    from cbaudit.sim.cost_table import TableCostModel

    return TableCostModel.from_options(options, src)


def register_cost_model(name: str, factory: CostModelFactory) -> None:
    """Add a cost model; refuses a name already registered."""
    if name in COST_MODELS:
        raise ValueError(f"cost model {name!r} is already registered")
    COST_MODELS[name] = factory


register_cost_model(CostModelName.UNIT.value, unit_from_options)
register_cost_model(CostModelName.ROOFLINE.value, RooflineCostModel.from_options)
register_cost_model(CostModelName.TABLE.value, _table_from_options)


def get_cost_model(
    name: str,
    options: Mapping[str, Any] | None = None,
    *,
    source: OptionSource | None = None,
) -> CostModel:
    """Build the cost model `name` from its `options` (declared at `source`)."""
    src = source or OptionSource()
    factory = COST_MODELS.get(name)
    if factory is None:
        raise InputError.at(
            "COST.UNKNOWN_MODEL",
            f"unknown cost model {name!r} (known: {', '.join(sorted(COST_MODELS))})",
            src.file,
            pointer=src.pointer or None,
        )
    return factory(options or {}, src)
