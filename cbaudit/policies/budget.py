"""Budget arithmetic every policy shares: KV block math and admission reasons.

Block math (lesson section 5.1): an unshared sequence holding `cached` tokens in blocks of
`block_size` needs `ceil((cached + new) / bs) - ceil(cached / bs)` more blocks to append `new`
tokens. Admission refusals name the budget that refused them, checked in the order sequence,
token, KV (the lesson's `check_admission_eligibility`).
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why a request the policy looked at was not selected (the plan's `not_selected`)."""

    ADMITTED = "ADMITTED"
    DEFERRED_SEQUENCE_BUDGET = "DEFERRED_SEQUENCE_BUDGET"
    DEFERRED_TOKEN_BUDGET = "DEFERRED_TOKEN_BUDGET"
    DEFERRED_KV_BUDGET = "DEFERRED_KV_BUDGET"
    DEFERRED_RESERVATION = "DEFERRED_RESERVATION"  # ORCA: max_tokens would exceed the slots
    DEFERRED_FCFS_BREAK = "DEFERRED_FCFS_BREAK"  # behind an older request that did not fit
    DEFERRED_FIXED_BATCH = "DEFERRED_FIXED_BATCH"  # static: the cohort is still open
    DEFERRED_PHASE_PRIORITY = "DEFERRED_PHASE_PRIORITY"  # the other phase took the budget
    DEFERRED_ROTATION = "DEFERRED_ROTATION"  # bounded decode-first: served more recently
    DEFERRED_AFTER_PREEMPTION = "DEFERRED_AFTER_PREEMPTION"  # vLLM: no waiting pass
    # vLLM (scheduler_reserve_full_isl): the blocks for the whole sequence do not fit
    DEFERRED_KV_FULL_SEQUENCE = "DEFERRED_KV_FULL_SEQUENCE"
    DEFERRED_BEHIND_QUEUE_HEAD = "DEFERRED_BEHIND_QUEUE_HEAD"  # vLLM: the waiting pass stopped
    NOT_READY_REMOTE_KV = "NOT_READY_REMOTE_KV"  # waiting on foreign (remote) K/V
    DEFERRED_STATE_POOL = "DEFERRED_STATE_POOL"  # a hybrid model's state pool has no slot
    PREEMPTED = "PREEMPTED"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def blocks_needed(cached_tokens: int, input_tokens: int, block_size: int) -> int:
    """New physical blocks to append `input_tokens` to an unshared sequence of `cached_tokens`."""
    if cached_tokens < 0 or input_tokens < 0 or block_size <= 0:
        raise ValueError("blocks_needed needs cached, input >= 0 and block_size > 0")
    return ceil_div(cached_tokens + input_tokens, block_size) - ceil_div(cached_tokens, block_size)


def blocks_held(cached_tokens: int, block_size: int) -> int:
    """Blocks an unshared sequence of `cached_tokens` occupies."""
    return ceil_div(cached_tokens, block_size)


def admission_check(
    *,
    cached_tokens: int,
    input_tokens: int,
    active_sequences: int,
    step_tokens: int,
    free_blocks: int | None,
    max_sequences: int,
    max_tokens: int,
    block_size: int | None,
) -> Reason:
    """Admit one candidate against scalar limits; `ADMITTED` or the first refusing budget.

    `free_blocks`/`block_size` of None means no KV pool is declared (never refuses on KV).
    """
    if active_sequences + 1 > max_sequences:
        return Reason.DEFERRED_SEQUENCE_BUDGET
    if step_tokens + input_tokens > max_tokens:
        return Reason.DEFERRED_TOKEN_BUDGET
    if (
        free_blocks is not None
        and block_size is not None
        and free_blocks < blocks_needed(cached_tokens, input_tokens, block_size)
    ):
        return Reason.DEFERRED_KV_BUDGET
    return Reason.ADMITTED
