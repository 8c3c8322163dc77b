"""Cost models: registry, profiles, roofline arithmetic by hand, measured-table interpolation."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cbaudit.model import EvidenceClass, InputError
from cbaudit.sim.cost_models import (
    COST_MODELS,
    CostModel,
    CostModelName,
    OptionSource,
    RooflineCostModel,
    get_cost_model,
    register_cost_model,
)
from cbaudit.sim.cost_table import TableCostModel
from cbaudit.sim.profiles import load_hardware_profile, load_model_profile, shipped_profiles
from cbaudit.sim.step import StepShape

DATA = Path(__file__).resolve().parent / "data"

# Llama-3-8B shape, by hand: per layer Q 4096*4096, K and V 2*4096*1024, O 4096*4096,
# SwiGLU 3*4096*14336, two RMSNorm vectors 2*4096; embeddings and head 2*128256*4096; final norm.
PER_LAYER = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
P = 32 * PER_LAYER + 2 * 128256 * 4096 + 4096
W = 2 * P  # fp16 weight bytes
KV = 32 * 2 * 8 * 128 * 2  # bytes per all-layer K/V row
A = 4 * 32 * 128 * 32  # attention FLOPs per query-key pair (QK^T + PV, all layers)
H100_BW, H100_PEAK = 3_350_000_000_000, 989_000_000_000_000
H200_BW = 4_800_000_000_000


def _roofline(hw: str = "nvidia-h100-sxm", **options: Any) -> RooflineCostModel:
    model = get_cost_model("roofline", {"hardware": hw, **options})
    assert isinstance(model, RooflineCostModel)
    return model


def _ms(bytes_or_flops: int, per_second: int) -> float:
    return float(Fraction(bytes_or_flops * 1000, per_second))


def _code(fn: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(InputError) as exc:
        fn(*args, **kwargs)
    return exc.value.findings[0].code


def test_registry_is_exhaustive_and_refuses_duplicates() -> None:
    """Every CostModelName is registered, nothing else is, and re-registering is refused."""
    assert set(COST_MODELS) == {n.value for n in CostModelName}
    with pytest.raises(ValueError, match="already registered"):
        register_cost_model("unit", COST_MODELS["unit"])


def test_each_model_carries_its_evidence_class() -> None:
    """unit is synthetic, roofline modeled, table measured (from its file)."""
    unit = get_cost_model("unit", {})
    assert isinstance(unit, CostModel)
    assert unit.evidence_class is EvidenceClass.SYNTHETIC
    assert _roofline().evidence_class is EvidenceClass.MODELED
    table = get_cost_model(
        "table",
        {"results": str(DATA / "step_table.json"), "axes": ["decode_rows", "history_tokens"]},
    )
    assert table.evidence_class is EvidenceClass.MEASURED_GPU


def test_shipped_profiles_derive_the_llama3_8b_numbers() -> None:
    """The 8B profile derives 8,030,261,248 parameters and 131,072 K/V bytes per row."""
    assert set(shipped_profiles()) == {
        "llama-3-8b-gqa-fp16",
        "nvidia-h100-sxm",
        "nvidia-h200-sxm",
        "lecture4-dense-70b-fp16",
        "lecture4-nominal-8b-fp16",
        "lecture4-kimi-k3-hybrid",
        "lecture4-h100-sxm",
    }
    m = load_model_profile("llama-3-8b-gqa-fp16")
    assert m.parameter_count == P == 8_030_261_248
    assert m.kv_bytes_per_token == KV == 131_072  # article 0x05 delta_KV_row
    assert m.attention_flops_per_pair == A
    h200 = load_hardware_profile("nvidia-h200-sxm")
    assert (h200.hbm_bandwidth, h200.peak_flops("bf16")) == (H200_BW, H100_PEAK)
    # BENCH.md: the H200 ridge is about 206 FLOP/byte.
    assert round(float(H100_PEAK / h200.hbm_bandwidth), 2) == 206.04


def test_pure_decode_step_is_memory_bound_with_exact_bytes() -> None:
    """32 decode rows at context 2048 on H100: bytes = W + 32*2048*KV, memory-bound."""
    model = _roofline()
    step = StepShape.of([2048] * 32)
    t = model.terms(step)
    assert t.bytes == W + 32 * 2047 * KV + 32 * KV == 24_650_457_088
    assert t.flops == 2 * P * 32 + A * 32 * 2048 == 548_296_458_240
    assert t.bound.value == "memory"
    assert model.step_time_ms(step) == _ms(24_650_457_088, H100_BW)
    assert round(model.step_time_ms(step), 4) == 7.3583


def test_single_decode_row_costs_the_weight_read() -> None:
    """One decode row at context 1 is the lecture's ~4.8 ms weight-streaming floor on H100."""
    model = _roofline()
    assert model.terms(StepShape.of([1])).flops == 2 * P + A == 16_061_046_784
    assert model.step_time_ms(StepShape.of([1])) == _ms(W + KV, H100_BW)
    assert round(model.step_time_ms(StepShape.of([1])), 2) == 4.79


