"""`cbaudit conform`: the corpus agrees at every step, a one-token change anywhere is found, and
unusable inputs are refused with their reason."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from repo_paths import CONFORMANCE

from cbaudit.conform.core import ConformInput, conform
from cbaudit.model import CheckStatus, InputError, UsageError

CORPUS = CONFORMANCE / "corpus"
RECORDS = CONFORMANCE / "records"
NAMES = sorted(p.name.removesuffix(".workload.json") for p in CORPUS.glob("*.workload.json"))
RECORD_FILES = sorted(RECORDS.glob("*.record.jsonl"))


def _case(name: str) -> ConformInput:
    return ConformInput(CORPUS / f"{name}.vllm-trace.jsonl", CORPUS / f"{name}.workload.json")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return path


def test_the_corpus_is_the_one_the_issue_asks_for() -> None:
    """At least 12 driver workloads, FCFS and priority, and recorder files beside them."""
    assert len(NAMES) >= 12 and len(RECORD_FILES) >= 1
    policies = {json.loads((CORPUS / f"{n}.workload.json").read_text())["config"]["policy"]
                for n in NAMES}  # fmt: skip
    assert policies == {"fcfs", "priority"}


@pytest.mark.parametrize("name", NAMES)
def test_every_corpus_trace_agrees_at_every_step(name: str) -> None:
    """vllm-v1 under contract validation reproduces vLLM's trace on every field of every step."""
    result = conform(_case(name))
    assert result.outcome is CheckStatus.PASSED, [f.message for f in result.findings]
    m = result.metrics
    assert m["agree"] and m["steps"]["identical"] == m["steps"]["vllm"] == m["steps"]["compared"]
    assert m["busy_steps"]["same_tokens"] == m["busy_steps"]["vllm"] > 0
    assert m["preemptions"]["matched"] == m["preemptions"]["vllm"] == m["preemptions"]["cbaudit"]
    assert m["finish_steps"]["equal"] == m["finish_steps"]["requests"]
    assert m["validation"] == "contract" and m["replay_stop"] == "completed"


@pytest.mark.parametrize("record", RECORD_FILES, ids=lambda p: p.name)
def test_every_record_agrees_without_a_workload(record: Path) -> None:
    """A recorder file carries its workload; replayed in the engine loop it agrees throughout."""
    result = conform(ConformInput(record))
    assert result.outcome is CheckStatus.PASSED, [f.message for f in result.findings]
    assert result.metrics["input"] == {
        "kind": "vllm-record",
        "loop": "engine",
        "trace": str(record),
        "workload": None,
        "requests": result.metrics["input"]["requests"],
    }
    assert result.metrics["steps"]["cbaudit_not_compared"] == 0


def _tamper(lines: list[dict[str, Any]], rng: random.Random) -> tuple[int, str]:
    busy = [i for i, rec in enumerate(lines) if rec["scheduled"]]
    i = rng.choice(busy)
    rid = rng.choice(sorted(lines[i]["scheduled"]))
    n = lines[i]["scheduled"][rid]
    lines[i]["scheduled"][rid] = n + 1 if n == 1 or rng.random() < 0.5 else n - 1
    return lines[i]["step"], rid


@pytest.mark.parametrize("name", [*NAMES, *(p.name for p in RECORD_FILES)])
def test_a_one_token_change_at_a_random_step_is_found_there(name: str, tmp_path: Path) -> None:
    """One scheduled token more or less, anywhere: conform fails at exactly that step."""
    rng = random.Random(name)
    is_record = name.endswith(".record.jsonl")
    source = RECORDS / name if is_record else CORPUS / f"{name}.vllm-trace.jsonl"
    lines = _lines(source)
    step, rid = _tamper(lines[1:] if is_record else lines, rng)
    tampered = _write(tmp_path / source.name, lines)
    case = ConformInput(tampered, None if is_record else CORPUS / f"{name}.workload.json")
    result = conform(case)
    assert result.outcome is CheckStatus.FAILED
    first = result.findings[0]
    assert first.code == "CONFORM.STEP.DIVERGED" and first.message.startswith(f"step {step}:")
    divergence = result.metrics["first_divergence"]
    assert divergence["step"] == step and "scheduled" in divergence["fields"]
    assert divergence["fields"]["scheduled"]["vllm"][rid] != divergence["fields"]["scheduled"][
        "cbaudit"
    ].get(rid)
    assert {f.code for f in result.findings[1:]} == {"CONFORM.STEP.FIELD"}


