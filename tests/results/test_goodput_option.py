"""`--goodput` as `vllm bench serve` takes it: one option, space-separated `KEY:MS` pairs.

vLLM: `--goodput` has `nargs="+"` and keys ttft, tpot, e2el (vllm/benchmarks/serve.py,
`add_cli_args` and `check_goodput_args`); cbaudit adds tbt. The comma form and a repeated
option keep working.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from repo_paths import M52

from cbaudit.cli.goodput_option import join_goodput_words

BURST = M52 / "loop7" / "burst.workload.yaml"
SPEC = M52 / "loop7" / "sweep.generator.yaml"


def _slo(cli: Callable[..., Any], *args: Any) -> dict[str, Any]:
    r = cli("replay", *args, "-f", "json")
    assert r.code == 0, r.err
    metrics: dict[str, Any] = json.loads(r.out)["results"][0]["metrics"]["slo"]
    return metrics


def test_space_separated_pairs_as_vllm_spells_them(cli: Callable[..., Any]) -> None:
    """`--goodput ttft:20 tpot:5 e2el:60` sets three limits, exactly as the comma form and a
    repeated option do."""
    vllm_form = _slo(
        cli, BURST, "--policy", "least-slack", "--goodput", "ttft:20", "tpot:5", "e2el:60"
    )
    comma_form = _slo(cli, BURST, "--policy", "least-slack", "--goodput", "ttft:20,tpot:5,e2el:60")
    repeated = _slo(
        cli,
        BURST,
        "--policy",
        "least-slack",
        "--goodput",
        "ttft:20",
        "--goodput",
        "tpot:5",
        "--goodput",
        "e2el:60",
    )
    assert vllm_form == comma_form == repeated
    only_ttft = _slo(cli, BURST, "--policy", "least-slack", "--goodput", "ttft:20")
    assert vllm_form != only_ttft, "the second and third pair were not ignored"


def test_pairs_before_the_workload_leave_it_positional(cli: Callable[..., Any]) -> None:
    """`replay --goodput ttft:20 tbt:12 WORKLOAD ...`: the workload path is not a pair."""
    before = _slo(cli, "--goodput", "ttft:20", "tbt:12", BURST, "--policy", "least-slack")
    after = _slo(cli, BURST, "--policy", "least-slack", "--goodput", "ttft:20", "tbt:12")
    assert before == after


def test_itl_is_refused_as_vllm_refuses_it(cli: Callable[..., Any]) -> None:
    """vLLM's goodput takes no itl key; cbaudit says so and points at tbt (exit 2)."""
    r = cli("replay", BURST, "--policy", "least-slack", "--goodput", "ttft:20", "itl:5")
    assert r.code == 2
    assert "itl is not a goodput key" in r.err and "tbt:MS" in r.err


def test_sweep_takes_the_same_form(cli: Callable[..., Any]) -> None:
    """`replay sweep ... --goodput ttft:30 e2el:200` runs; an unknown key is exit 2."""
    args = ("replay", "sweep", SPEC, "--policy", "least-slack", "--rates", "0.2:1:2")
    r = cli(*args, "--repeats", "1", "--goodput", "ttft:30", "e2el:200", "-f", "json")
    assert r.code == 0, r.err
    r = cli(*args, "--goodput", "ttft:30", "latency:9")
    assert r.code == 2 and "KEY:MS" in r.err


@pytest.mark.parametrize(
    ("argv", "joined"),
    [
        (["--goodput", "ttft:30", "tpot:20", "w.yaml"], ["--goodput", "ttft:30 tpot:20", "w.yaml"]),
        (["--goodput=ttft:30", "e2el:9"], ["--goodput", "ttft:30 e2el:9"]),
        (["--goodput", "ttft:30", "a/b:c"], ["--goodput", "ttft:30", "a/b:c"]),
        (["--goodput", "ttft:30", "spec:x.yaml"], ["--goodput", "ttft:30", "spec:x.yaml"]),
        (["--", "--goodput", "ttft:1", "x:2"], ["--", "--goodput", "ttft:1", "x:2"]),
        (["--goodput"], ["--goodput"]),
    ],
)
def test_join_goodput_words(argv: list[str], joined: list[str]) -> None:
    """Only KEY:VALUE words right after --goodput join it; paths and `--` end the run."""
    assert join_goodput_words(argv) == joined
