"""Model profiles by their totals, hybrid state, host links, and the kind-mismatch error."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbaudit.io.schemas import list_schemas
from cbaudit.model import InputError
from cbaudit.sim.cost_models import RooflineCostModel, get_cost_model
from cbaudit.sim.profiles import (
    DATA_DIR,
    load_hardware_profile,
    load_model_profile,
    shipped_profile_kinds,
)
from cbaudit.sim.step import StepShape


def _error(fn: Any, *args: Any) -> InputError:
    with pytest.raises(InputError) as exc:
        fn(*args)
    return exc.value


def _write(tmp_path: Path, data: dict[str, Any], name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _totals_profile(**totals: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "kind": "model-profile",
        "profile_id": "mine",
        "totals": {"kv_bytes_per_token": 1000, **totals},
        "dtype": {"name": "fp16"},
    }


def test_lecture_70b_is_declared_by_its_totals() -> None:
    """The lecture's 70B model: 2P = 140 GFLOP and 140 GB, 320,000 K/V bytes, 4 d n per pair."""
    m = load_model_profile("lecture4-dense-70b-fp16")
    assert m.form == "totals"
    assert m.parameter_count == 70_000_000_000
    assert m.weight_bytes_total == 140_000_000_000
    assert m.linear_flops_per_token == 140_000_000_000
    assert m.kv_bytes_per_token == 320_000
    assert m.attention_flops_per_pair == 4 * 8192 * 80
    assert not m.is_hybrid


def test_nominal_8b_declares_8b_16gb_16gflop() -> None:
    """The nominal 8B model needs no artificial architecture: 8e9, 16 GB, 16 GFLOP/token."""
    m = load_model_profile("lecture4-nominal-8b-fp16")
    assert (m.parameter_count, m.weight_bytes_total, m.linear_flops_per_token) == (
        8_000_000_000,
        16_000_000_000,
        16_000_000_000,
    )


def test_hybrid_profile_derives_its_kv_and_state_from_the_layouts() -> None:
    """K3: 24 x 1,152 B = 27.0 KiB per token; 69 x 96 x 128^2 x 2 B = 217,055,232 B of state."""
    m = load_model_profile("lecture4-kimi-k3-hybrid")
    assert m.kv_bytes_per_token == 24 * 1152 == 27 * 1024
    assert m.state_bytes_per_request == 69 * 96 * 128 * 128 * 2 == 217_055_232
    assert m.is_hybrid
    assert m.to_json()["state_bytes_per_request"] == 217_055_232


def test_a_total_the_profile_lacks_is_a_located_missing_field() -> None:
    """K3 declares no weights or FLOPs: reading them is PROFILE.FIELD.MISSING at /totals."""
    m = load_model_profile("lecture4-kimi-k3-hybrid")
    for attr, field in (
        ("weight_bytes_total", "weight_bytes"),
        ("linear_flops_per_token", "flops_per_token"),
        ("parameter_count", "parameter_count"),
        ("attention_flops_per_pair", "d_model"),
    ):
        err = _error(getattr, m, attr)
        finding = err.findings[0]
        assert finding.code == "PROFILE.FIELD.MISSING"
        assert field in finding.message
        assert finding.location.pointer == "/totals"
        assert finding.location.file is not None
        assert finding.location.file.endswith("model-lecture4-kimi-k3-hybrid.yaml")


def test_the_roofline_cost_model_refuses_a_profile_that_cannot_cost_a_step() -> None:
    """Replay's roofline model fails at build time, not mid-replay, on a K3 profile."""
    err = _error(
        get_cost_model,
        "roofline",
        {"model": "lecture4-kimi-k3-hybrid", "hardware": "lecture4-h100-sxm"},
    )
    assert err.findings[0].code == "PROFILE.FIELD.MISSING"