def test_mixed_step_turns_compute_bound_with_exact_flops() -> None:
    """Lesson 4.2's mixed step (512-token prefill + 3 decodes) is compute-bound by hand."""
    model = _roofline()
    step = StepShape.of([52, 82, 22], [(0, 512)])
    t = model.terms(step)
    pairs = 52 + 82 + 22 + 512 * 513 // 2
    assert step.attention_pairs == pairs == 131_484
    assert t.bytes == W + (51 + 81 + 21) * KV + 515 * KV
    assert t.flops == 2 * P * 515 + A * pairs == 8_340_104_568_832
    assert t.bound.value == "compute"
    assert model.step_time_ms(step) == _ms(8_340_104_568_832, H100_PEAK)
    assert round(model.step_time_ms(step), 3) == 8.433


def test_chunk_over_history_reads_the_history_once() -> None:
    """A prefill chunk [4096, 4608) reads 4096 history rows and writes 512 (exact bytes)."""
    t = _roofline().terms(StepShape.of([], [(4096, 4608)]))
    assert t.kv_read_bytes == 4096 * KV and t.kv_write_bytes == 512 * KV
    assert t.attention_flops == A * (512 * 4096 + 512 * 513 // 2)


def test_decode_crossover_batch_matches_the_hand_formula() -> None:
    """Crossover B* = (W/bw) / ((2P + A*ctx)/pi - ctx*KV/bw); memory below, compute above."""
    model = _roofline()
    ctx = 1
    expected = Fraction(W, H100_BW) / (
        Fraction(2 * P + A * ctx, H100_PEAK) - Fraction(ctx * KV, H100_BW)
    )
    got = model.decode_crossover_batch(ctx)
    assert got == expected
    assert got is not None and math.floor(got) == 295  # ~ the ridge 989/3.35 = 295.2
    below = model.terms(StepShape.of([ctx] * math.floor(got)))
    above = model.terms(StepShape.of([ctx] * math.ceil(got)))
    assert (below.bound.value, above.bound.value) == ("memory", "compute")


def test_long_context_decode_never_turns_compute_bound() -> None:
    """Per decode row, reading ctx K/V rows outweighs its FLOPs once ctx > 420 on H100."""
    model = _roofline()
    assert model.decode_crossover_batch(420) is not None
    assert model.decode_crossover_batch(421) is None
    assert model.terms(StepShape.of([2048] * 4096)).bound.value == "memory"


def test_efficiency_and_overhead_options_scale_the_terms_exactly() -> None:
    """MBU/MFU divide the ceilings and overhead_ms adds on top, exactly."""
    model = _roofline("nvidia-h200-sxm", mbu=0.8, mfu=0.5, overhead_ms=0.25)
    step = StepShape.of([2048] * 32)
    memory = Fraction(24_650_457_088 * 1000) / (H200_BW * Fraction(4, 5))
    assert model.step_time_ms(step) == float(memory + Fraction(1, 4))
    assert model.describe()["mbu"] == 0.8 and model.describe()["efficiency_basis"] == (
        "declared in options"
    )


def test_empty_step_costs_nothing() -> None:
    """An empty step is no model call: 0 ms in roofline and table models."""
    assert _roofline().step_time_ms(StepShape.of()) == 0.0


def test_roofline_option_errors_are_located() -> None:
    """Missing hardware, unknown keys, bad MBU and missing peaks have their own codes."""
    src = OptionSource(file="w.yaml", pointer="/cost_model/options")
    with pytest.raises(InputError) as exc:
        get_cost_model("roofline", {"hardware": "nvidia-h100-sxm", "mbu": 1.5}, source=src)
    f = exc.value.findings[0]
    assert (f.code, f.location.file, f.location.pointer) == (
        "COST.BAD_OPTION",
        "w.yaml",
        "/cost_model/options/mbu",
    )
    assert _code(get_cost_model, "roofline", {}) == "COST.MISSING_OPTION"
    assert _code(get_cost_model, "roofline", {"hardware": "nvidia-h100-sxm", "x": 1}) == (
        "COST.UNKNOWN_OPTION"
    )
    assert _code(get_cost_model, "roofline", {"hardware": "nvidia-h100-sxm", "dtype": "fp32"}) == (
        "COST.ROOFLINE.NO_PEAK"
    )
    assert _code(get_cost_model, "roofline", {"hardware": "tpu-v9"}) == "PROFILE.NOT_FOUND"
    assert _code(get_cost_model, "warp-drive", {}) == "COST.UNKNOWN_MODEL"


def test_profile_files_are_schema_checked_and_counted(tmp_path: Path) -> None:
    """A custom profile with a wrong parameter_count, or no efficiency, is refused."""
    import yaml

    from cbaudit.sim.profiles import DATA_DIR

    model = yaml.safe_load((DATA_DIR / "model-llama3-8b-gqa-fp16.yaml").read_text())
    model["parameter_count"] = 8_000_000_000
    bad = tmp_path / "m.yaml"
    bad.write_text(yaml.safe_dump(model))
    assert _code(load_model_profile, bad) == "PROFILE.PARAMETER_COUNT.MISMATCH"
    model["architecture"]["n_layers"] = "32"
    bad.write_text(yaml.safe_dump(model))
    assert _code(load_model_profile, bad) == "SCHEMA.TYPE"
    hw = yaml.safe_load((DATA_DIR / "hw-nvidia-h100-sxm.yaml").read_text())
    del hw["efficiency"]
    hw_path = tmp_path / "hw.yaml"
    hw_path.write_text(yaml.safe_dump(hw))
    assert (
        _code(
            get_cost_model,
            "roofline",
            {"hardware": "hw.yaml"},
            source=OptionSource(base_dir=tmp_path),
        )
        == "COST.ROOFLINE.NO_EFFICIENCY"
    )
    with_opts = get_cost_model("roofline", {"hardware": str(hw_path), "mbu": 0.9, "mfu": 0.7})
    assert with_opts.evidence_class is EvidenceClass.MODELED


# --------------------------------------------------------------------------- table


def _table(**options: Any) -> TableCostModel:
    opts = {"results": str(DATA / "step_table.json"), "axes": ["decode_rows", "history_tokens"]}
    model = get_cost_model("table", {**opts, **options})
    assert isinstance(model, TableCostModel)
    return model


def test_table_returns_measured_points_exactly() -> None:
    """At a measured grid point the table returns that point's median."""
    model = _table()
    assert model.step_time_ms(StepShape.of([512])) == 5.0  # 1 row, history 511
    assert model.step_time_ms(StepShape.of([2048] * 64)) == 9.5  # 64 rows, history 131,008


def test_table_interpolates_bilinearly() -> None:
    """Between grid points the value is the exact bilinear blend of the four corners."""
    model = _table()
    # 32 rows each with 16 history rows: decode_rows=32, history_tokens=512 (between 511, 2047).
    step = StepShape.of([17] * 32)
    t_rows = Fraction(32 - 1, 63)
    t_hist = Fraction(512 - 511, 2047 - 511)
    lo = Fraction(5) * (1 - t_hist) + Fraction(11, 2) * t_hist  # decode_rows = 1
    hi = Fraction(6) * (1 - t_hist) + Fraction(31, 5) * t_hist  # decode_rows = 64
    assert model.step_time_ms(step) == float(lo * (1 - t_rows) + hi * t_rows)
    assert model.estimate(step).evidence_class is EvidenceClass.MEASURED_GPU


def test_table_refuses_to_extrapolate_unless_declared() -> None:
    """Outside the grid: COST.TABLE.OUT_OF_RANGE, or a linear figure labelled modeled."""
    step = StepShape.of([512] * 128)  # 128 decode rows > 64 measured
    with pytest.raises(InputError) as exc:
        _table().step_time_ms(step)
    f = exc.value.findings[0]
    assert f.code == "COST.TABLE.OUT_OF_RANGE"
    assert f.location.file == str(DATA / "step_table.json")
    model = _table(extrapolate="linear")
    est = model.estimate(step)
    assert est.evidence_class is EvidenceClass.MODELED and est.extrapolated == ("decode_rows",)
    assert model.evidence_class is EvidenceClass.MODELED
    # 128 rows, history 128*511 = 65408: extend both axes' edge cells linearly.
    t_rows = Fraction(128 - 1, 63)
    t_hist = Fraction(65408 - 32704, 131008 - 32704)
    lo = Fraction("6.1") * (1 - t_hist) + Fraction(8) * t_hist
    hi = Fraction("6.5") * (1 - t_hist) + Fraction("9.5") * t_hist
    assert est.ms == float(lo * (1 - t_rows) + hi * t_rows)


def test_table_shape_errors_have_their_codes(tmp_path: Path) -> None:
    """Duplicates on the chosen axes, holes in the grid and one-value axes are refused."""
    assert _code(_table, axes=["tokens"]) == "COST.TABLE.DUPLICATE_POINT"
    data = json.loads((DATA / "step_table.json").read_text())
    data["points"] = data["points"][:-1]
    holed = tmp_path / "holed.json"
    holed.write_text(json.dumps(data))
    assert _code(_table, results=str(holed)) == "COST.TABLE.NOT_A_GRID"
    assert _code(_table, where={"decode_rows": 1}) == "COST.TABLE.TOO_FEW_POINTS"
    assert _code(_table, axes=["seconds"]) == "COST.TABLE.UNKNOWN_AXIS"
    assert _code(_table, extrapolate="cubic") == "COST.BAD_OPTION"
    del data["evidence_class"]
    unlabelled = tmp_path / "unlabelled.json"
    unlabelled.write_text(json.dumps(data))
    assert _code(_table, results=str(unlabelled)) == "COST.TABLE.NO_EVIDENCE_CLASS"
    assert _code(_table, results=str(tmp_path / "nope.json")) == "COST.TABLE.NOT_FOUND"


def test_bench_results_files_go_through_the_bench_loader(tmp_path: Path) -> None:
    """A file in the bench format is validated by the bench loader (its codes, exit 2)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": "cbaudit-bench-results", "format_version": 99}))
    assert _code(_table, results=str(path)) == "BENCH.RESULTS.VERSION"


def test_describe_is_json_ready_and_deterministic() -> None:
    """describe() of every model is JSON-serialisable and stable across calls."""
    for model in (get_cost_model("unit", {}), _roofline(), _table()):
        a = json.dumps(model.describe(), sort_keys=True)
        assert a == json.dumps(model.describe(), sort_keys=True)
        assert json.loads(a)["evidence_class"] == model.evidence_class.value


_STEPS = st.builds(
    lambda dec, chunks: StepShape.of(dec, [(s, s + w) for s, w in chunks]),
    st.lists(st.integers(1, 200_000), max_size=40),
    st.lists(st.tuples(st.integers(0, 100_000), st.integers(1, 8192)), max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(
    step=_STEPS,
    hw=st.sampled_from(["nvidia-h100-sxm", "nvidia-h200-sxm"]),
    mbu=st.one_of(st.none(), st.floats(0.01, 1.0)),
    mfu=st.one_of(st.none(), st.floats(0.01, 1.0)),
    overhead=st.one_of(st.none(), st.floats(0.0, 5.0)),
)
def test_integer_hot_path_equals_the_exact_terms(
    step: StepShape, hw: str, mbu: float | None, mfu: float | None, overhead: float | None
) -> None:
    """step_time_ms (integer arithmetic) is float(terms(step).step_ms) bit for bit."""
    opts: dict[str, Any] = {}
    if mbu is not None and mfu is not None:
        opts.update(mbu=mbu, mfu=mfu)
    if overhead is not None:
        opts["overhead_ms"] = overhead
    model = _roofline(hw, **opts)
    assert model.step_time_ms(step) == float(model.terms(step).step_ms)


@pytest.mark.parametrize(
    ("options", "code"),
    [({}, None), ({"tick_ms": 2.5}, None), ({"tick": 1}, "COST.UNKNOWN_OPTION"),
     ({"tick_ms": 0}, "COST.BAD_OPTION")],
)  # fmt: skip
def test_the_replays_unit_model_is_the_registered_one(
    options: dict[str, Any], code: str | None
) -> None:
    """`replay` builds `unit` without loading the registry's module; what it builds, and what it
    refuses (code and location), is what the registry's factory gives."""
    from cbaudit.sim.cost_models import OptionSource, get_cost_model
    from cbaudit.sim.replay import make_cost_model

    def build(via_registry: bool) -> Any:
        try:
            if via_registry:
                src = OptionSource(file="w.yaml", pointer="/cost_model")
                return get_cost_model("unit", options, source=src).describe()
            return make_cost_model("unit", options, file="w.yaml", pointer="/cost_model").describe()
        except InputError as err:
            return [(f.code, f.message, f.location) for f in err.findings]

    assert build(False) == build(True)
    if code is not None:
        assert build(False)[0][0] == code