def test_the_first_divergence_names_both_sides_and_the_free_blocks_before(tmp_path: Path) -> None:
    """A null-block-free model of null_block_edge diverges; the divergence says where and how."""
    lines = _lines(CORPUS / "null_block_edge.vllm-trace.jsonl")
    lines[5]["free_blocks_after"] += 1
    trace = _write(tmp_path / "t.jsonl", lines)
    result = conform(ConformInput(trace, CORPUS / "null_block_edge.workload.json"))
    d = result.metrics["first_divergence"]
    assert d["step"] == 5 and list(d["fields"]) == ["free_blocks_after"]
    assert d["free_blocks_before"] == {
        "vllm": lines[4]["free_blocks_after"],
        "cbaudit": lines[4]["free_blocks_after"],
    }
    assert d["vllm"]["step"] == d["cbaudit"]["step"] == 5
    assert result.metrics["steps"]["identical"] == len(lines) - 1


def test_a_trace_longer_than_cbaudits_run_diverges_at_the_extra_step(tmp_path: Path) -> None:
    """vLLM steps with no cbaudit step are divergences, not ignored."""
    lines = _lines(CORPUS / "null_block_exact.vllm-trace.jsonl")
    lines.append({"step": len(lines), "scheduled": {}, "idle": True})
    result = conform(
        ConformInput(_write(tmp_path / "t.jsonl", lines), CORPUS / "null_block_exact.workload.json")
    )
    assert result.outcome is CheckStatus.FAILED
    assert result.metrics["first_divergence"]["cbaudit"] is None


def test_conform_runs_the_whole_cli_with_exit_codes_and_json(cli: Any, tmp_path: Path) -> None:
    """0 when every step agrees; 1 with the divergence; -f json carries the figures."""
    args = (
        CORPUS / "fcfs_preempt_storm.vllm-trace.jsonl",
        "--workload",
        CORPUS / "fcfs_preempt_storm.workload.json",
    )
    ok = cli("conform", *args, "-f", "json")
    assert ok.code == 0, ok.err
    report = json.loads(ok.out)
    metrics = report["results"][0]["metrics"]
    assert metrics["preemptions"] == {"vllm": 44, "cbaudit": 44, "matched": 44}
    assert metrics["engine_config"]["num_gpu_blocks"] == 30
    assert {d["path"] for d in report["inputs"]} == {
        str(CORPUS / "fcfs_preempt_storm.vllm-trace.jsonl"),
        str(CORPUS / "fcfs_preempt_storm.workload.json"),
    }
    again = cli("conform", *args, "-f", "json")
    assert again.out == ok.out  # byte-identical report
    lines = _lines(CORPUS / "fcfs_preempt_storm.vllm-trace.jsonl")
    lines[10]["preempted"] = ["f0"]
    bad = cli("conform", _write(tmp_path / "t.jsonl", lines),
              "-w", CORPUS / "fcfs_preempt_storm.workload.json")  # fmt: skip
    assert bad.code == 1 and "CONFORM.STEP.DIVERGED: step 10:" in bad.out
    assert 'step 10 preempted: vLLM ["f0"] | cbaudit []' in bad.out


def test_the_input_kind_decides_whether_a_workload_is_needed(cli: Any) -> None:
    """A driver trace needs its workload; a recorder file refuses one (both exit 2)."""
    r = cli("conform", CORPUS / "fcfs_ample.vllm-trace.jsonl")
    assert r.code == 2 and "--workload" in r.err
    record = RECORD_FILES[0]
    r = cli("conform", record, "--workload", CORPUS / "fcfs_ample.workload.json")
    assert r.code == 2 and "carries its own workload" in r.err