def test_the_roofline_cost_model_reads_declared_totals() -> None:
    """With a totals profile the replay's roofline multiplies the declared FLOPs per token."""
    model = get_cost_model(
        "roofline", {"model": "lecture4-dense-70b-fp16", "hardware": "lecture4-h100-sxm"}
    )
    assert isinstance(model, RooflineCostModel)
    terms = model.terms(StepShape.of([2048] * 32))
    assert terms.linear_flops == 32 * 140_000_000_000
    assert terms.weight_bytes == 140_000_000_000
    # the integer hot path agrees with the exact terms
    assert model.step_time_ms(StepShape.of([2048] * 32)) == float(terms.step_ms)


def test_declared_flops_per_token_may_differ_from_2p(tmp_path: Path) -> None:
    """A mixture of experts: FLOPs follow the active parameters, weights all of them."""
    path = _write(
        tmp_path,
        _totals_profile(
            parameter_count=100, weight_bytes=200, flops_per_token=50, d_model=2, n_layers=1
        ),
    )
    m = load_model_profile(path)
    assert (m.parameter_count, m.weight_bytes_total, m.linear_flops_per_token) == (100, 200, 50)
    model = get_cost_model("roofline", {"model": str(path), "hardware": "nvidia-h100-sxm"})
    assert isinstance(model, RooflineCostModel)
    assert model.terms(StepShape.of([1])).linear_flops == 50


def test_architecture_profiles_are_unchanged() -> None:
    """The Llama-3-8B profile still derives its totals, and 2P FLOPs per token."""
    m = load_model_profile("llama-3-8b-gqa-fp16")
    assert m.form == "architecture"
    assert m.linear_flops_per_token == 2 * m.parameter_count == 2 * 8_030_261_248
    assert m.weight_bytes_total == 2 * 8_030_261_248
    assert m.state_bytes_per_request == 0
    assert "form" not in m.to_json()  # replay reports describe it as before


@pytest.mark.parametrize(
    ("ref", "loader", "says"),
    [
        ("nvidia-h100-sxm", load_model_profile, "is a hardware profile, not a model profile"),
        ("lecture4-h100-sxm", load_model_profile, "is a hardware profile, not a model profile"),
        ("llama-3-8b-gqa-fp16", load_hardware_profile, "is a model profile, not a hardware"),
    ],
)
def test_a_profile_of_the_other_kind_is_one_line_naming_what_it_is(
    ref: str, loader: Any, says: str
) -> None:
    """A hardware id where a model is expected (or the reverse): PROFILE.KIND.MISMATCH."""
    err = _error(loader, ref)
    assert len(err.findings) == 1
    finding = err.findings[0]
    assert finding.code == "PROFILE.KIND.MISMATCH"
    assert says in finding.message and ref in finding.message
    assert finding.location.pointer == "/kind"
    assert finding.location.line is not None
    assert "\n" not in finding.render()


def test_a_file_of_the_other_kind_is_refused_too(tmp_path: Path) -> None:
    """The same for a profile given by path."""
    hw = yaml.safe_load((DATA_DIR / "hw-nvidia-h100-sxm.yaml").read_text())
    path = _write(tmp_path, hw, "hw.yaml")
    assert _error(load_model_profile, path).findings[0].code == "PROFILE.KIND.MISMATCH"


