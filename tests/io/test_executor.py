"""The executor seam under `replay sweep`, `mutate` and `gate`, without a cluster.

`Elsewhere` stands in for a cluster executor: every unit runs after a pickle round trip (as a
task's arguments travel), while the submitter's input folder is moved away (so a unit can use
only the content it carries), and the units it is told to lose become their error results.
"""

from __future__ import annotations

import pickle
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from repo_paths import M52

from cbaudit.gate.runner import run_gate
from cbaudit.io.executor import LocalExecutor, make_executor
from cbaudit.io.shipping import pack, relocated
from cbaudit.kinds import TARGETS
from cbaudit.model import InputError, UsageError
from cbaudit.mutate.bundle import valid_fixtures
from cbaudit.mutate.campaign import MutantStatus, run_campaign
from cbaudit.mutate.registry import OPERATORS
from cbaudit.sim import sweep


@contextmanager
def _moved(folder: Path | None) -> Iterator[None]:
    if folder is None:
        yield
        return
    away = folder.with_name(folder.name + ".away")
    folder.rename(away)
    try:
        yield
    finally:
        away.rename(folder)


class Elsewhere:
    """A stand-in cluster executor (see the module docstring)."""

    remote = True

    def __init__(self, hide: Path | None = None, lose: Sequence[int] = ()) -> None:
        self.hide, self.lose = hide, set(lose)
        self.ran = 0

    def map(
        self,
        fn: Callable[[Any, Any], Any],
        shared: Any,
        units: Sequence[Any],
        *,
        failed: Callable[[Any, str], Any],
        done: Callable[[int, int, Any], None] | None = None,
    ) -> list[Any]:
        out = []
        with _moved(self.hide):
            there = pickle.loads(pickle.dumps(shared))
            for i, unit in enumerate(units):
                if i in self.lose:
                    out.append(failed(unit, "the unit failed twice on the cluster (test)"))
                else:
                    out.append(fn(there, pickle.loads(pickle.dumps(unit))))
                    self.ran += 1
                if done is not None:
                    done(i + 1, i, out[-1])
        return out

    def provenance(self) -> dict[str, Any]:
        return {"kind": "test", "hosts": ["elsewhere"], "workers": 1}

    def close(self) -> None:
        return None


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A copy of the M5.2 bundle that the stand-in cluster can move away."""
    copy = tmp_path / "m52"
    shutil.copytree(M52, copy)
    return copy


def _without_executor(report: Any) -> dict[str, Any]:
    data: dict[str, Any] = report.to_dict()
    data.pop("executor", None)
    return data


def test_local_executor_keeps_unit_order() -> None:
    """Results come back in unit order from 2 processes, whatever order they finished in."""
    heard: list[int] = []
    out = LocalExecutor(2).map(
        _slow_square, 0.0, [3, 1, 2, 0], failed=_never, done=lambda n, i, r: heard.append(i)
    )
    assert out == [9, 1, 4, 0]
    assert sorted(heard) == [0, 1, 2, 3]


def _slow_square(_shared: float, x: int) -> int:
    import time

    time.sleep(0.05 * x)
    return x * x


def _never(_unit: Any, why: str) -> Any:
    raise AssertionError(why)


def test_gate_checks_carry_their_read_root(bundle: Path) -> None:
    """With the bundle moved away while the checks run, the shipped checks give the local
    report byte for byte; only the executor field is added."""
    local = run_gate([bundle], select="loop10", jobs=1)
    away = Elsewhere(hide=bundle)
    remote = run_gate([bundle], select="loop10", jobs=2, executor=away)
    assert away.ran > 1
    assert local.exit_code == 0 and len(local.results) > 20
    assert _without_executor(remote) == _without_executor(local)
    assert remote.to_dict()["executor"] == away.provenance()
    assert "executor" not in local.to_dict()


def test_a_lost_gate_unit_is_an_error_result(bundle: Path) -> None:
    """A unit the cluster could not run is GATE.CHECK.LOST for each of its checks (exit 2)."""
    report = run_gate([bundle], select="loop10", jobs=2, executor=Elsewhere(lose=[0]))
    lost = [r for r in report.results if any(f.code == "GATE.CHECK.LOST" for f in r.findings)]
    assert lost and all(r.outcome.value == "error" for r in lost)
    assert int(report.exit_code) == 2
    claims = report.summary["claims"]
    assert len(claims) == len(run_gate([bundle], select="loop10", jobs=1).summary["claims"])


def test_gate_update_is_refused_on_a_cluster(bundle: Path) -> None:
    with pytest.raises(UsageError, match="--executor local"):
        run_gate([bundle], select="loop10", update=True, executor=Elsewhere())


def _trace_generator(folder: Path) -> Path:
    (folder / "lengths.csv").write_text(
        "prompt,output\n" + "".join(f"{3 + i % 7},{1 + i % 4}\n" for i in range(50))
    )
    spec = folder / "gen.yaml"
    spec.write_text(
        "schema_version: 1\nkind: workload-generator\nworkload_id: t\nseed: 5\ncount: 60\n"
        "clock: {unit: tick, tick_ms: 10}\narrivals: {process: poisson, rate_per_tick: 1.0}\n"
        "prompt_tokens: {dist: trace, path: lengths.csv, column: prompt}\n"
        "output_tokens: {dist: trace, path: lengths.csv, column: output}\n"
        "max_output_tokens: {cap: 8}\nslo: {ttft_ms: 60, tbt_ms: 40}\n"
        "policy: {policy_id: least-slack, policy_version: '1'}\n"
        "budgets: {token_budget: 8, sequence_budget: 4}\n"
    )
    return spec


def _sweep_config(spec: Path, **kw: Any) -> sweep.SweepConfig:
    import yaml

    data = yaml.safe_load(spec.read_text())
    return sweep.SweepConfig(
        spec=data, spec_file=str(spec), base_dir=str(spec.parent), policy="least-slack", **kw
    )


def test_sweep_cells_carry_the_files_the_spec_names(tmp_path: Path) -> None:
    """The trace the spec samples lengths from travels with the cells: the same sweep with the
    folder moved away gives the same JSON."""
    folder = tmp_path / "spec"
    folder.mkdir()
    spec = _trace_generator(folder)
    local = sweep.run_sweep(_sweep_config(spec), [0.4, 1.2], repeats=2, attainment=0.9)
    files = sweep.referenced_files(_sweep_config(spec).spec, folder)
    assert files == [folder / "lengths.csv", folder / "lengths.csv"]
    shipped = _sweep_config(spec, shipment=pack((), files))
    away = Elsewhere(hide=folder)
    remote = sweep.run_sweep(shipped, [0.4, 1.2], repeats=2, attainment=0.9, executor=away)
    assert away.ran == 4
    assert remote == local
    # without the shipment the moved-away trace is missing: a located error, never a pass
    with pytest.raises(InputError):
        sweep.run_sweep(
            _sweep_config(spec), [0.4], repeats=1, attainment=0.9, executor=Elsewhere(folder)
        )


def test_a_lost_sweep_cell_is_an_error(tmp_path: Path) -> None:
    spec = _trace_generator(tmp_path)
    with pytest.raises(InputError) as err:
        sweep.run_sweep(
            _sweep_config(spec), [0.4, 1.2], repeats=1, attainment=0.9, executor=Elsewhere(lose=[1])
        )
    assert [f.code for f in err.value.findings] == ["SWEEP.CELL.FAILED"]
    assert "rate 1.2, repeat 0" in err.value.findings[0].message


def test_campaign_cells_carry_fixtures_and_files(bundle: Path) -> None:
    """Mutants judged with the bundle moved away equal the local ones; a lost chunk is an
    oracle_error of each of its cells, never dropped."""
    from cbaudit.checks.bundle import load_bundle
    from cbaudit.kinds import KINDS

    fixtures = [f for f in valid_fixtures(load_bundle(bundle, KINDS), KINDS) if "loop10" in f.name]
    assert fixtures
    ops = OPERATORS.select(["runtime"])
    local = run_campaign(fixtures, ops, targets=TARGETS, limit=1)
    away = Elsewhere(hide=bundle)
    remote = run_campaign(fixtures, ops, targets=TARGETS, limit=1, executor=away, ship=[bundle])
    assert away.ran > 1 and len(local.mutants) > 10
    assert remote == local
    lost = run_campaign(fixtures, ops, targets=TARGETS, limit=1, executor=Elsewhere(lose=[0]))
    errors = lost.errors()
    assert errors and all("failed twice" in m.detail for m in errors)
    assert {m.status for m in lost.mutants} >= {MutantStatus.ORACLE_ERROR, MutantStatus.KILLED}


def test_relocation_restores_paths(tmp_path: Path) -> None:
    """A unit sees the shipped bytes under its own folder; its result names the submitter's
    paths."""
    (tmp_path / "a.txt").write_text("hello")
    shipment = pack([tmp_path])
    with relocated(shipment) as where:
        moved = where.rebase(tmp_path / "a.txt")
        assert moved != tmp_path / "a.txt" and moved.read_text() == "hello"
        assert where.restore({"file": str(moved), "p": (moved,)}) == {
            "file": str(tmp_path / "a.txt"),
            "p": (tmp_path / "a.txt",),
        }


def test_worker_package_paths_map_to_the_submitters(tmp_path: Path) -> None:
    """cbaudit's own data lies elsewhere on a worker (a wheel keeps the registry inside the
    package): each worker path maps to the submitter's, the longest match first."""
    worker = [("/w/cbaudit", "/s/cbaudit"), ("/w/cbaudit/_registry", "/s/registry")]
    with relocated(pack([tmp_path]), worker) as where:
        assert where.restore_text("/w/cbaudit/_registry/m.yaml") == "/s/registry/m.yaml"
        assert where.restore_text("/w/cbaudit/profiles/h.yaml") == "/s/cbaudit/profiles/h.yaml"


