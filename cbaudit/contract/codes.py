"""Every finding code the Loop 2 contract checks can produce, with a one-line meaning.

The catalog is the reference for negative fixtures (each names one code here), for the docs
and for the mutation helper. `SCHEMA.*` and `LOAD.*` codes come from `cbaudit.io` and are not
listed; a check that emits a code missing from this catalog is a bug (a test enforces it).
"""

from __future__ import annotations

from types import MappingProxyType

_CATALOG: dict[str, str] = {
    # workload
    "WORKLOAD.REQUEST.DUPLICATE": "a request_id is declared twice in the workload",
    "WORKLOAD.ARRIVAL_ORDER.DUPLICATE": "two requests declare the same arrival_order",
    "WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST": "hidden truth names a request the workload lacks",
    # state
    "STATE.WORKLOAD.MISMATCH": "the state's workload_id is not the workload's",
    "STATE.REQUEST.DUPLICATE": "a request appears twice in the state (duplicated queue member)",
    "STATE.REQUEST.UNDECLARED": "the state has a view of a request the workload never declared",
    "STATE.PROMPT.MISMATCH": "a view's prompt_tokens differs from the workload declaration",
    "STATE.GENERATION.REGRESSED": "a view's request_generation is below the declared generation",
    "STATE.FRONTIER.INCONSISTENT": (
        "emitted/computed frontiers fit neither unfinished prefill (e=0, c<p),"
        " ordinary decode (e>=1, c=p+e-1) nor a rebuild (e>=1, c<p+e-1)"
    ),
    "STATE.REBUILD_FLOOR.AFTER_OUTPUT": (
        "a view declares rebuild_floor after its first token (the frontiers already mark"
        " rebuild rows then)"
    ),
    "STATE.REBUILD_FLOOR.BEYOND_PROMPT": "a view's rebuild_floor exceeds its prompt length",
    "STATE.COMMITTED.NOT_AT_COMPUTED": "committed length k differs from computed c at the cut",
    "STATE.EMITTED.EXCEEDS_MAX": "a view has emitted more tokens than max_output_tokens",
    "STATE.TERMINAL.QUEUE": "terminal and the finished queue disagree",
    "STATE.TERMINAL.READY": "a terminal request is marked ready",
    "STATE.READY.REASON_MISSING": "a live request is not ready but gives no readiness reason",
    "STATE.COMPLETED_SERVICE.MISSING": (
        "the workload or a view names a client but the state publishes no completed_service"
    ),
    "STATE.COMPLETED_SERVICE.UNKNOWN_CLIENT": (
        "completed_service counts service for a client no request or view names"
    ),
    # plan: binding
    "PLAN.STATE_VERSION.MISMATCH": "the plan's input_state_version is not the state's version",
    "PLAN.DECISION.MISMATCH": "the plan's decision_id is not the state's decision_id",
    "PLAN.POLICY.ID_MISMATCH": "the plan's policy_id is not the workload's declared policy",
    "PLAN.POLICY.VERSION_MISMATCH": "the plan's policy_version is not the declared version",
    "PLAN.REQUEST.UNKNOWN": "a selected request has no view in the state",
    "PLAN.GENERATION.STALE": "a selected request_generation is not the state's generation",
    "PLAN.SNAPSHOT.STALE": "a selected snapshot_version is not the state's M5.1 snapshot",
    "PLAN.REQUEST.NOT_READY": "a selected request is not ready",
    "PLAN.REQUEST.TERMINAL": "a selected request generation is terminal",
    "PLAN.REQUEST.DUPLICATE": "a request is selected more than once in one plan",
    # plan: intervals
    "PLAN.INTERVAL.EMPTY": "a selected interval has end <= start",
    "PLAN.INTERVAL.BEFORE_FRONTIER": "an interval starts before the computed frontier",
    "PLAN.INTERVAL.AFTER_FRONTIER": "an interval starts after the computed frontier (a gap)",
    "PLAN.INTERVAL.BEYOND_PROMPT": "a prefill interval ends beyond the prompt",
    "PLAN.INTERVAL.NO_LEGAL_WORK": "the request's frontiers admit no legal interval",
    "PLAN.DECODE.MULTI_ROW": "an ordinary decode interval is wider than one row",
    "PLAN.RECOMPUTE.BEYOND_STREAM": (
        "a rebuild (RECOMPUTE_CHUNK) interval ends beyond the logical stream p + e"
    ),
    "PLAN.PHASE.FORGED": "the phase annotation is not the one the frontiers derive",
    "PLAN.POSITIONS.FORGED": "positions are not range(start, end)",
    # plan: budgets and ledger
    "PLAN.BUDGET.TOKEN_EXCEEDED": "selected widths exceed the token budget",
    "PLAN.BUDGET.SEQUENCE_EXCEEDED": "selected requests exceed the sequence budget",
    "PLAN.LEDGER.BUDGET_MISMATCH": "the ledger's budgets are not the workload's budgets",
    "PLAN.LEDGER.TOKENS_DRIFT": "ledger tokens_used is not the sum of selected widths",
    "PLAN.LEDGER.SEQUENCES_DRIFT": "ledger sequences_used is not the number of selected requests",
    # plan: tie-break and not-selected evidence
    "PLAN.TIE_BREAK.FORGED": "a recorded tie-break key is not the key the declared policy gives",
    "PLAN.TIE_BREAK.ORDER": "selected work is not in ascending tie-break key order",
    "PLAN.TIE_BREAK.SKIPPED_UNEXPLAINED": (
        "a ready request ranked ahead of selected work was left out without a recorded reason"
    ),
    "PLAN.NOT_SELECTED.CONFLICT": "a request is both selected and recorded as not selected",
    "PLAN.NOT_SELECTED.UNKNOWN": "a not-selected entry names a request the state lacks",
    # online-record leaks (state, plan, result)
    "PLAN.LEAK.HIDDEN_TRUTH": "an online record carries fixture-only hidden truth",
    "PLAN.LEAK.PHYSICAL_BLOCK": "an online record carries physical-block (allocator) fields",
    # result
    "RESULT.DECISION.MISMATCH": "the result's decision_id is not the plan's",
    "RESULT.STATE_VERSION.MISMATCH": "the result's input_state_version is not the plan's",
    "RESULT.ITEM.UNPLANNED": "a result item completes work for a request the plan never selected",
    "RESULT.ITEM.MISSING": "a planned item has no result item (planned vs completed unknown)",
    "RESULT.ITEM.DUPLICATE": "a request has two result items",
    "RESULT.GENERATION.STALE": "a result for an old request generation tries to publish",
    "RESULT.SNAPSHOT.STALE": "a result item's snapshot_version is not the planned snapshot",
    "RESULT.PLANNED.MISMATCH": "a result item's planned interval is not the plan's interval",
    "RESULT.INTERVAL.OUTSIDE_PLAN": "a completed interval is not a prefix of the planned one",
    "RESULT.PROGRESS.BEFORE_MISMATCH": "progress-before differs from the state's frontiers",
    "RESULT.PROGRESS.COMPUTED_MISMATCH": "computed-after is not the completed interval's end",
    "RESULT.OUTPUT_CLOCK.WRONG": (
        "emitted-after is not emitted-before + completed decode row + prefill reaching p"
        " + rebuild reaching p + e"
    ),
    "RESULT.RECOMPUTE.EMITTED_EARLY": (
        "a rebuild whose completed end stops short of p + e emits an output token"
    ),
    "RESULT.RECOMPUTE.REEMITTED_OUTPUT": (
        "a rebuild publishes an output index the request had already emitted"
    ),
    "RESULT.OUTPUT_EVENT.MISMATCH": "output events do not match the emitted-token advance",
    "RESULT.LOGICAL_LENGTH.WRONG": "logical length after is not prompt + emitted",
    "RESULT.COMMITTED.AHEAD": "committed length runs ahead of computed length",
    "RESULT.OUTPUT.EXCEEDS_MAX": "emitted-after exceeds max_output_tokens",
    "RESULT.TERMINAL.UNPLANNED": "a terminal event names a request without a result item",
    "RESULT.TERMINAL.WITHOUT_OUTPUT": "an eos/max-tokens terminal event without an output token",
    "RESULT.TERMINAL.MISSING": "a request reached max_output_tokens without a terminal event",
    "RESULT.DEBIT.PLANNED_SERVICE": "a client was debited for planned, not completed, service",
    "RESULT.DEBIT.REBUILD_AS_SERVICE": (
        "a client was debited for rebuild rows (recompute overhead), not only semantic service"
    ),
    "RESULT.DEBIT.MISMATCH": "a client's debit is not its completed semantic service",
    "RESULT.DEBIT.UNKNOWN_CLIENT": "a debit names a client without completed service",
    "RESULT.DEBIT.DUPLICATE": "a client is debited twice in one result",
    # case files and traces
    "CASE.PATCH.INVALID": "a negative case's JSON Patch cannot be applied to its base",
    "CASE.BASE.NESTED": "a negative case's base is itself a patch file",
    "CASE.BASE.ESCAPE": "a negative case's base lies outside the bundle (or its declared root)",
    "CASE.EXPECT_CODE.MISSING": "a negative case declares no expect_code",
    "CASE.EXPECT_CODE.UNKNOWN": "a negative case expects a code outside this catalog",
    "CASE.EXPECT_CODE.CONFLICT": "the gate check and the case file expect different codes",
    "CASE.EXPECT_CODE.NOT_PRODUCED": "a negative case did not produce its expected code",
    "TRACE.ORDER.NO_WORKLOAD": "a trace record arrives before any workload record",
    "TRACE.ORDER.NO_STATE": "a plan arrives before any state record",
    "TRACE.ORDER.NO_PLAN": "a result arrives before any plan record",
    "TRACE.FINDINGS.TRUNCATED": "more findings than the report keeps; the rest are counted",
}

CODES = MappingProxyType(_CATALOG)


def describe(code: str) -> str:
    """The one-line meaning of `code` (KeyError for a code not in the catalog)."""
    return CODES[code]
