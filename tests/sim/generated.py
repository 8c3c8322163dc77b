"""Generated workloads for the differential tests: random request mixes as workload documents
(test_stretch.py replays them in process; test_wheel_install.py writes them to files and
replays them with the installed build and with the source tree)."""

from __future__ import annotations

import random
from typing import Any

from cbaudit.policies.registry import POLICIES

#: The options a registered policy needs on these workloads (the others take none).
POLICY_OPTIONS: dict[str, dict[str, Any]] = {
    "bounded-admission": {"live_cap": 3},
    **{pid: {"ceiling_rows": 400} for pid in POLICIES.ids() if pid.startswith("reservation-")},
}
POLICY_OPTIONS["reservation-watermark"]["watermark_rows"] = 20


def generated_doc(
    workload_id: str,
    unit: str,
    budgets: dict[str, Any],
    reqs: list[dict[str, Any]],
    hidden: dict[str, int],
) -> dict[str, Any]:
    """A generated workload's document: its requests, budgets and hidden output lengths."""
    return {
        "schema_version": 1,
        "workload_id": workload_id,
        "clock": {"unit": unit},
        "budgets": budgets,
        "requests": reqs,
        "fixture_only_hidden_truth": {"realized_output_tokens": hidden},
    }


def _requests(
    rnd: random.Random, n: int, gaps: list[float], out_max: tuple[int, int], prompts: list[int]
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """`n` random requests, `r0`, `r1`...: each arrives a gap drawn from `gaps` after the one
    before, with a prompt drawn from `prompts`, a `max_output_tokens` drawn from `out_max`
    (inclusive) and a priority 0-2; and each one's realized output length, 1 to its cap."""
    t = 0.0
    reqs: list[dict[str, Any]] = []
    hidden: dict[str, int] = {}
    for i in range(n):
        t += rnd.choice(gaps)
        max_out = rnd.randint(*out_max)
        rid = f"r{i}"
        reqs.append(
            {
                "request_id": rid,
                "arrival": t,
                "prompt_tokens": rnd.choice(prompts),
                "max_output_tokens": max_out,
                "priority": rnd.randint(0, 2),
            }
        )
        hidden[rid] = rnd.randint(1, max_out)
    return reqs, hidden


def workload_doc(seed: int, unit: str) -> dict[str, Any]:
    """A random workload: bursts of arrivals, long prompts, short and long outputs, priorities,
    sometimes a tiny K/V pool (preemption) or a long-prefill threshold."""
    rnd = random.Random(seed)
    n = rnd.randint(3, 14)
    gaps = [0, 0, 1, 3, 20, 80] if unit == "tick" else [0, 5, 40, 400]
    reqs, hidden = _requests(rnd, n, gaps, (1, 60), [1, 3, 17, 40, 130])
    budgets: dict[str, Any] = {
        "token_budget": rnd.choice([8, 32, 64, 256]),
        "sequence_budget": rnd.choice([2, 4, 16]),
    }
    if rnd.random() < 0.8:
        budgets["kv_block_size"] = rnd.choice([1, 4, 16])
        need = max(
            -(-(r["prompt_tokens"] + r["max_output_tokens"]) // budgets["kv_block_size"])
            for r in reqs
        )
        budgets["kv_total_blocks"] = need + rnd.choice([0, 2, 8, 1000])
    if rnd.random() < 0.3:
        budgets["long_prefill_token_threshold"] = rnd.choice([4, 16])
    return generated_doc(f"gen-{seed}", unit, budgets, reqs, hidden)


def long_workload_doc(seed: int, unit: str) -> dict[str, Any]:
    """A longer random workload than `workload_doc`'s: up to 70 requests, prompts up to 2,100
    tokens against token budgets up to 2,048 (chunked prompts with decodes beside them),
    outputs up to 200 tokens (long stretches), pools from exactly enough to ample."""
    rnd = random.Random(10_000_000 + seed)
    n = rnd.randint(10, 70)
    gaps = [0, 0, 1, 3, 20, 80] if unit == "tick" else [0, 0, 5, 40, 400, 3000]
    reqs, hidden = _requests(rnd, n, gaps, (1, 200), [1, 3, 17, 40, 130, 700, 2100])
    budgets: dict[str, Any] = {
        "token_budget": rnd.choice([8, 32, 64, 256, 2048]),
        "sequence_budget": rnd.choice([2, 4, 16, 64]),
    }
    if rnd.random() < 0.85:
        bs = budgets["kv_block_size"] = rnd.choice([1, 4, 16])
        need = max(-(-(r["prompt_tokens"] + r["max_output_tokens"]) // bs) for r in reqs)
        budgets["kv_total_blocks"] = need + rnd.choice([0, 2, 8, 50, 100_000])
    if rnd.random() < 0.3:
        budgets["long_prefill_token_threshold"] = rnd.choice([4, 16, 512])
    return generated_doc(f"long-{seed}", unit, budgets, reqs, hidden)


def busy_workload_doc(seed: int, unit: str) -> dict[str, Any]:
    """A busy random workload: 120-220 requests arriving faster than they are served, so the
    running list fills to the sequence budget (24-64 decodes beside an admission or a chunk)
    and requests wait, with a finish and an admission every few iterations; pools from tight
    (preemption) to ample."""
    rnd = random.Random(20_000_000 + seed)
    n = rnd.randint(120, 220)
    gaps = [0, 0, 1, 2] if unit == "tick" else [0, 0, 2, 10]
    reqs, hidden = _requests(rnd, n, gaps, (5, 150), [20, 60, 130, 300, 600])
    budgets: dict[str, Any] = {
        "token_budget": rnd.choice([256, 512, 2048]),
        "sequence_budget": rnd.choice([24, 32, 64]),
    }
    bs = budgets["kv_block_size"] = rnd.choice([4, 16])
    need = max(-(-(r["prompt_tokens"] + r["max_output_tokens"]) // bs) for r in reqs)
    budgets["kv_total_blocks"] = need * rnd.choice([4, 16, 1000])
    return generated_doc(f"busy-{seed}", unit, budgets, reqs, hidden)
