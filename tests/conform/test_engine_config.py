"""`--engine-config`: a vLLM engine's arguments by vLLM's names, mapped and strictly read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cbaudit.model import InputError
from cbaudit.sim.engine_config import engine_config_from_data, load_engine_config
from tests.sim.helpers import manifest

BASE = {"block_size": 16, "num_gpu_blocks": 30, "max_num_batched_tokens": 64, "max_num_seqs": 4}


def _code(data: Any) -> str:
    with pytest.raises(InputError) as err:
        engine_config_from_data(data, "cfg.yaml")
    return err.value.findings[0].code


def test_mapping_takes_vllm_defaults_and_keeps_one_null_block() -> None:
    """num_gpu_blocks - 1 blocks are usable; the other arguments take SchedulerConfig's defaults."""
    cfg = engine_config_from_data(BASE)
    assert cfg.budgets() == {
        "token_budget": 64,
        "sequence_budget": 4,
        "kv_block_size": 16,
        "kv_total_blocks": 29,
        "long_prefill_token_threshold": 0,
    }
    assert cfg.policy_options() == {"scheduling": "fcfs", "full_sequence_must_fit": True}
    assert engine_config_from_data({**BASE, "null_block": False}).usable_blocks == 30


def test_max_num_scheduled_tokens_is_the_budget_and_cli_spellings_work() -> None:
    """max_num_scheduled_tokens wins over max_num_batched_tokens; dashes and the CLI alias map."""
    cfg = engine_config_from_data(
        {
            "block-size": 16,
            "num-gpu-blocks-override": 30,
            "max-num-batched-tokens": 64,
            "max-num-seqs": 4,
            "max-num-scheduled-tokens": 40,
            "policy": "priority",
            "scheduler-reserve-full-isl": False,
            "max-model-len": 512,
            "long-prefill-token-threshold": 32,
        }
    )
    assert cfg.token_budget == 40 and cfg.budgets()["long_prefill_token_threshold"] == 32
    assert cfg.policy_options() == {
        "scheduling": "priority",
        "full_sequence_must_fit": False,
        "max_model_len": 512,
    }


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"model": "opt-125m"}, "ENGINE_CONFIG.KEY.UNKNOWN"),
        ({"max_num_partial_prefills": 2}, "ENGINE_CONFIG.UNSUPPORTED"),
        ({"enable_prefix_caching": True}, "ENGINE_CONFIG.UNSUPPORTED"),
        ({"async_scheduling": True}, "ENGINE_CONFIG.UNSUPPORTED"),
        ({"enable_chunked_prefill": False}, "ENGINE_CONFIG.UNSUPPORTED"),
        ({"max_num_seqs": "4"}, "ENGINE_CONFIG.VALUE.TYPE"),
        ({"scheduler_reserve_full_isl": 1}, "ENGINE_CONFIG.VALUE.TYPE"),
        ({"max_num_seqs": 128}, "ENGINE_CONFIG.VALUE.RANGE"),
        ({"num_gpu_blocks": 1}, "ENGINE_CONFIG.VALUE.RANGE"),
        ({"policy": "lifo"}, "ENGINE_CONFIG.VALUE.RANGE"),
        ({"num_gpu_blocks_override": 30}, "ENGINE_CONFIG.KEY.DUPLICATE"),
    ],
)
def test_what_cbaudit_does_not_model_is_refused(change: dict[str, Any], code: str) -> None:
    """Unknown keys, unsupported settings, bad types and vLLM's own config refusals are errors."""
    assert _code({**BASE, **change}) == code


def test_the_sizing_arguments_have_no_default() -> None:
    """vLLM sizes the pool and budgets per hardware: the config must state them."""
    data = dict(BASE)
    del data["num_gpu_blocks"]
    assert _code(data) == "ENGINE_CONFIG.KEY.MISSING"


