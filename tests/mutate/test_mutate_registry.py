"""The operator registry: explicit, duplicate-free, every operator applicable and catalogued."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from _mutate_paths import (
    CONTRACTS,
    LOOP2_ITER6,
    LOOP2_VALID,
    LOOP4,
    LOOP5,
    LOOP6,
    LOOP7,
    LOOP8,
    LOOP9,
    LOOP10,
    LOOP11_CLOSURE,
    LOOP11_SENSITIVITY,
    RESULTS,
)
from repo_paths import LECTURE4

from cbaudit.contract.codes import CODES
from cbaudit.contract.packing import PACK_CODES
from cbaudit.contract.preemption import CODES as PREEMPTION_CODES
from cbaudit.io import load_document
from cbaudit.kinds import TARGETS
from cbaudit.mutate import (
    ops_calc,
    ops_loop2,
    ops_loop4,
    ops_loop5,
    ops_loop6,
    ops_loop7,
    ops_loop8,
    ops_loop9,
    ops_loop10,
    ops_loop11,
    registry,
)
from cbaudit.mutate.operators import Operator, OperatorRegistry
from cbaudit.mutate.registry import OPERATORS
from cbaudit.mutate.targets import detect
from cbaudit.oracles import (
    admission,
    calculator_claims,
    chunked_prefill,
    selective_batching,
    slo_oracle,
)
from cbaudit.oracles.fairness import oracle as fairness_oracle
from cbaudit.oracles.runtime_codes import CODES as RUNTIME_CODES

LECTURE4_CLAIMS = LECTURE4 / "claims" / "checks.yaml"

#: The Loop 11 audits list their codes in their module docstrings and messages.
LOOP11_CODES = {
    "RESULTS.SENSITIVITY.COMPOUND",
    "RESULTS.SENSITIVITY.NO_CHANGE",
    "RESULTS.SENSITIVITY.AXIS_MISMATCH",
    "RESULTS.SENSITIVITY.EXPECTATION_DRIFT",
    "RESULTS.HIDDEN_TRUTH.LEAK",
    "RESULTS.SOURCE.DRIFT",
    "RESULTS.CONTRACT.FIELD_MISSING",
    "RESULTS.EVIDENCE.OVERCLAIM",
    "RESULTS.OWNER.COLLAPSE",
    "RESULTS.THEOREM.TRANSFER",
    "RESULTS.RESULT.COORDINATE_MISSING",
    "RESULTS.RANKING.UNIVERSAL",
    "RESULTS.RANKING.INCOMPARABLE",
    "RESULTS.COMPARISON_SET.WEAKENED",
    "RESULTS.CLOSURE.UNKNOWN_EVIDENCE",
    "RESULTS.CLOSURE.CLASS_SET",
    "RESULTS.CLOSURE.UNCLOSED",
}
KNOWN_CODES = (
    set(CODES)
    | set(PACK_CODES)
    | set(selective_batching.CODES)
    | set(chunked_prefill.CODES)
    | set(admission.CODES)
    | set(slo_oracle.CODES)
    | set(fairness_oracle.CODES)
    | set(PREEMPTION_CODES)
    | set(RUNTIME_CODES)
    | {"PREEMPT.PHYSICAL.LEAK"}  # raised by the Loop 9 oracle before its schema check
    | LOOP11_CODES
    | set(calculator_claims.CODES)
)
FIXTURE_OF = {
    "plan-case": LOOP2_VALID,
    "oracle:selective-batching": LOOP4,
    "oracle:admission-uncertainty": LOOP5,
    "oracle:chunked-prefill": LOOP6,
    "oracle:slo-overload": LOOP7,
    "oracle:fairness-starvation": LOOP8,
    "oracle:preemption-resume": LOOP9,
    "oracle:runtime-policy": LOOP10,
    "results:sensitivity": LOOP11_SENSITIVITY,
    "results:contracts": CONTRACTS,
    "results:results": RESULTS,
    "results:closure": LOOP11_CLOSURE,
    "calculator-claims": LECTURE4_CLAIMS,
}


def test_registry_refuses_duplicates() -> None:
    """A second operator under one name is a programming error."""
    op = OPERATORS["plan.interval.empty"]
    with pytest.raises(ValueError, match="registered twice"):
        OperatorRegistry([op, op])


def test_registry_is_exactly_the_loop_modules() -> None:
    """The registry holds every operator of every loop module, and nothing else."""
    modules = (
        ops_loop2,
        ops_loop4,
        ops_loop5,
        ops_loop6,
        ops_loop7,
        ops_loop8,
        ops_loop9,
        ops_loop10,
        ops_loop11,
        ops_calc,
    )
    assert modules == registry._LOOP_MODULES
    assert [op.name for m in modules for op in m.OPERATORS] == list(OPERATORS)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_operator_declares_a_known_code_and_target(name: str) -> None:
    """Each operator names a catalogued finding code (or a schema code) and a known target."""
    op: Operator = OPERATORS[name]
    assert op.expect in KNOWN_CODES or op.expect.startswith("SCHEMA."), op.expect
    assert op.target in TARGETS
    assert op.pointer.startswith("/") and op.changes and op.record and op.loop


@pytest.mark.parametrize("name", list(OPERATORS))
def test_operator_applies_to_its_loop_fixture(name: str) -> None:
    """Every operator yields at least one mutant on its loop's valid fixture."""
    op = OPERATORS[name]
    data = load_document(FIXTURE_OF[op.target]).data
    edits = list(op.generate(data, random.Random(0)))
    assert edits, f"{name} generates nothing on {FIXTURE_OF[op.target].name}"
    for patch, description in edits:
        assert patch and description