@pytest.mark.parametrize(
    ("edit", "code", "pointer"),
    [
        (lambda d: d.pop("totals"), "PROFILE.FORM.MISSING", ""),
        (
            lambda d: d.update(architecture={"n_layers": 1}),
            "PROFILE.FORM.AMBIGUOUS",
            "",
        ),
        (lambda d: d.update(parameter_count=5), "PROFILE.FORM.AMBIGUOUS", "/parameter_count"),
        (
            lambda d: d["totals"].update(flops_per_token=1.5),
            "SCHEMA.TYPE",
            "/totals/flops_per_token",
        ),
        (
            lambda d: d["totals"].update(weight_bytes=0),
            "SCHEMA.EXCLUSIVE_MINIMUM",
            "/totals/weight_bytes",
        ),
        (lambda d: d["totals"].update(colour="red"), "SCHEMA.ADDITIONAL_PROPERTIES", "/totals"),
        (lambda d: d["totals"].pop("kv_bytes_per_token"), "SCHEMA.ANY_OF", "/totals"),
        (
            lambda d: d["totals"].update(kv_layout={"layers": 3, "bytes_per_layer": 100}),
            "PROFILE.KV_BYTES.MISMATCH",
            "/totals/kv_bytes_per_token",
        ),
        (
            lambda d: d.update(
                state={
                    "bytes_per_request": 10,
                    "layout": {"layers": 1, "heads": 1, "rows": 2, "cols": 2, "element_bytes": 2},
                }
            ),
            "PROFILE.STATE_BYTES.MISMATCH",
            "/state/bytes_per_request",
        ),
        (lambda d: d.update(state={}), "SCHEMA.ANY_OF", "/state"),
    ],
)
def test_bad_totals_profiles_are_refused_with_located_codes(
    tmp_path: Path, edit: Any, code: str, pointer: str
) -> None:
    """Each way a totals profile can be wrong has its code, at its JSON pointer and line."""
    data = _totals_profile()
    edit(data)
    err = _error(load_model_profile, _write(tmp_path, data))
    finding = err.findings[0]
    assert finding.code == code, err.findings
    assert finding.location.pointer == pointer
    assert finding.location.line is not None


def test_an_architecture_profile_still_needs_its_storage_widths(tmp_path: Path) -> None:
    """`architecture` without dtype.weight_bytes is a schema error located at /dtype."""
    data = yaml.safe_load((DATA_DIR / "model-llama3-8b-gqa-fp16.yaml").read_text())
    del data["dtype"]["weight_bytes"]
    err = _error(load_model_profile, _write(tmp_path, data))
    assert err.findings[0].code == "SCHEMA.REQUIRED"
    assert err.findings[0].location.pointer == "/dtype/weight_bytes"


def test_a_state_by_bytes_alone_is_accepted(tmp_path: Path) -> None:
    """`state: {bytes_per_request: N}` declares a hybrid without a layout."""
    data = _totals_profile()
    data["state"] = {"bytes_per_request": 4096}
    m = load_model_profile(_write(tmp_path, data))
    assert m.state_bytes_per_request == 4096 and m.state_layout is None


def test_hardware_profiles_declare_their_host_link() -> None:
    """PCIe 5.0 x16: 64 GB/s each direction on the shipped H100, H200 and lecture profiles."""
    for pid in ("nvidia-h100-sxm", "nvidia-h200-sxm", "lecture4-h100-sxm"):
        hw = load_hardware_profile(pid)
        assert hw.host_link_bandwidth == 64_000_000_000
        assert hw.to_json()["host_link_bytes_per_s"] == 64_000_000_000


def test_lecture_hardware_gives_the_lecture_rates() -> None:
    """beta * MBU = 3.35 TB/s * 0.85 and pi * MFU = 495 TFLOP/s, exactly."""
    hw = load_hardware_profile("lecture4-h100-sxm")
    assert hw.hbm_bandwidth * (hw.mbu or 0) == 2_847_500_000_000
    assert (hw.peak_flops("fp16") or 0) * (hw.mfu or 0) == 495_000_000_000_000
    assert hw.mbu == Fraction(17, 20)


def test_every_shipped_profile_loads_as_its_kind() -> None:
    """Each shipped file loads with the loader of its `kind`, and both schemas are listed."""
    for pid, kind in shipped_profile_kinds().items():
        loader = load_model_profile if kind == "model-profile" else load_hardware_profile
        assert loader(pid).profile_id == pid
    assert {"model-profile", "hardware-profile"} <= set(list_schemas())


def test_the_shipped_table_is_the_data_folder() -> None:
    """SHIPPED names every file under cbaudit/sim/data once, with the id and kind it declares."""
    from cbaudit.sim.profiles import SHIPPED

    files = sorted(p.name for p in DATA_DIR.glob("*.yaml"))
    assert sorted(name for _, name in SHIPPED.values()) == files
    for pid, (kind, name) in SHIPPED.items():
        data = yaml.safe_load((DATA_DIR / name).read_text())
        assert (data["profile_id"], data["kind"]) == (pid, kind)