def _error_code(case: ConformInput) -> str:
    with pytest.raises(InputError) as err:
        conform(case)
    return err.value.findings[0].code


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda w: w.update(extra=1), "CONFORM.WORKLOAD.KEY.UNKNOWN"),
        (lambda w: w["config"].update(num_gpu_blocks=9), "CONFORM.WORKLOAD.KEY.UNKNOWN"),
        (lambda w: w["config"].update(loop="sometimes"), "CONFORM.WORKLOAD.VALUE.RANGE"),
        (lambda w: w["config"].update(policy="lifo"), "ENGINE_CONFIG.VALUE.RANGE"),
        (lambda w: w["requests"][0].update(id=w["requests"][1]["id"]),
         "CONFORM.WORKLOAD.REQUEST.DUPLICATE"),
        (lambda w: w["requests"][0].update(prompt_tokens=2048),
         "CONFORM.WORKLOAD.REQUEST.PROMPT_TOO_LONG"),
        (lambda w: w["requests"][0].update(output_tokens=0), "CONFORM.WORKLOAD.VALUE.RANGE"),
        (lambda w: w["config"].update(num_blocks=8), "REPLAY.KV.REQUEST_EXCEEDS_POOL"),
    ],
)  # fmt: skip
def test_a_bad_driver_workload_is_refused_with_its_reason(
    edit: Any, code: str, tmp_path: Path
) -> None:
    """Unknown keys, bad values, a prompt vLLM refuses, a request that can never fit the pool
    (vLLM would preempt it forever): unusable input, refused before the replay starts."""
    wl = json.loads((CORPUS / "fcfs_ample.workload.json").read_text())
    edit(wl)
    path = tmp_path / "wl.json"
    path.write_text(json.dumps(wl))
    assert _error_code(ConformInput(CORPUS / "fcfs_ample.vllm-trace.jsonl", path)) == code


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda lines: lines[3].update(extra=1), "CONFORM.TRACE.KEY.UNKNOWN"),
        (lambda lines: lines[3].pop("free_blocks_after"), "CONFORM.TRACE.KEY.MISSING"),
        (lambda lines: lines[3].update(step=7), "CONFORM.TRACE.STEP.ORDER"),
        (lambda lines: lines[3].update(new="x"), "CONFORM.TRACE.VALUE.TYPE"),
        (lambda lines: lines[3]["scheduled"].update(x=0), "CONFORM.TRACE.VALUE.RANGE"),
    ],
)
def test_a_bad_driver_trace_is_refused_at_its_line(edit: Any, code: str, tmp_path: Path) -> None:
    """Every trace line is read strictly; the finding points at the line."""
    lines = _lines(CORPUS / "null_block_exact.vllm-trace.jsonl")
    edit(lines)
    trace = _write(tmp_path / "t.jsonl", lines)
    with pytest.raises(InputError) as err:
        conform(ConformInput(trace, CORPUS / "null_block_exact.workload.json"))
    f = err.value.findings[0]
    assert f.code == code and f.location.line == 4


