"""Workload generator specs: seeded, deterministic, schema'd, with located spec errors."""

from __future__ import annotations

import copy
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from cbaudit.contract.records import WorkloadManifest
from cbaudit.model import InputError
from cbaudit.report.json_report import dumps_canonical
from cbaudit.sim.workload_gen import (
    SpecSource,
    generate,
    generate_json,
    load_workload,
    load_workload_json,
)

DATA = Path(__file__).resolve().parent / "data"


def _spec(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 1,
        "kind": "workload-generator",
        "workload_id": "t",
        "seed": 5,
        "count": 50,
        "clock": {"unit": "ms"},
        "arrivals": {"process": "poisson", "rate_per_s": 10},
        "prompt_tokens": {"dist": "uniform", "lo": 16, "hi": 64},
        "output_tokens": {"dist": "geometric", "mean": 20},
        "max_output_tokens": {"cap": 40},
        "policy": {"policy_id": "fcfs", "policy_version": "1"},
        "budgets": {"token_budget": 256, "sequence_budget": 8},
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _code(spec: dict[str, Any], seed: int | None = None) -> str:
    with pytest.raises(InputError) as exc:
        generate(spec, seed)
    return exc.value.findings[0].code


def test_same_spec_and_seed_give_byte_identical_json() -> None:
    """Generation is deterministic: two runs give the same canonical JSON bytes."""
    spec = yaml.safe_load((DATA / "gen_poisson_mix.yaml").read_text())
    a = dumps_canonical(generate_json(spec))
    b = dumps_canonical(generate_json(copy.deepcopy(spec)))
    assert a == b
    assert dumps_canonical(generate_json(spec, seed=12)) != a


def test_generated_manifest_is_the_contract_record_and_validates() -> None:
    """load_workload on a generator spec returns the contract's WorkloadManifest."""
    m = load_workload(DATA / "gen_poisson_mix.yaml")
    assert isinstance(m, WorkloadManifest)
    assert len(m.requests) == 400
    assert m.policy.tie_break.key[0] == "phase_rank"
    assert m.hidden_truth is not None and len(m.hidden_truth) == 400
    online = m.online_projection()
    assert online.hidden_truth is None and "fixture_only_hidden_truth" not in online.to_json()


def test_client_mix_priorities_slos_and_length_overrides() -> None:
    """Clients are drawn by weight and carry their priority, SLO and prompt override."""
    m = load_workload(DATA / "gen_poisson_mix.yaml")
    long = [r for r in m.requests if r.client == "long"]
    short = [r for r in m.requests if r.client == "short"]
    assert len(long) + len(short) == 400
    assert 0.2 < len(long) / 400 < 0.4  # weight 3 of 10, seeded draw
    assert {r.prompt_tokens for r in long} == {8192}
    assert {r.prompt_tokens for r in short} == {512}
    assert {r.priority for r in long} == {1} and {r.priority for r in short} == {0}
    assert all(r.slo is not None and r.slo.ttft_ms == 2000 for r in short)
    assert all(r.slo is None for r in long)


def test_cap_declares_max_output_and_clips_hidden_truth() -> None:
    """max_output_tokens is the declared cap; realized lengths never exceed it."""
    data = generate_json(_spec(count=300))
    realized = data["fixture_only_hidden_truth"]["realized_output_tokens"]
    assert {r["max_output_tokens"] for r in data["requests"]} == {40}
    assert max(realized.values()) == 40 and min(realized.values()) >= 1


def test_equal_to_realized_declares_the_realized_length() -> None:
    """`equal_to_realized` makes max_output_tokens the hidden length, and says so."""
    data = generate_json(_spec(max_output_tokens={"equal_to_realized": True}))
    realized = data["fixture_only_hidden_truth"]["realized_output_tokens"]
    assert all(r["max_output_tokens"] == realized[r["request_id"]] for r in data["requests"])
    assert "oracle-style cap" in data["description"]


def test_all_at_zero_and_fixed_interval_arrivals_are_exact() -> None:
    """all_at_zero puts every arrival at start; fixed_interval spaces them exactly."""
    zero = generate_json(_spec(count=4, arrivals={"process": "all_at_zero"}))
    assert [r["arrival"] for r in zero["requests"]] == [0, 0, 0, 0]
    fixed = generate_json(
        _spec(count=4, arrivals={"process": "fixed_interval", "interval": 2.5, "start": 1})
    )
    assert [r["arrival"] for r in fixed["requests"]] == [1, 3.5, 6, 8.5]
    assert [r["arrival_order"] for r in fixed["requests"]] == [0, 1, 2, 3]


def test_duration_bounds_arrivals_instead_of_count() -> None:
    """With `duration`, arrivals fill [start, start + duration) and stop there."""
    data = generate_json(
        _spec(count=None, duration=10, arrivals={"process": "fixed_interval", "interval": 3})
    )
    assert [r["arrival"] for r in data["requests"]] == [0, 3, 6, 9]
    poisson = generate_json(_spec(count=None, duration=60_000))  # 60 s at 10/s
    arrivals = [r["arrival"] for r in poisson["requests"]]
    assert arrivals == sorted(arrivals) and arrivals[-1] < 60_000
    assert 500 < len(arrivals) < 700


def test_poisson_and_gamma_gaps_match_rate_and_burstiness() -> None:
    """Seeded Poisson gaps have mean 1/rate, CV near 1; gamma gaps have the declared CV."""

    def gaps(arrivals: dict[str, Any]) -> list[float]:
        data = generate_json(
            _spec(count=4000, arrivals={**arrivals, "decimals": 6}, clock={"unit": "tick"})
        )
        times = [0.0] + [float(r["arrival"]) for r in data["requests"]]
        return [b - a for a, b in itertools.pairwise(times)]

    p = gaps({"process": "poisson", "rate_per_tick": 0.5})
    assert statistics.fmean(p) == pytest.approx(2.0, rel=0.05)
    assert statistics.pstdev(p) / statistics.fmean(p) == pytest.approx(1.0, rel=0.06)
    g = gaps({"process": "gamma", "rate_per_tick": 0.5, "cv": 3.0})
    assert statistics.fmean(g) == pytest.approx(2.0, rel=0.15)
    assert statistics.pstdev(g) / statistics.fmean(g) == pytest.approx(3.0, rel=0.15)


def test_length_distributions_respect_their_declarations(tmp_path: Path) -> None:
    """fixed, uniform, geometric, lognormal (clamped) and trace-resampled lengths."""

    def prompts(dist: dict[str, Any], n: int = 2000) -> list[int]:
        src = SpecSource(base_dir=DATA)
        data = generate_json(_spec(count=n, prompt_tokens=dist), source=src)
        return [r["prompt_tokens"] for r in data["requests"]]

    assert set(prompts({"dist": "fixed", "value": 7}, 20)) == {7}
    u = prompts({"dist": "uniform", "lo": 3, "hi": 5})
    assert set(u) == {3, 4, 5}
    g = prompts({"dist": "geometric", "mean": 8})
    assert min(g) == 1 and statistics.fmean(g) == pytest.approx(8, rel=0.08)
    ln = prompts({"dist": "lognormal", "median": 100, "sigma": 1.5, "min": 10, "max": 400})
    assert min(ln) == 10 and max(ln) == 400
    assert statistics.median(ln) == pytest.approx(100, rel=0.15)
    tr = prompts({"dist": "trace", "path": "azure_small.csv", "column": "ContextTokens"}, 200)
    assert set(tr) == {374, 396, 879, 2}


def test_changing_output_recipe_leaves_arrivals_and_prompts_unchanged() -> None:
    """Each purpose has its own seeded stream: only the output lengths move."""
    a = generate_json(_spec())
    b = generate_json(_spec(output_tokens={"dist": "fixed", "value": 3}))
    strip = (
        [(r["arrival"], r["prompt_tokens"]) for r in a["requests"]],
        [(r["arrival"], r["prompt_tokens"]) for r in b["requests"]],
    )
    assert strip[0] == strip[1]
    assert set(b["fixture_only_hidden_truth"]["realized_output_tokens"].values()) == {3}


def test_trace_backed_generator_uses_rows_clients_and_declared_policy() -> None:
    """A generator spec with `trace` imports rows, draws clients, keeps policy and budgets."""
    m = load_workload(DATA / "gen_trace_wrap.yaml")
    assert [r.request_id for r in m.requests] == [f"azure-00000{i}" for i in range(4)]
    assert [r.max_output_tokens for r in m.requests] == [100] * 4
    assert m.hidden_truth is not None and m.hidden_truth["azure-000002"] == 100  # 143 clipped
    assert {r.client for r in m.requests} <= {"a", "b"}
    assert (m.policy.policy_version, m.budgets.token_budget) == ("2", 4096)


def test_explicit_manifest_loads_as_is() -> None:
    """A manifest file is validated and returned unchanged (hidden truth kept apart)."""
    m = load_workload(DATA / "manifest_small.json")
    data = json.loads((DATA / "manifest_small.json").read_text())
    assert [r.request_id for r in m.requests] == ["req-A", "req-B", "req-C"]
    assert m.hidden_truth == data["fixture_only_hidden_truth"]["realized_output_tokens"]
    assert load_workload_json(DATA / "manifest_small.json") == data


def test_seed_argument_overrides_spec_seed() -> None:
    """generate(spec, seed) uses the argument, not the spec's seed."""
    spec = _spec()
    assert generate_json(spec, 99) == generate_json(_spec(seed=99))
    assert generate_json(spec, 99) != generate_json(spec)


def test_missing_seed_is_refused() -> None:
    """Without a seed anywhere, generation refuses rather than use hidden randomness."""
    assert _code(_spec(seed=None)) == "GEN.SPEC.NO_SEED"


def test_count_and_duration_are_exclusive() -> None:
    """Exactly one of count and duration: both or neither is GEN.SPEC.SIZE."""
    assert _code(_spec(duration=5)) == "GEN.SPEC.SIZE"
    assert _code(_spec(count=None)) == "GEN.SPEC.SIZE"


def test_rate_unit_must_match_the_clock() -> None:
    """An ms clock takes rate_per_s, a tick clock rate_per_tick (GEN.ARRIVAL.RATE_UNIT)."""
    assert _code(_spec(arrivals={"process": "poisson", "rate_per_tick": 1})) == (
        "GEN.ARRIVAL.RATE_UNIT"
    )
    assert _code(_spec(clock={"unit": "tick"})) == "GEN.ARRIVAL.RATE_UNIT"


def test_all_at_zero_needs_a_count() -> None:
    """all_at_zero with a duration never ends: GEN.ARRIVAL.UNBOUNDED."""
    spec = _spec(count=None, duration=10, arrivals={"process": "all_at_zero"})
    assert _code(spec) == "GEN.ARRIVAL.UNBOUNDED"


def test_inverted_length_ranges_are_refused() -> None:
    """uniform lo > hi and lognormal min > max are GEN.LENGTH.RANGE."""
    assert _code(_spec(prompt_tokens={"dist": "uniform", "lo": 9, "hi": 3})) == "GEN.LENGTH.RANGE"
    ln = {"dist": "lognormal", "median": 10, "sigma": 1, "min": 50, "max": 20}
    assert _code(_spec(output_tokens=ln)) == "GEN.LENGTH.RANGE"


def test_trace_conflicts_and_clock() -> None:
    """`trace` excludes generated arrivals and lengths, and needs an ms clock."""
    trace = {"path": str(DATA / "azure_small.csv")}
    assert _code(_spec(trace=trace)) == "GEN.SPEC.CONFLICT"
    bare = _spec(trace=trace, count=None, arrivals=None, prompt_tokens=None, output_tokens=None)
    assert _code({**bare, "clock": {"unit": "tick"}}) == "GEN.TRACE.CLOCK"
    override = {
        **bare,
        "clients": [{"client": "x", "weight": 1, "output_tokens": {"dist": "fixed", "value": 2}}],
    }
    assert _code(override) == "GEN.SPEC.CONFLICT"


def test_generator_without_trace_needs_its_recipe() -> None:
    """Without `trace`, arrivals and both length recipes are required (GEN.SPEC.MISSING)."""
    assert _code(_spec(arrivals=None)) == "GEN.SPEC.MISSING"


def test_duplicate_client_names_are_refused() -> None:
    """Two clients with one name is GEN.CLIENT.DUPLICATE."""
    clients = [{"client": "x", "weight": 1}, {"client": "x", "weight": 2}]
    assert _code(_spec(clients=clients)) == "GEN.CLIENT.DUPLICATE"


def test_schema_errors_are_located_in_the_spec_file(tmp_path: Path) -> None:
    """A malformed spec file yields SCHEMA.* findings pointing into that file."""
    spec = _spec(prompt_tokens={"dist": "zipf", "s": 1.1})
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as exc:
        load_workload(path)
    f = exc.value.findings[0]
    assert f.code == "SCHEMA.ONE_OF"
    assert (f.location.file, f.location.pointer) == (str(path), "/prompt_tokens")


def test_unknown_input_and_stray_trace_options_are_refused(tmp_path: Path) -> None:
    """A mapping that is neither manifest nor spec, or CSV options on YAML, is refused."""
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert exc.value.findings[0].code == "WORKLOAD.UNKNOWN_INPUT"
    with pytest.raises(InputError) as exc:
        load_workload(DATA / "manifest_small.json", max_output_tokens=3)
    assert exc.value.findings[0].code == "WORKLOAD.OPTION.UNUSED"


def test_duplicate_request_ids_in_a_manifest_are_refused(tmp_path: Path) -> None:
    """A manifest declaring one request_id twice is WORKLOAD.REQUEST.DUPLICATE, located."""
    data = json.loads((DATA / "manifest_small.json").read_text())
    data["requests"][2]["request_id"] = "req-A"
    del data["fixture_only_hidden_truth"]["realized_output_tokens"]["req-C"]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as exc:
        load_workload(path)
    f = exc.value.findings[0]
    assert (f.code, f.location.pointer) == ("WORKLOAD.REQUEST.DUPLICATE", "/requests/2/request_id")


def test_hidden_truth_for_an_undeclared_request_is_refused(tmp_path: Path) -> None:
    """Hidden truth naming a request no one declared is WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST."""
    data = json.loads((DATA / "manifest_small.json").read_text())
    data["fixture_only_hidden_truth"]["realized_output_tokens"]["req-Z"] = 1
    path = tmp_path / "ghost.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as exc:
        load_workload(path)
    assert exc.value.findings[0].code == "WORKLOAD.HIDDEN_TRUTH.UNKNOWN_REQUEST"