def test_executor_options_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """--ray-address without --executor ray, and --executor ray without Ray: exit 2 with the
    extra named."""
    with pytest.raises(UsageError, match="--executor ray"):
        make_executor("local", 1, "127.0.0.1:1")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(UsageError, match=r"pip install 'cbaudit\[ray\]'"):
        make_executor("ray", 1, None)


def test_cli_without_ray_exits_2(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    for args in (
        ["gate", M52, "--executor", "ray"],
        ["mutate", M52, "--executor", "ray"],
        [
            "replay",
            "sweep",
            M52 / "loop7" / "sweep.generator.yaml",
            "--policy",
            "fcfs",
            "--rates",
            "0.5:1:2",
            "--executor",
            "ray",
        ],
    ):
        run = cli(*args)
        assert run.code == 2, (args, run.err)
        assert "pip install 'cbaudit[ray]'" in run.err


def test_folders_of_dead_workers_are_removed(tmp_path: Path) -> None:
    """A worker killed before it cleaned up leaves a folder named with its pid; the next
    unpack on that machine removes it, and keeps a live process's folder."""
    import subprocess
    import tempfile

    from cbaudit.io import shipping

    probe = subprocess.Popen(["true"])
    probe.wait()
    gone = Path(tempfile.gettempdir()) / f"cbaudit-shipped-{probe.pid}-test"
    alive = Path(tempfile.gettempdir()) / "cbaudit-shipped-1-test"  # pid 1 never dies
    for folder in (gone, alive):
        folder.mkdir(exist_ok=True)
    try:
        (tmp_path / "f").write_text("x")
        monkey = dict(shipping._UNPACKED)
        shipping._UNPACKED.clear()  # a fresh worker process
        try:
            shutil.rmtree(shipping.unpack(pack([tmp_path])))
        finally:
            shipping._UNPACKED.update(monkey)
        assert not gone.exists() and alive.exists()
    finally:
        shutil.rmtree(alive, ignore_errors=True)
        shutil.rmtree(gone, ignore_errors=True)


def test_checks_naming_inputs_of_this_machine_run_here(bundle: Path) -> None:
    """A check whose spec names an input through the environment (`${VAR}`, a file of the
    submitting machine) is not sent to the cluster: with every cluster unit lost, those checks
    still give their local results."""
    everything = Elsewhere(lose=range(1000))
    report = run_gate([bundle], select="pins", jobs=1, executor=everything)
    local = run_gate([bundle], select="pins", jobs=1)
    lost = {
        r.subject for r in report.results if r.findings and r.findings[0].code == "GATE.CHECK.LOST"
    }
    here = [r for r in report.results if r.subject not in lost]
    assert {r.subject.split(":")[1] for r in here} == {"pins.vllm-v0.23.0", "pins.formula-registry"}
    assert not lost and everything.ran == 0
    local_here = [r.to_dict() for r in local.results if r.subject in {x.subject for x in here}]
    assert [r.to_dict() for r in here] == local_here
