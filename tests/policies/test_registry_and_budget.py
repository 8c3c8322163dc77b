"""The policy registry and the shared budget arithmetic (lesson 5.1)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fields import slot_names

from cbaudit.policies.budget import Reason, admission_check, blocks_needed
from cbaudit.policies.registry import POLICIES, Registry

EXPECTED_IDS = ["decode-first", "orca", "prefill-first", "sarathi-serve", "static", "vllm-v1"]


def test_registry_is_exhaustive_and_identities_match() -> None:
    """The six throughput policies are registered; every id builds a policy with that id."""
    assert set(EXPECTED_IDS) <= set(POLICIES.ids())
    for pid in EXPECTED_IDS:
        assert POLICIES.create(pid).policy_id == pid


def test_every_registered_policy_builds_and_loads_lazily() -> None:
    """Every id (the reservation modes among them, one per `reservation.MODES`) builds a policy
    reporting that id; listing the ids loads no policy module but the shared base."""
    from cbaudit.policies.reservation import MODES

    assert [p for p in POLICIES.ids() if p.startswith("reservation-")] == sorted(
        f"reservation-{m}" for m in MODES
    )
    required = {
        "bounded-admission": {"live_cap": 4},
        "reservation-watermark": {"watermark_rows": 1},
    }
    for pid in POLICIES.ids():
        options = required.get(pid, {})
        assert POLICIES.create(pid, options).policy_id == pid, pid
    code = (
        "import sys; from cbaudit.policies.registry import POLICIES; POLICIES.ids();"
        " print(' '.join(m for m in sys.modules if m.startswith('cbaudit.policies.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) <= {
        "cbaudit.policies.registry",
        "cbaudit.policies.base",
        "cbaudit.policies.budget",
    }


def test_registry_refuses_duplicates() -> None:
    """Registering an id twice raises instead of silently replacing."""
    reg = Registry()
    reg.register("x", lambda o: POLICIES.create("static"), "a test policy")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("x", lambda o: POLICIES.create("static"), "a test policy")


def test_registry_refuses_a_policy_without_a_one_line_summary() -> None:
    """Every policy carries a one-line summary (`replay --list-policies` prints it)."""
    reg = Registry()
    for summary in ("", "  ", "two\nlines"):
        with pytest.raises(ValueError, match="one-line summary"):
            reg.register("x", lambda o: POLICIES.create("static"), summary)
    assert all(POLICIES.summary(pid).strip() for pid in POLICIES.ids())


def test_bad_policy_option_is_refused() -> None:
    """A wrongly typed or unknown option is a ValueError naming the option."""
    with pytest.raises(ValueError, match="prefill_reserve"):
        POLICIES.create("decode-first", {"prefill_reserve": "many"})
    with pytest.raises(ValueError, match="scheduling"):
        POLICIES.create("vllm-v1", {"scheduling": "lifo"})
    with pytest.raises(ValueError, match="no options"):
        POLICIES.create("static", {"x": 1})


@pytest.mark.parametrize(
    ("cached", "new", "expect"), [(14, 1, 0), (16, 1, 1), (0, 10, 1), (0, 50, 4), (15, 2, 1)]
)
def test_block_math(cached: int, new: int, expect: int) -> None:
    """new blocks = ceil((cached + new) / bs) - ceil(cached / bs) with bs = 16."""
    assert blocks_needed(cached, new, 16) == expect


@pytest.mark.parametrize(
    ("active", "step_tokens", "free", "expect"),
    [
        (4, 100, 20, Reason.DEFERRED_SEQUENCE_BUDGET),
        (2, 480, 20, Reason.DEFERRED_TOKEN_BUDGET),
        (2, 100, 2, Reason.DEFERRED_KV_BUDGET),
        (2, 100, 10, Reason.ADMITTED),
    ],
)
def test_lesson_admission_cases(active: int, step_tokens: int, free: int, expect: Reason) -> None:
    """The lesson's four check_admission_eligibility cases (P = 50, 4 seqs, 512 tokens)."""
    got = admission_check(
        cached_tokens=0,
        input_tokens=50,
        active_sequences=active,
        step_tokens=step_tokens,
        free_blocks=free,
        max_sequences=4,
        max_tokens=512,
        block_size=16,
    )
    assert got is expect


def test_take_makes_the_item_plan_item_makes() -> None:
    """`PlanBuilder.take` makes its item without `PlanItem.__init__`: every slot holds what
    the constructor would put there (prefill, decode and rebuild rows, both key forms)."""
    from cbaudit.contract.live_request import LiveRequest
    from cbaudit.contract.workload_records import Phase
    from cbaudit.policies.base import BudgetsView, PlanBuilder, PlanItem, key_function
    from cbaudit.sim.engine import _View

    budgets = BudgetsView(4096, 16, 16, 1000, None)
    keys = [
        key_function(("arrival_order", "request_id", "request_generation"), ()),
        key_function(
            ("phase_rank", "arrival_order", "request_id", "request_generation"),
            (Phase.DECODE_ROW, Phase.PREFILL_CHUNK),
        ),
    ]
    for key_fn in keys:
        reqs = []
        for i, (e, c) in enumerate([(0, 0), (0, 5), (3, 12), (3, 4)]):  # p = 10
            r = LiveRequest(i, f"r{i}", 0, 10, 50, float(i), i, 0, None)
            r.e, r.c, r.snapshot = e, c, 7 + i
            reqs.append(r)
        view = _View.of(1, 1, 0.0, budgets, [], reqs, 1000)
        plan = PlanBuilder(view, key_fn)
        for r, n in zip(reqs, [4, 5, 1, 2], strict=True):
            assert plan.take(r, n) is None
        phases = [item.phase for item in plan.items]
        assert phases == [
            Phase.PREFILL_CHUNK,
            Phase.PREFILL_CHUNK,
            Phase.DECODE_ROW,
            Phase.RECOMPUTE_CHUNK,
        ]
        for item in plan.items:
            r = item.req
            made = PlanItem.of(r, r.c, item.end, item.phase, key_fn(r, item.phase))
            assert {s: getattr(item, s) for s in slot_names(PlanItem)} == {
                s: getattr(made, s) for s in slot_names(PlanItem)
            }