def test_max_model_len_caps_outputs_and_refuses_long_prompts() -> None:
    """A request stops at max_model_len tokens; a prompt of max_model_len or more is refused."""
    cfg = engine_config_from_data({**BASE, "max_model_len": 256})
    wl = manifest(
        [{"request_id": "a", "arrival": 0, "prompt_tokens": 200, "max_output_tokens": 300}],
        {"token_budget": 8, "sequence_budget": 1},
        {"a": 290},
    )
    capped = cfg.apply(wl)
    assert capped.requests[0].max_output_tokens == 56
    assert capped.hidden_realized == {"a": 56}
    assert capped.budgets.kv_total_blocks == 29
    long = manifest(
        [{"request_id": "b", "arrival": 0, "prompt_tokens": 256, "max_output_tokens": 3}],
        {"token_budget": 8, "sequence_budget": 1},
    )
    with pytest.raises(InputError) as err:
        cfg.apply(long)
    assert err.value.findings[0].code == "ENGINE_CONFIG.PROMPT_TOO_LONG"


def test_a_yaml_file_error_is_located(tmp_path: Path) -> None:
    """An unknown key is reported at its line in the file."""
    path = tmp_path / "engine.yaml"
    path.write_text("block_size: 16\nnum_gpu_blocks: 30\nmax_num_batched_tokens: 64\n"
                    "max_num_seqs: 4\nmodel: facebook/opt-125m\n")  # fmt: skip
    with pytest.raises(InputError) as err:
        load_engine_config(path)
    f = err.value.findings[0]
    assert f.code == "ENGINE_CONFIG.KEY.UNKNOWN" and f.location.line == 5


WORKLOAD = {
    "schema_version": 1,
    "workload_id": "engine-config",
    "clock": {"unit": "tick"},
    "policy": {
        "policy_id": "vllm-v1",
        "policy_version": "0.23.0-rules.1",
        "tie_break": {
            "key": ["arrival_order", "request_id", "request_generation"],
            "phase_order": ["DECODE_ROW", "PREFILL_CHUNK"],
        },
    },
    "budgets": {"token_budget": 1000, "sequence_budget": 100},
    "requests": [
        {"request_id": f"r{i}", "arrival": i, "prompt_tokens": 40, "max_output_tokens": 30}
        for i in range(6)
    ],
}


def _files(tmp_path: Path, **extra: Any) -> tuple[Path, Path]:
    wl = tmp_path / "wl.json"
    wl.write_text(json.dumps(WORKLOAD))
    cfg = tmp_path / "engine.json"
    cfg.write_text(json.dumps({**BASE, "num_gpu_blocks": 9, **extra}))
    return wl, cfg


def test_replay_runs_under_the_engine_config(tmp_path: Path, cli: Any) -> None:
    """replay --engine-config sets the budgets (null block out), vllm-v1's options and L."""
    wl, cfg = _files(tmp_path, max_model_len=60)
    r = cli("replay", wl, "--policy", "vllm-v1", "--engine-config", cfg, "-f", "json")
    assert r.code == 0, r.out + r.err
    report = json.loads(r.out)
    run = report["summary"]["coordinates"]["run"]
    assert json.loads(run["budgets"])["kv_total_blocks"] == 8
    assert json.loads(run["policy"])["options"] == {
        "scheduling": "fcfs",
        "full_sequence_must_fit": True,
        "max_model_len": 60,
    }
    metrics = report["results"][0]["metrics"]
    assert metrics["options"]["engine_config"]["num_gpu_blocks"] == 9
    assert metrics["requests_finished"] == 6


@pytest.mark.parametrize(
    "args",
    [
        ("--policy", "orca"),
        ("--policy", "vllm-v1", "--policy-option", "scheduling=priority"),
        ("--policy", "vllm-v1", "--budget", "token_budget=8"),
    ],
)
def test_replay_refuses_what_contradicts_the_engine(
    tmp_path: Path, cli: Any, args: tuple[str, ...]
) -> None:
    """Another policy, or an option or budget the engine config already sets, is exit 2."""
    wl, cfg = _files(tmp_path)
    r = cli("replay", wl, *args, "--engine-config", cfg)
    assert r.code == 2 and "--engine-config" in r.err