@pytest.mark.parametrize(
    ("path", "target"),
    [
        (LOOP2_VALID, "plan-case"),
        (LOOP2_ITER6, "plan-case"),
        (LOOP4, "oracle:selective-batching"),
        (LOOP5, "oracle:admission-uncertainty"),
        (LOOP6, "oracle:chunked-prefill"),
        (LOOP7, "oracle:slo-overload"),
        (LOOP8, "oracle:fairness-starvation"),
        (LOOP9, "oracle:preemption-resume"),
        (LOOP10, "oracle:runtime-policy"),
        (LOOP11_SENSITIVITY, "results:sensitivity"),
        (CONTRACTS, "results:contracts"),
        (RESULTS, "results:results"),
        (LOOP11_CLOSURE, "results:closure"),
    ],
)
def test_targets_recognise_their_fixtures(path: Path, target: str) -> None:
    """detect() names the target of each loop's valid fixture; its baseline is clean."""
    data = load_document(path).data
    found = detect(data, TARGETS)
    assert found is not None and found.name == target
    assert found.evaluate(data, path.parent).codes == frozenset()


def test_select_by_prefix_and_exact_name() -> None:
    """--operators accepts exact names and dotted prefixes."""
    names = [op.name for op in OPERATORS.select(["plan.ledger", "leak.hidden-truth"])]
    assert names == [
        "plan.ledger.tokens-drift",
        "plan.ledger.sequences-drift",
        "plan.ledger.token-budget-drift",
        "plan.ledger.sequence-budget-drift",
        "leak.hidden-truth",
    ]
    assert OPERATORS.select(["no-such"]) == []


