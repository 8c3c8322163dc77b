"""`cbaudit model ...`: the calculators end to end (formats, exit codes, located errors)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbaudit.sim.profiles import DATA_DIR, shipped_profiles

Cli = Callable[..., Any]

M70, HW, K3, L8 = (
    "lecture4-dense-70b-fp16",
    "lecture4-h100-sxm",
    "lecture4-kimi-k3-hybrid",
    "llama-3-8b-gqa-fp16",
)
LECTURE = ("-m", M70, "-H", HW)
EXAMPLE_4_2 = ("step-time", *LECTURE, "-B", "32", "--context", "2048", "--prefill", "8192")


def _json(cli: Cli, *args: str) -> dict[str, Any]:
    run = cli("model", *args, "-f", "json")
    assert run.code == 0, run.err
    data: dict[str, Any] = json.loads(run.out)
    return data


def _outputs(report: dict[str, Any], i: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = report["results"][i]["metrics"]["outputs"]
    return out


def test_step_time_prints_worked_example_4_2_with_its_inputs(cli: Cli) -> None:
    """Text output shows every input with its unit, the terms, and that compute binds."""
    run = cli("model", *EXAMPLE_4_2)
    assert run.code == 0, run.err
    assert "T_step = max(57.4514 ms memory, 2504.03 ms compute) = 2504.03 ms: compute binds" in (
        run.out
    )
    assert "44.2949x the decode-only step (56.5308 ms)" in run.out
    for shown in (
        "inputs.hardware.hbm_bandwidth_bytes_per_s",
        "inputs.hardware.effective_flops_per_s",
        "inputs.model.weight_bytes",
        "inputs.model.kv_bytes_per_token",
        "inputs.step.context_tokens",
        "outputs.flops.total_flops",
        "1239492728913920",
    ):
        assert shown in run.out


def test_step_time_json_is_derived_exact_and_deterministic(cli: Cli) -> None:
    """JSON carries the exact values, evidence class derived, and is byte-identical run to run."""
    first = cli("model", *EXAMPLE_4_2, "-f", "json").out
    assert first == cli("model", *EXAMPLE_4_2, "-f", "json").out
    report = json.loads(first)
    result = report["results"][0]
    assert result["evidence_class"] == "derived"
    out = result["metrics"]["outputs"]
    assert out["flops"]["total_flops"] == 1_239_492_728_913_920
    assert out["binding_term"] == "compute"
    assert out["step_ms"] == pytest.approx(2504.025714977616, rel=1e-15)
    assert out["decode_only_step_ms"] == pytest.approx(56.53082352941176, rel=1e-15)
    assert "modeled" in report["summary"]["evidence"]
    paths = [i["path"] for i in report["inputs"]]
    assert paths == [
        "cbaudit/sim/data/hw-lecture4-h100-sxm.yaml",
        "cbaudit/sim/data/model-lecture4-dense-70b-fp16.yaml",
    ]


def test_step_time_with_a_budget_and_a_prompt_gives_the_ttft(cli: Cli) -> None:
    """--budget T --prompt-len L: chunk T - B, ceil(L / (T - B)) steps, TTFT = steps x T_step."""
    report = _json(
        cli, "step-time", *LECTURE, "-B", "32", "--context", "2048", "--budget", "2048",
        "--prompt-len", "8192",
    )  # fmt: skip
    out = _outputs(report)
    assert out["ttft"]["chunk_tokens"] == 2016
    assert out["ttft"]["steps"] == 5
    assert out["ttft"]["ttft_ms"] == pytest.approx(5 * out["step_ms"], rel=1e-15)


@pytest.mark.parametrize(("budget", "printed"), [(8192, 266), (2048, 66), (512, 17)])
def test_the_labs_chunk_steps_on_llama_3_8b(cli: Cli, budget: int, printed: int) -> None:
    """prefill_linear_ms rounds to the lab's 266 / 66 / 17 ms; the floor to 4.8 ms."""
    report = _json(
        cli, "step-time", "-m", "llama-3-8b-gqa-fp16", "-H", "lecture4-h100-sxm",
        "--budget", str(budget),
    )  # fmt: skip
    out = _outputs(report)
    assert round(out["prefill_linear_ms"]) == printed
    assert round(out["weight_read_floor_ms"], 1) == 4.8