def _record(
    tmp_path: Path, edit: Any, source: Path = RECORDS / "staggered_idle.record.jsonl"
) -> Path:
    lines = _lines(source)
    edit(lines)
    return _write(tmp_path / "r.record.jsonl", lines)


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda r: r[0]["config"].update(enable_prefix_caching=True), "CONFORM.RECORD.UNSUPPORTED"),
        (lambda r: r[0]["config"].update(async_scheduling=True), "CONFORM.RECORD.UNSUPPORTED"),
        (lambda r: r[0]["config"].update(speculative=True), "CONFORM.RECORD.UNSUPPORTED"),
        (lambda r: r[0]["config"].update(kv_cache_groups=2), "CONFORM.RECORD.UNSUPPORTED"),
        (lambda r: r[0].update(vllm_version="0.24.0"), "CONFORM.RECORD.VLLM_VERSION"),
        (lambda r: r[0].update(format="cbaudit-vllm-record/2"), "CONFORM.RECORD.FORMAT"),
        (lambda r: r[0]["config"].update(num_blocks="9"), "ENGINE_CONFIG.VALUE.TYPE"),
        (lambda r: r[2].update(kind="note"), "CONFORM.RECORD.FORMAT"),
        (lambda r: r[2].pop("stopped"), "CONFORM.RECORD.KEY.MISSING"),
        (lambda r: r[2]["arrivals"].append(dict(r[1]["arrivals"][0])),
         "CONFORM.RECORD.REQUEST.DUPLICATE"),
    ],
)  # fmt: skip
def test_a_record_cbaudit_cannot_replay_is_refused(edit: Any, code: str, tmp_path: Path) -> None:
    """Settings cbaudit does not model, another vLLM, another format: unusable, with the reason."""
    assert _error_code(ConformInput(_record(tmp_path, edit))) == code


def test_prefix_caching_tells_the_user_what_to_do(cli: Any, tmp_path: Path) -> None:
    """The refusal names the vLLM flag that makes a usable record."""
    record = _record(tmp_path, lambda r: r[0]["config"].update(enable_prefix_caching=True))
    r = cli("conform", record)
    assert r.code == 2 and "--no-enable-prefix-caching" in r.err


def test_an_abort_stops_the_comparison_and_says_so(tmp_path: Path) -> None:
    """cbaudit does not replay aborts: steps before one are compared, then exit 2 (not a pass)."""
    record = _record(tmp_path, lambda r: r[40].update(aborted=["s5"]))
    result = conform(ConformInput(record))
    assert result.outcome is CheckStatus.ERROR
    assert [f.code for f in result.findings] == ["CONFORM.RECORD.ABORTED"]
    assert result.metrics["steps"]["compared"] == 39
    assert result.metrics["cut_at_abort"] == {"step": 39, "aborted": ["s5"]}


def test_a_record_that_ends_early_is_compared_as_far_as_it_goes(tmp_path: Path) -> None:
    """A deployment stopped mid-run: its steps agree; cbaudit's later steps are not compared."""
    record = _record(tmp_path, lambda r: r.__delitem__(slice(60, None)))
    result = conform(ConformInput(record))
    assert result.outcome is CheckStatus.PASSED
    steps = result.metrics["steps"]
    assert steps["compared"] == steps["identical"] == 59
    assert steps["cbaudit_not_compared"] > 0


def test_priority_records_need_arrival_times_in_arrival_order(tmp_path: Path) -> None:
    """Under priority vLLM compares arrival_time; an order cbaudit cannot replay is refused."""

    def swap(r: list[dict[str, Any]]) -> None:
        first = next(s for s in r[1:] if s["arrivals"])
        later = next(s for s in r[1:] if s["arrivals"] and s["step"] > first["step"])
        first["arrivals"][0]["arrival_time"] = later["arrivals"][0]["arrival_time"] + 1.0

    record = _record(tmp_path, swap, RECORDS / "prio_only_preempt_a.record.jsonl")
    assert _error_code(ConformInput(record)) == "CONFORM.RECORD.ARRIVAL_TIME"


def test_a_usage_error_is_not_an_input_error() -> None:
    """The wrong pairing of inputs is an invocation problem (exit 2 through UsageError)."""
    with pytest.raises(UsageError):
        conform(ConformInput(CORPUS / "fcfs_ample.vllm-trace.jsonl"))


def test_a_record_without_requests_is_not_a_pass(tmp_path: Path) -> None:
    """A header and steps with no arrival compare nothing: unusable, never a vacuous pass."""

    def no_arrivals(r: list[dict[str, Any]]) -> None:
        del r[1:]

    assert _error_code(ConformInput(_record(tmp_path, no_arrivals))) == "CONFORM.RECORD.EMPTY"
