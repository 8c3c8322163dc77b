"""Loops 7-11: in-memory targets, and every operator killed by its own code on its fixture."""

from __future__ import annotations

import random

import pytest
from _mutate_paths import (
    BUNDLE,
    CONTRACTS,
    LOOP7,
    LOOP8,
    LOOP9,
    LOOP10,
    LOOP11_CLOSURE,
    LOOP11_SENSITIVITY,
    RESULTS,
)

from cbaudit.checks.bundle import load_bundle
from cbaudit.io import load_document
from cbaudit.kinds import KINDS, TARGETS
from cbaudit.mutate.bundle import load_fixture_file, valid_fixtures
from cbaudit.mutate.campaign import FixtureInput, MutantStatus, canonical, run_campaign, run_cell
from cbaudit.mutate.patch import apply_shared
from cbaudit.mutate.registry import OPERATORS

PATHS = {
    "oracle:slo-overload": LOOP7,
    "oracle:fairness-starvation": LOOP8,
    "oracle:preemption-resume": LOOP9,
    "oracle:runtime-policy": LOOP10,
    "results:sensitivity": LOOP11_SENSITIVITY,
    "results:contracts": CONTRACTS,
    "results:results": RESULTS,
    "results:closure": LOOP11_CLOSURE,
}
NEW_LOOPS = ("7", "8", "9", "10", "11")
NEW_OPERATORS = [name for name, op in OPERATORS.items() if op.loop in NEW_LOOPS]
_FIXTURES: dict[str, FixtureInput] = {}


def _fixture(target: str) -> FixtureInput:
    if target not in _FIXTURES:
        path = PATHS[target]
        _FIXTURES[target] = load_fixture_file(path, path.name, TARGETS)
    return _FIXTURES[target]


def test_new_loops_have_operators_and_targets() -> None:
    """Each of Loops 7-11 contributes operators and an in-memory target of its own loop."""
    for loop in NEW_LOOPS:
        ops = [op for op in OPERATORS.values() if op.loop == loop]
        assert len(ops) >= 8, loop
        assert {TARGETS[op.target].loop for op in ops} == {loop}


@pytest.mark.parametrize("name", NEW_OPERATORS)
def test_operator_kills_with_its_code(name: str) -> None:
    """Every mutant of the operator on its loop's shipped fixture is killed by its own code."""
    op = OPERATORS[name]
    fx = _fixture(op.target)
    mutants = run_cell(
        fx,
        op,
        TARGETS[fx.target],
        seed=0,
        baseline=frozenset(),
        original=canonical(fx.data),
        timeout_s=60.0,
    )
    assert mutants, f"{name} generates nothing"
    assert [(m.description, m.status) for m in mutants if m.status is not MutantStatus.KILLED] == []
    assert all(op.expect in m.codes for m in mutants)


@pytest.mark.parametrize(
    ("name", "seed"),
    [(n, s) for n in NEW_OPERATORS if OPERATORS[n].loop != "7" for s in (3, 11)],
)
def test_seeded_choices_still_kill(name: str, seed: int) -> None:
    """Seeded picks kill under other seeds too (Loop 7 is left out: each run replays thrice)."""
    op = OPERATORS[name]
    fx = _fixture(op.target)
    mutants = run_cell(
        fx,
        op,
        TARGETS[fx.target],
        seed=seed,
        baseline=frozenset(),
        original=canonical(fx.data),
        timeout_s=60.0,
    )
    assert mutants and {m.status for m in mutants} == {MutantStatus.KILLED}


def test_loop9_breaks_each_receipt_binding_field_and_epoch() -> None:
    """Loop 9 breaks request_id, generation, snapshot_sha256 and bumps/lowers the epoch."""
    data = load_document(LOOP9).data
    touched = set()
    for name in (
        "preempt.receipt.request-id",
        "preempt.receipt.generation",
        "preempt.receipt.snapshot",
        "preempt.receipt.epoch-bump",
        "preempt.receipt.epoch-lower",
        "preempt.intent.epoch-bump",
        "preempt.intent.epoch-lower",
    ):
        for patch, _ in OPERATORS[name].generate(data, random.Random(0)):
            [op] = patch
            touched.add(str(op["path"]).rsplit("/", 1)[-1])
            mutant = apply_shared(data, patch)
            old = data
            for token in str(op["path"]).split("/")[1:]:
                old = old[int(token)] if isinstance(old, list) else old[token]
            assert op["value"] != old
            if name.endswith("epoch-bump"):
                assert op["value"] == old + 1
            if name.endswith("epoch-lower"):
                assert op["value"] == old - 1
            assert mutant != data
    assert touched == {"request_id", "generation", "snapshot_sha256", "suspension_epoch"}


def test_loop10_needs_the_fixture_directory() -> None:
    """Without the fixture's folder the runtime oracle cannot read its pins: unusable input."""
    data = load_document(LOOP10).data
    verdict = TARGETS["oracle:runtime-policy"].evaluate(data)
    assert verdict.unusable and verdict.codes == {"RUNTIME.FIXTURE.PATH"}
    assert TARGETS["oracle:runtime-policy"].evaluate(data, LOOP10.parent).codes == frozenset()


def test_bundle_offers_the_new_fixtures() -> None:
    """The bundle's valid fixtures include Loops 7-11 (never a patched negative)."""
    found = {f.name: f.target for f in valid_fixtures(load_bundle(BUNDLE, KINDS), KINDS)}
    assert {
        "loop7/slo_overload.yaml": "oracle:slo-overload",
        "loop8/fairness_starvation.yaml": "oracle:fairness-starvation",
        "loop9/preemption_resume.yaml": "oracle:preemption-resume",
        "loop10-runtime/runtime_policy_fixture.json": "oracle:runtime-policy",
        "loop11/paper_sensitivity_fixture.yaml": "results:sensitivity",
        "loop11/failure_closure.json": "results:closure",
        "registry/paper_contracts.yaml": "results:contracts",
        "registry/source_reported_results.yaml": "results:results",
    }.items() <= found.items()
    assert not any("negative" in name for name in found)


def test_worker_processes_keep_the_fixture_directory() -> None:
    """With --jobs 2 the Loop 10 and closure targets still find their files; same results."""
    fixtures = [_fixture("oracle:runtime-policy"), _fixture("results:closure")]
    ops = OPERATORS.select(["runtime.pin", "closure"])
    one = run_campaign(fixtures, ops, targets=TARGETS, seed=5)
    two = run_campaign(fixtures, ops, targets=TARGETS, seed=5, jobs=2)
    assert one.score == 100.0 and one.errors() == []
    assert [m.to_dict() for m in one.mutants] == [m.to_dict() for m in two.mutants]