def test_issue_operator_list_is_covered() -> None:
    """The operators the issue lists by name all exist."""
    wanted = {
        "plan.interval.before-frontier",
        "plan.interval.after-frontier",
        "plan.decode.two-rows",
        "plan.interval.past-prompt",
        "plan.request.duplicate",
        "plan.state-version.bump",
        "plan.state-version.lower",
        "plan.snapshot.bump",
        "plan.generation.bump",
        "plan.generation.swap",
        "state.ready.flip",
        "state.terminal.flip",
        "plan.budget.token-exceeded",
        "plan.budget.sequence-exceeded",
        "plan.ledger.tokens-drift",
        "plan.phase.forge",
        "plan.positions.forge",
        "plan.policy.version-forge",
        "plan.tie-break.forge",
        "leak.hidden-truth",
        "leak.physical-block",
        "schema.required.drop",
        "schema.type.retype",
        "result.output-clock.break",
        "result.debit.planned-service",
        "result.binding.generation",
        "chunk.order.swap",
    }
    assert wanted <= set(OPERATORS)


def test_mutate_imports_flow_down() -> None:
    """cbaudit.mutate never imports the CLI, the gate or the reporters at runtime."""
    src = Path(registry.__file__).parent
    bad: list[str] = []
    for path in src.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.startswith(("cbaudit.cli", "cbaudit.gate", "cbaudit.report", "torch")):
                    bad.append(f"{path.name}: {name}")
    assert bad == []


def test_docs_list_every_operator_and_code() -> None:
    """docs/mutate.md names every registered operator and every MUTATE.* finding code."""
    import re

    root = Path(registry.__file__).resolve().parents[2]
    text = (root / "docs" / "mutate.md").read_text(encoding="utf-8")
    assert [n for n in OPERATORS if f"`{n}`" not in text] == []
    sources = [*Path(registry.__file__).parent.glob("*.py"), root / "cbaudit/cli/cmd_mutate.py"]
    codes = {c for p in sources for c in re.findall(r'"(MUTATE\.[A-Z_.]+)"', p.read_text())}
    assert codes and [c for c in sorted(codes) if f"`{c}`" not in text] == []


def test_targets_name_the_oracles_they_load() -> None:
    """The targets name registered oracles, by the names their modules give them."""
    from cbaudit.oracles.fairness import kinds as fairness
    from cbaudit.oracles.fixture_oracle import ORACLE_LOOPS, oracles
    from cbaudit.oracles.preemption import kinds as preemption
    from cbaudit.oracles.preemption import oracle as preemption_oracle

    assert list(ORACLE_LOOPS) == list(oracles())
    assert (fairness.NAME, preemption.NAME) == (fairness_oracle.NAME, preemption_oracle.NAME)
    for name in (*ORACLE_LOOPS, fairness_oracle.NAME, preemption_oracle.NAME):
        assert f"oracle:{name}" in TARGETS


def test_a_plan_case_campaign_loads_no_other_oracle() -> None:
    """`mutate CASE` imports the contract and the kinds' declarations, not the Loop 4-11
    oracles or the simulator."""
    import subprocess
    import sys

    heavy = (
        "cbaudit.sim",
        "cbaudit.oracles.selective_batching",
        "cbaudit.oracles.admission",
        "cbaudit.oracles.chunked_prefill",
        "cbaudit.oracles.slo_oracle",
        "cbaudit.oracles.runtime_policy",
        "cbaudit.oracles.fairness.oracle",
        "cbaudit.oracles.preemption.oracle",
        "cbaudit.results.compare",
    )
    code = (
        "import sys; from cbaudit.cli.app import run;"
        f" rc = run(['mutate', {str(LOOP2_VALID)!r}, '--operators', 'plan.decision']);"
        " print(rc, 'cbaudit.kinds' in sys.modules,"
        f" sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "0 True []", proc.stdout + proc.stderr


def test_relation_help_names_every_relation() -> None:
    """`mutate --relation` help (written out, so the CLI loads no simulator) lists them all."""
    from cbaudit.cli.app import load_command
    from cbaudit.mutate.metamorphic import RELATIONS

    (param,) = [p for p in load_command("mutate").params if p.name == "relations"]
    help_text = param.help
    assert [n.strip(" .") for n in help_text.split(":", 1)[1].split(",")] == list(RELATIONS)