def test_preemption_cost_prints_the_lecture_table(cli: Cli) -> None:
    """One result for a, c, s and L*, then one per length with both swap columns."""
    report = _json(
        cli, "preemption-cost", *LECTURE, "--lengths", "512,4096,32768,131072",
        "--kv-bytes", "320000", "--kv-bytes", "34000",
    )  # fmt: skip
    head = _outputs(report)
    assert head["swap"]["kv_320000_bytes"]["crossover_tokens"] is None
    assert head["swap"]["kv_320000_bytes"]["s_ms_per_token"] == 0.01
    rows = report["results"][1:]
    assert [r["metrics"]["length_tokens"] for r in rows] == [512, 4096, 32768, 131072]
    assert rows[0]["metrics"]["swap"]["kv_320000_bytes"]["swap_ms"] == 5.12
    assert rows[0]["metrics"]["swap"]["kv_34000_bytes"]["swap_ms"] == 0.544
    assert rows[-1]["metrics"]["recompute_ms"] == pytest.approx(82561.774, rel=1e-7)


def test_preemption_cost_defaults_to_the_models_kv_and_the_hardware_link(cli: Cli) -> None:
    """Without --kv-bytes the model's K/V size is the one column; the link is host_link's."""
    report = _json(cli, "preemption-cost", *LECTURE, "--lengths", "512")
    head = report["results"][0]["metrics"]
    assert list(head["outputs"]["swap"]) == ["kv_320000_bytes"]
    assert head["inputs"]["hardware"]["host_link_bytes_per_s"] == 64_000_000_000


def test_graph_padding_reproduces_the_cuda_graph_table(cli: Cli) -> None:
    """Four bucket sets, the waste at Lbar = 4096 and its share of the model's 167 ms step."""
    report = _json(
        cli, "graph-padding", "--buckets", "stride:1", "--buckets", "stride:8",
        "--buckets", "stride:16", "--buckets", "pow2", "--max-batch", "256",
        *LECTURE, "--context", "4096",
    )  # fmt: skip
    head = report["results"][0]["metrics"]
    assert head["outputs"]["step_ms"] == pytest.approx(167.0, abs=0.01)
    assert head["outputs"]["padded_token_ms"] == pytest.approx(0.46, abs=0.001)
    assert head["inputs"]["context_tokens"] == 4096
    rows = [_outputs(report, i) for i in range(1, 5)]
    assert [r["graphs"] for r in rows] == [256, 32, 16, 9]
    assert [r["mean_padding_tokens"] for r in rows] == [0, 3.5, 7.5, 42.16796875]
    assert rows[3]["worst_padding_tokens"] == 127
    assert [round(r["waste_ms_per_step"], 1) for r in rows] == [0, 1.6, 3.5, 19.4]
    assert [round(r["waste_percent_of_step"], 1) for r in rows] == [0, 1.0, 2.1, 11.6]


def test_graph_padding_without_a_model_and_with_given_costs(cli: Cli) -> None:
    """No model: padding only. --token-ms and --step-ms: the waste and its share."""
    bare = _outputs(_json(cli, "graph-padding", "--buckets", "pow2", "-N", "256"))
    assert "waste_ms_per_step" not in bare and bare["graphs"] == 9
    given = _outputs(
        _json(
            cli,
            "graph-padding",
            "--buckets",
            "stride:8",
            "-N",
            "256",
            "--token-ms",
            "0.5",
            "--step-ms",
            "100",
        ),
        1,
    )
    assert given["waste_ms_per_step"] == 1.75
    assert given["waste_percent_of_step"] == 1.75


