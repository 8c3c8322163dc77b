"""`conform --to-contract`: vLLM's own decisions as contract records that validate-plan checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from repo_paths import CONFORMANCE

CORPUS = CONFORMANCE / "corpus"
RECORDS = CONFORMANCE / "records"


@pytest.mark.parametrize(
    "args",
    [
        (RECORDS / "prio_only_preempt_a.record.jsonl",),
        (RECORDS / "staggered_idle.record.jsonl",),
        (CORPUS / "fcfs_preempt_storm.vllm-trace.jsonl", "-w",
         CORPUS / "fcfs_preempt_storm.workload.json"),
        (CORPUS / "prio_victim_refund_a.vllm-trace.jsonl", "-w",
         CORPUS / "prio_victim_refund_a.workload.json"),
    ],
    ids=["record-prio", "record-fcfs", "trace-fcfs", "trace-prio"],
)  # fmt: skip
def test_vllms_decisions_satisfy_the_contract(cli: Any, tmp_path: Path, args: Any) -> None:
    """Converted records pass validate-plan: vLLM's plans are legal contract plans."""
    out = tmp_path / "vllm.contract.jsonl"
    r = cli("conform", *args, "--to-contract", out)
    assert r.code == 0, r.err
    kinds = [json.loads(x)["record"] for x in out.read_text().splitlines()]
    assert kinds[0] == "workload" and kinds.count("plan") == kinds.count("result") > 10
    check = cli("validate-plan", "--trace", out)
    assert check.code == 0, check.out


def test_a_decision_over_the_budget_is_a_contract_finding(cli: Any, tmp_path: Path) -> None:
    """A record that schedules past the token budget converts, and validate-plan rejects it."""
    lines = [
        json.loads(x) for x in (RECORDS / "staggered_idle.record.jsonl").read_text().splitlines()
    ]
    budget = lines[0]["config"]["max_num_batched_tokens"]
    step = next(s for s in lines[1:] if s["new"] and s["scheduled"][s["new"][0]] < budget)
    rid = step["new"][0]
    step["scheduled"][rid] = budget + 1
    step["total"] += budget + 1
    record = tmp_path / "r.jsonl"
    record.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "c.jsonl"
    assert cli("conform", record, "--to-contract", out).code == 0
    check = cli("validate-plan", "--trace", out)
    assert check.code == 1 and "PLAN.BUDGET.TOKEN_EXCEEDED" in check.out


def test_a_decision_the_replay_cannot_follow_is_unusable(cli: Any, tmp_path: Path) -> None:
    """vLLM scheduling a request that does not exist yet: CONFORM.PLAYBACK.INCONSISTENT, exit 2,
    and no output file."""
    lines = [
        json.loads(x) for x in (RECORDS / "staggered_idle.record.jsonl").read_text().splitlines()
    ]
    lines[1]["scheduled"]["ghost"] = 3
    record = tmp_path / "r.jsonl"
    record.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "c.jsonl"
    r = cli("conform", record, "--to-contract", out)
    assert r.code == 2 and "CONFORM.PLAYBACK.INCONSISTENT" in r.err
    assert not out.exists()
