"""Whose stretch declarations a replay believes (`cbaudit.policies.verified`).

The fast path asks a policy only at each stretch's last cut. A policy that declares the
stretch property and breaks it at one cut inside a stretch is not seen there, so the engine
believes the declaration only from cbaudit's own policy classes, on the sources the
differential tests ran on, with nothing rebound in the process. Anything else runs per
iteration: the same findings at the same iteration as `--per-iteration`.
"""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from cbaudit.io import compiled
from cbaudit.io.compiled import CompiledBuild
from cbaudit.policies import budget, verified
from cbaudit.policies.base import PlanBuilder, StateView
from cbaudit.policies.registry import POLICIES
from cbaudit.policies.vllm_v1 import VllmV1Policy
from cbaudit.sim import stretch as stretch_module
from cbaudit.sim.engine import Engine
from tests.sim.test_stretch import _canonical, _cost, _mutate, _run, _workload

REPO = Path(__file__).resolve().parents[2]
CLAIMANTS = ["vllm-v1", "sarathi-serve", "static", "orca"]


def _spans(wl: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(first iteration, length) of each stretch vllm-v1 takes on `wl` (roofline)."""
    spans: list[tuple[int, int]] = []
    real = stretch_module._apply

    def apply(engine: Engine, k: int, *rest: Any) -> None:
        spans.append((engine.iteration + 1, k))
        real(engine, k, *rest)

    with monkeypatch.context() as m:
        m.setattr(stretch_module, "_apply", apply)
        _run(wl, VllmV1Policy({}), _cost("roofline"), stretches=True)
    return spans


class _Once(VllmV1Policy):
    """vllm-v1, unchanged but at one cut, `at`, where it drops its last row and says nothing:
    a transient defect, as a bug injected into a policy often is."""

    def __init__(self, at: int) -> None:
        super().__init__({})
        self.at = at

    def choose(self, view: StateView, plan: PlanBuilder) -> None:
        super().choose(view, plan)
        if view.iteration == self.at and plan.items:
            _mutate("skip", view, plan)


def _findings(engine: Engine) -> list[tuple[str, int, str]]:
    return [(f.code, f.iteration, f.message) for f in engine.findings]


@pytest.mark.parametrize("policy_id", CLAIMANTS)
def test_cbaudits_own_policies_are_believed(policy_id: str) -> None:
    """The four built-in policies that declare the property: believed, and a replay takes
    stretches with them (no note)."""
    policy = POLICIES.create(policy_id, {})
    assert verified.stretch_claim_refusal(policy) is None
    taken = 0
    for seed in range(6):
        engine = _run(
            _workload(seed, "ms"), POLICIES.create(policy_id, {}), _cost("roofline"), stretches=True
        )
        assert engine.stretch_claim_refused is None and engine.report().notes == []
        taken += engine.stretch_iterations
    assert taken > 0


@pytest.mark.instruments
def test_a_transient_defect_inside_a_stretch_is_found_at_its_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A subclass that misbehaves at one cut strictly inside a stretch: the replay does not
    believe its inherited declaration, runs per iteration, and stops at that cut with the
    per-iteration path's findings. Taken on its word (`trust_stretch_claim`), the fast path
    would have missed the cut: that is what the rule is for."""
    found = missed = 0
    for seed in range(12):
        wl = _workload(seed, "ms")
        cuts = [first + (k - 1) // 2 for first, k in _spans(wl, monkeypatch) if k >= 3][:3]
        for at in cuts:
            slow = _run(wl, _Once(at), _cost("roofline"), stretches=False)
            fast = _run(wl, _Once(at), _cost("roofline"), stretches=True)
            assert fast.stretch_iterations == 0
            assert "is not one of cbaudit's own policy classes" in (
                fast.stretch_claim_refused or ""
            )
            assert _findings(fast) == _findings(slow), (seed, at)
            assert _canonical(fast.report()) == _canonical(slow.report()), (seed, at)
            if not slow.findings:
                continue
            assert slow.findings[0].iteration == at, (seed, at)
            found += 1
            trusted = _run(
                wl, _Once(at), _cost("roofline"), stretches=True, trust_stretch_claim=True
            )
            missed += _findings(trusted) != _findings(slow)
    assert found > 5 and missed > 5, (found, missed)


@pytest.mark.instruments
def test_a_subclass_without_changes_is_not_believed_and_the_replay_says_why() -> None:
    class Same(VllmV1Policy):
        pass

    wl = _workload(0, "ms")
    fast = _run(wl, Same({}), _cost("roofline"), stretches=True)
    slow = _run(wl, Same({}), _cost("roofline"), stretches=False)
    assert fast.stretch_iterations == 0
    assert _canonical(fast.report()) == _canonical(slow.report())
    (note,) = fast.report().notes
    assert note.startswith("every iteration ran through the policy and the checks")
    assert "Same is not one of cbaudit's own policy classes" in note
    # no note where nothing was asked: the per-iteration path by request
    assert slow.report().notes == []


@pytest.mark.instruments
def test_a_function_on_the_instance_is_not_believed() -> None:
    policy = VllmV1Policy({})
    real = policy.choose
    policy.choose = lambda view, plan: real(view, plan)  # type: ignore[method-assign]
    assert verified.stretch_claim_refusal(policy) == (
        "the policy instance holds a function of its own (choose)"
    )


@pytest.mark.parametrize(
    ("owner", "name", "says"),
    [
        (VllmV1Policy, "_running_pass", "VllmV1Policy._running_pass is rebound to a function"),
        (PlanBuilder, "take_block", "PlanBuilder.take_block is rebound to a function"),
        (budget, "blocks_held", "cbaudit.policies.budget.blocks_held is rebound to a function"),
    ],
)
def test_a_function_rebound_in_the_process_is_not_believed(
    owner: Any, name: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A method of a policy class or of the plan builder, or a function of a policy module,
    replaced by one defined elsewhere (here, this test): not believed, and the reason names
    the function and where its replacement comes from."""
    real = getattr(owner, name)

    def wrapper(*args: Any, **kw: Any) -> Any:
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, wrapper)
    why = verified.stretch_claim_refusal(VllmV1Policy({}))
    assert why is not None and why.startswith(says), why
    assert why.endswith(f"defined in {__file__}"), why
    monkeypatch.undo()
    assert verified.stretch_claim_refusal(VllmV1Policy({})) is None


def test_a_mock_in_a_policy_module_is_not_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "blocks_held", mock.MagicMock(side_effect=budget.blocks_held))
    assert verified.stretch_claim_refusal(VllmV1Policy({})) == (
        "cbaudit.policies.budget.blocks_held is rebound to a MagicMock"
    )


def test_a_changed_source_is_not_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded policy module whose bytes are not the recorded ones (here the record is made
    to differ): not believed, and the reason names the file."""
    record = dict(verified._record())
    record["vllm_v1.py"] = "sha256:" + "0" * 64
    monkeypatch.setattr(verified, "_record", lambda: record)
    why = verified.stretch_claim_refusal(VllmV1Policy({}))
    assert why is not None and why.startswith("cbaudit/policies: vllm_v1.py differs"), why
    del record["vllm_v1.py"]  # a module with no record counts as changed too
    why = verified.stretch_claim_refusal(VllmV1Policy({}))
    assert why is not None and "vllm_v1.py differs" in why, why


def test_a_compiled_module_counts_only_as_the_build_record_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A policy module loaded from a compiled extension (the wheel's, hatch_build.py) runs the
    code it was compiled from, not the `.py` beside it: it is believed only when the wheel's
    build record gives that source the recorded digest. Here a module of the package claims
    to come from an extension beside vllm_v1.py."""
    fake = types.ModuleType("cbaudit.policies._compiled_stand_in")
    fake.__file__ = str(verified.HERE / ("vllm_v1" + importlib.machinery.EXTENSION_SUFFIXES[0]))
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    real = compiled.compiled_build()  # (the compiled build's own record, under its tests)
    built = {k: v for k, v in (real.modules if real else {}).items() if "vllm_v1.py" not in k}
    monkeypatch.setattr(compiled, "compiled_build", lambda: CompiledBuild("mypyc", built))
    why = verified.stretch_claim_refusal(VllmV1Policy({}))  # the record does not name it
    assert why is not None and "vllm_v1.py (compiled from other sources) differs" in why, why
    built["cbaudit/policies/vllm_v1.py"] = "sha256:" + "0" * 64  # compiled from other bytes
    why = verified.stretch_claim_refusal(VllmV1Policy({}))
    assert why is not None and "vllm_v1.py (compiled from other sources)" in why, why
    built["cbaudit/policies/vllm_v1.py"] = verified.digest(
        (verified.HERE / "vllm_v1.py").read_bytes()
    )
    assert verified.stretch_claim_refusal(VllmV1Policy({})) is None


def test_the_record_is_the_sources() -> None:
    """`verified_sources.json` records every module of cbaudit/policies as it is: after
    editing a policy, `make verify-policies` runs the differential tests and records them."""
    record = verified._record()
    now = verified.current_sources()
    stale = sorted(n for n in set(now) | set(record) if now.get(n) != record.get(n))
    assert not stale, f"{stale}: run `make verify-policies` (differential tests, then record)"


def test_line_endings_do_not_change_a_digest() -> None:
    """A checkout with CRLF line endings (git's autocrlf) holds the same code, so the same
    digest; any other byte changes it."""
    source = (verified.HERE / "vllm_v1.py").read_bytes()
    assert b"\r" not in source
    assert verified.digest(source.replace(b"\n", b"\r\n")) == verified.digest(source)
    assert verified.digest(source + b" ") != verified.digest(source)


def _checker(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cbaudit.policies.verified", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def test_the_checker_command(tmp_path: Path) -> None:
    """`python -m cbaudit.policies.verified`: 0 when the sources match, 1 naming the ones
    that differ, 2 on a bad argument."""
    ok = _checker(REPO)
    assert ok.returncode == 0 and "sources match verified_sources.json" in ok.stdout, ok
    bad = _checker(REPO, "--check")
    assert bad.returncode == 2 and "usage:" in bad.stderr, bad
    copy = _package_copy(tmp_path)
    target = copy / "cbaudit" / "policies" / "static.py"
    target.write_text(target.read_text() + "\n# edited\n")
    differ = _checker(copy)
    assert differ.returncode == 1 and "static.py" in differ.stdout, differ


def _package_copy(tmp_path: Path) -> Path:
    """A copy of the package beside the repository's schemas and registry (as a checkout)."""
    root = tmp_path / "checkout"
    shutil.copytree(
        REPO / "cbaudit", root / "cbaudit", ignore=shutil.ignore_patterns("__pycache__")
    )
    for data in ("schemas", "registry"):
        (root / data).symlink_to(REPO / data, target_is_directory=True)
    return root


def _replay(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable, "-m", "cbaudit", "replay", "run",
            str(REPO / "tests" / "sim" / "data" / "azure_small.csv"),
            "-p", "vllm-v1", "--cost-model", "roofline",
            "--cost-option", "hardware=nvidia-h100-sxm",
            "--cost-option", "model=llama-3-8b-gqa-fp16",
            "-q", "-f", "json", *extra,
        ],
        capture_output=True, text=True, cwd=root, check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(root),
            "PYTHONDONTWRITEBYTECODE": "1",
            # (`make verify-policies` runs these tests against a candidate record)
            **{k: v for k, v in os.environ.items() if k == verified.RECORD_ENV},
        },
    )  # fmt: skip


def test_a_bug_injected_into_the_policy_source_is_found_by_the_default_replay(
    tmp_path: Path,
) -> None:
    """The end-to-end case: vllm_v1.py edited so that its plan widens a row at iteration 20 only
    (inside the replay's first stretch, iterations 2-44, of this trace). The default replay sees
    that the source is not the verified one, says so, runs per iteration and stops at 20 with
    the per-iteration path's report; the unedited copy takes stretches, without a note."""
    root = _package_copy(tmp_path)
    clean = _replay(root)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr
    source = root / "cbaudit" / "policies" / "vllm_v1.py"
    text = source.read_text()
    anchor = "        self._waiting_pass(view, plan, len(running), waiting)\n"
    assert text.count(anchor) == 1 and "    def choose(" in text
    text = text.replace(
        "    def choose(self, view: StateView, plan: PlanBuilder) -> None:\n",
        "    def choose(self, view: StateView, plan: PlanBuilder) -> None:\n"
        "        self._choose(view, plan)\n"
        "        if view.iteration == 20 and plan.items:\n"
        "            plan.items[-1].end += 1\n\n"
        "    def _choose(self, view: StateView, plan: PlanBuilder) -> None:\n",
        1,
    )
    source.write_text(text)
    fast = _replay(root)
    slow = _replay(root, "--per-iteration")
    assert fast.returncode == slow.returncode != 0, (fast.stderr, slow.stderr)
    assert fast.stdout == slow.stdout
    assert (
        '"code": "PLAN.DECODE.MULTI_ROW"' in fast.stdout and '"/iterations/20/plan"' in fast.stdout
    )
    assert fast.stderr == (
        "cbaudit: note: every iteration ran through the policy and the checks (no stretches):"
        " cbaudit/policies: vllm_v1.py differs from the recorded sources on which the stretch"
        " property was verified (verified_sources.json, make verify-policies)\n"
    ), fast.stderr
    assert slow.stderr == ""