def test_hybrid_pools_reproduces_the_k3_numbers(cli: Cli) -> None:
    """27.0 KiB/token, 0.20 GiB of state, ~29 s replay at 4,550 tok/s, ~6.8 ms state swap."""
    report = _json(
        cli, "hybrid-pools", "-m", "lecture4-kimi-k3-hybrid", "-H", "lecture4-h100-sxm",
        "--context", "131072", "--replay-tokens-per-s", "4550", "--memory-bytes", "40e9",
        "--state-share", "0.25",
    )  # fmt: skip
    out = _outputs(report)
    assert out["kv_kib_per_token"] == 27
    assert out["state_bytes_per_request"] == 217_055_232
    assert round(out["state_gib_per_request"], 2) == 0.20
    assert round(out["replay_ms"] / 1000) == 29
    assert round(out["swap_state_ms"], 1) == 6.8
    assert out["max_concurrent_requests"] == {"state_pool": 46, "kv_pool": 8}
    assert out["binding_pool"] == "kv_pool"


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "markdown", "html"])
def test_every_output_format_works(cli: Cli, fmt: str, tmp_path: Path) -> None:
    """The calculators use the one result model: each reporter renders them."""
    out = tmp_path / f"report.{fmt}"
    run = cli("model", *EXAMPLE_4_2, "-f", fmt, "-o", out)
    assert run.code == 0, run.err
    assert out.read_text()


def test_model_profiles_lists_every_shipped_profile(cli: Cli) -> None:
    """`model profiles` names each shipped id with its kind; undeclared totals are null."""
    report = _json(cli, "profiles")
    by_id = {r["subject"]: r["metrics"] for r in report["results"]}
    assert set(by_id) == set(shipped_profiles())
    assert by_id["lecture4-h100-sxm"]["kind"] == "hardware-profile"
    assert by_id["lecture4-kimi-k3-hybrid"]["weight_bytes"] is None
    assert by_id["lecture4-dense-70b-fp16"]["weight_bytes"] == 140_000_000_000


def test_a_profile_file_by_path(cli: Cli, tmp_path: Path) -> None:
    """A user's totals profile works like a shipped one and is hashed into the report."""
    data = yaml.safe_load((DATA_DIR / "model-lecture4-dense-70b-fp16.yaml").read_text())
    data["profile_id"] = "mine"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    report = _json(cli, "step-time", "-m", str(path), "-H", "lecture4-h100-sxm", "-B", "1")
    assert str(path) in [i["path"] for i in report["inputs"]]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("step-time", "-m", "nvidia-h100-sxm", "-H", HW), "PROFILE.KIND.MISMATCH"),
        (("step-time", "-m", M70, "-H", L8), "PROFILE.KIND.MISMATCH"),
        (("step-time", "-m", K3, "-H", HW), "PROFILE.FIELD.MISSING"),
        (("step-time", "-m", "no-such-model", "-H", HW), "PROFILE.NOT_FOUND"),
        (("step-time", "-m", L8, "-H", "nvidia-h100-sxm", "--dtype", "fp32"), "CALC.NO_PEAK"),
        (("hybrid-pools", "-m", K3, "--context", "1", "-H", "bad.yaml"), "PROFILE.NOT_FOUND"),
    ],
)  # fmt: skip
def test_unusable_profiles_are_one_located_line_and_exit_2(
    cli: Cli, args: tuple[str, ...], code: str
) -> None:
    """Each unusable profile names its code on one line of stderr, exit 2, no traceback."""
    run = cli("model", *args)
    assert run.code == 2
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and f"error {code}:" in lines[0], run.err
    assert "Traceback" not in run.err


