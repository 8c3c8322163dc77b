"""Rate sweeps: `cbaudit replay sweep` and the goodput-capacity estimate (article 0x07, F38)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from repo_paths import EVIDENCE

from cbaudit.model import InputError
from cbaudit.sim import sweep

SPEC = EVIDENCE / "m5-2-continuous-batching" / "loop7" / "sweep.generator.yaml"


def _config(count: int = 60, **kw: Any) -> sweep.SweepConfig:
    spec = {**yaml.safe_load(SPEC.read_text()), "count": count}
    return sweep.SweepConfig(
        spec=spec, spec_file="sweep.yaml", base_dir=str(SPEC.parent), policy="least-slack", **kw
    )


def test_parse_rates() -> None:
    """A:B:N gives N evenly spaced rates; malformed grids are refused."""
    assert sweep.parse_rates("0.5:2:4") == [0.5, 1.0, 1.5, 2.0]
    assert sweep.parse_rates("3:3:1") == [3.0]
    for bad in ("1:2", "0:1:3", "2:1:3", "1:2:0", "a:b:c", "1:2:1"):
        with pytest.raises(ValueError):
            sweep.parse_rates(bad)


def test_capacity_is_the_largest_rate_meeting_the_target() -> None:
    """Attainment falls with load; the estimate is the largest rate whose mean reaches alpha."""
    out = sweep.run_sweep(_config(), [0.2, 0.6, 1.4], repeats=2, attainment=0.9)
    means = [p["attainment_mean"] for p in out["per_rate"]]
    assert means[0] >= 0.9 > means[-1]
    passing = [p["rate"] for p in out["per_rate"] if p["attainment_mean"] >= 0.9]
    assert out["goodput_capacity"]["estimate"] == max(passing)
    assert len(out["cells"]) == 6 and out["rate_unit"] == "requests/tick"
    assert [c["seed"] for c in out["cells"][:2]] == [7, 8]


def test_cells_are_pure_and_order_free() -> None:
    """A cell is a pure function: reversed order and 2 processes give the same JSON."""
    cfg = _config(count=40)

    def reversed_runner(
        c: sweep.SweepConfig, cells: Sequence[tuple[float, int]], jobs: int
    ) -> list[dict[str, Any]]:
        done = {cell: sweep.run_cell(c, *cell) for cell in reversed(cells)}
        return [done[cell] for cell in cells]

    serial = sweep.run_sweep(cfg, [0.4, 1.0], repeats=2, attainment=0.9, jobs=1)
    other = sweep.run_sweep(cfg, [0.4, 1.0], repeats=2, attainment=0.9, runner=reversed_runner)
    pool = sweep.run_sweep(cfg, [0.4, 1.0], repeats=2, attainment=0.9, jobs=2)
    text = json.dumps(serial, sort_keys=True)
    assert text == json.dumps(other, sort_keys=True) == json.dumps(pool, sort_keys=True)


def test_generator_without_a_rate_is_refused() -> None:
    """An all-at-zero generator has no rate to sweep: SWEEP.GENERATOR.NO_RATE."""
    with pytest.raises(InputError) as err:
        sweep.rate_field({"arrivals": {"process": "all_at_zero"}}, "g.yaml")
    assert err.value.findings[0].code == "SWEEP.GENERATOR.NO_RATE"


def test_cell_input_error_surfaces_located() -> None:
    """An unusable generated workload comes back from a cell and is raised as InputError."""
    cfg = _config()
    bad = sweep.SweepConfig(**{**cfg.__dict__, "spec": {**cfg.spec, "seed": None, "count": -1}})
    with pytest.raises(InputError) as err:
        sweep.run_sweep(bad, [0.5], repeats=1, attainment=0.9)
    assert err.value.findings[0].code == "SWEEP.SEED.MISSING"
    broken = sweep.SweepConfig(**{**cfg.__dict__, "spec": {**cfg.spec, "count": -1}})
    with pytest.raises(InputError) as err:
        sweep.run_sweep(broken, [0.5], repeats=1, attainment=0.9)
    assert err.value.findings[0].code.startswith("SCHEMA.")


def test_sweep_cli(cli: Any, tmp_path: Path) -> None:
    """`replay sweep` reports the capacity; `replay WORKLOAD` still runs the plain replay."""
    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump({**yaml.safe_load(SPEC.read_text()), "count": 40}))
    r = cli(
        "replay", "sweep", spec, "--policy", "bounded-admission", "--policy-option",
        "live_cap=4", "--rates", "0.2:1.0:3", "--repeats", "2", "--attainment", "0.9",
        "--jobs", "1", "-f", "json",
    )  # fmt: skip
    assert r.code == 0, r.err
    result = json.loads(r.out)["results"][0]
    assert result["check"] == "replay-sweep"
    assert result["metrics"]["goodput_capacity"]["estimate"] in (0.2, 0.6, 1.0, None)
    assert result["charts"][0]["type"] == "lines"
    plain = cli("replay", EVIDENCE / "m5-2-continuous-batching/loop7/burst.workload.yaml",
                "--policy", "least-slack", "-q")  # fmt: skip
    assert plain.code == 0, plain.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--rates", "1:2"), "A:B:N"),
        (("--rates", "0.2:1:2", "--attainment", "1.5"), "--attainment"),
        (("--rates", "0.2:1:2", "--goodput", "ttft"), "KEY:MS"),
    ],
)
def test_sweep_cli_refuses_bad_options(cli: Any, args: tuple[str, ...], message: str) -> None:
    """Malformed sweep options are exit 2 with the reason."""
    r = cli("replay", "sweep", SPEC, "--policy", "least-slack", *args)
    assert r.code == 2 and message in r.err


def test_sweep_cli_refuses_a_manifest(cli: Any) -> None:
    """A plain manifest is not a generator: exit 2, one located SWEEP.GENERATOR.KIND line."""
    burst = EVIDENCE / "m5-2-continuous-batching/loop7/burst.workload.yaml"
    r = cli("replay", "sweep", burst, "--policy", "least-slack", "--rates", "1:2:2")
    assert r.code == 2
    (line,) = r.err.splitlines()
    assert "error SWEEP.GENERATOR.KIND: a sweep needs a generator spec" in line


def test_sweep_says_when_the_policys_stretch_declaration_is_not_believed(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `replay` does: with vllm-v1's builder rebound in the process, the sweep's replays run
    every iteration in full, and stderr says why once (docs/replay.md, "Whose promise is
    believed"); with nothing rebound, no note."""
    from cbaudit.policies.base import PlanBuilder

    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump({**yaml.safe_load(SPEC.read_text()), "count": 20}))
    args = ("replay", "sweep", spec, "--policy", "vllm-v1", "--rates", "0.5:1.0:2",
            "--jobs", "1", "-q", "-f", "json")  # fmt: skip
    clean = cli(*args)
    assert clean.code == 0 and "note:" not in clean.err, clean.err
    real = PlanBuilder.take_block

    def take_block(plan: PlanBuilder) -> bool:
        return real(plan)

    monkeypatch.setattr(PlanBuilder, "take_block", take_block)
    noted = cli(*args)
    assert noted.code == 0, noted.err
    assert noted.err.count("cbaudit: note: every iteration ran through the policy") == 1
    assert "PlanBuilder.take_block is rebound to a function defined in" in noted.err
    assert json.loads(noted.out) == json.loads(clean.out)  # the same report either way