def test_a_bad_profile_file_is_a_located_schema_error(cli: Cli, tmp_path: Path) -> None:
    """A user's profile is validated by the model-profile schema: file, line and pointer."""
    data = yaml.safe_load((DATA_DIR / "model-lecture4-dense-70b-fp16.yaml").read_text())
    data["totals"]["flops_per_token"] = "lots"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    run = cli("model", "step-time", "-m", str(path), "-H", "lecture4-h100-sxm")
    assert run.code == 2
    assert f"{path}:" in run.err and "#/totals/flops_per_token: error SCHEMA.TYPE" in run.err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("step-time", *LECTURE, "--prefill", "8", "--budget", "64"), "not both"),
        (("step-time", *LECTURE, "--prompt-len", "8"), "needs the budget"),
        (("step-time", *LECTURE, "-B", "64", "--budget", "64"), "no room"),
        (("step-time", *LECTURE, "--mbu", "1.5"), "at most 1"),
        (("step-time", *LECTURE, "--mfu", "nan"), "finite"),
        (("preemption-cost", *LECTURE, "--lengths", "512,x"), "--lengths"),
        (("preemption-cost", *LECTURE, "--lengths", "512", "--kv-bytes", "0"), "--kv-bytes"),
        (("preemption-cost", "-m", M70, "-H", "hw.yaml", "-L", "1"), "hw.yaml"),
        (("graph-padding", "--buckets", "stride:0", "-N", "8"), "stride"),
        (("graph-padding", "--buckets", "1,2", "-N", "8"), "cannot hold"),
        (("graph-padding", "--buckets", "pow2", "-N", "8", "-m", M70), "both"),
        (("graph-padding", "--buckets", "pow2", "-N", "8", *LECTURE), "--context"),
        (("graph-padding", "--buckets", "pow2", "-N", "8", "--step-ms", "9"), "--token-ms"),
        (("hybrid-pools", "-m", K3, "--context", "1", "--state-share", "0.5"), "budget"),
    ],
)  # fmt: skip
def test_unusable_invocations_exit_2_with_a_reason(
    cli: Cli, args: tuple[str, ...], says: str
) -> None:
    """Conflicting or impossible options: one line saying why, exit 2."""
    run = cli("model", *args)
    assert run.code == 2, (run.out, run.err)
    assert says in run.err
    assert "Traceback" not in run.err


def test_a_hardware_profile_without_a_host_link_needs_one_given(cli: Cli, tmp_path: Path) -> None:
    """No host_link and no --link-bytes-per-s: CALC.NO_HOST_LINK; with the option it runs."""
    data = yaml.safe_load((DATA_DIR / "hw-lecture4-h100-sxm.yaml").read_text())
    del data["host_link"]
    path = tmp_path / "hw.yaml"
    path.write_text(yaml.safe_dump(data))
    args = ("preemption-cost", "-m", "lecture4-dense-70b-fp16", "-H", str(path), "-L", "512")
    run = cli("model", *args)
    assert run.code == 2 and "CALC.NO_HOST_LINK" in run.err
    assert cli("model", *args, "--link-bytes-per-s", "64e9").code == 0


def test_model_step_time_loads_only_its_own_code() -> None:
    """Fast start (issue 13): no other command, no engine or policies, no jsonschema for valid
    shipped profiles, no pydantic, no rich for its plain table."""
    import subprocess
    import sys

    code = (
        "import sys; from cbaudit.cli.app import run;"
        f" rc = run(['model', *{list(EXAMPLE_4_2)!r}]);"
        " print(rc); print(' '.join(sorted(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    rc, modules = proc.stdout.strip().splitlines()[-2:]
    assert rc == "0", proc.stderr
    loaded = set(modules.split())
    heavy = (
        "cbaudit.gate", "cbaudit.mutate", "cbaudit.oracles", "cbaudit.policies",
        "cbaudit.sim.engine", "cbaudit.cli.cmd_replay", "cbaudit.cli.cmd_gate",
        "jsonschema", "pydantic", "rich",
    )  # fmt: skip
    assert sorted(m for m in loaded if m.startswith(heavy)) == []
    assert "cbaudit.sim.calculators" in loaded
