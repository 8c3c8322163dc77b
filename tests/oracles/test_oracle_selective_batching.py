"""Loop 4 selective-batching oracle: the article's fixture, determinism, and unusable input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from repo_paths import M52

from cbaudit.contract.packing import PackedIteration
from cbaudit.io.loader import load_text
from cbaudit.model import CheckStatus, EvidenceClass, InputError
from cbaudit.oracles import selective_batching as sb
from cbaudit.oracles.fixtures import Fixture, load_fixture
from cbaudit.report.json_report import dumps_canonical

LOOP4 = M52 / "loop4"
FIXTURE = LOOP4 / "selective_batching.yaml"


def _base() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    return data


def _fixture(data: dict[str, Any]) -> Fixture:
    doc = load_text(yaml.safe_dump(data), name="inline.yaml", fmt="yaml")
    return Fixture(data=doc.data, path=doc.path, sha256=doc.sha256, locate=doc.locate)


def test_article_fixture_passes_with_the_declared_numbers() -> None:
    """Packed equals reference bitwise; q, offsets, zero cross visibility, row-0 trace."""
    result = sb.run(load_fixture(FIXTURE))
    assert result.outcome is CheckStatus.PASSED, [f.render() for f in result.findings]
    assert result.evidence_class is EvidenceClass.SYNTHETIC
    m = result.metrics
    assert m["shape"]["q"] == [1, 3, 1]
    assert m["shape"]["q_tot"] == 5
    assert m["shape"]["request_offsets"] == [0, 1, 4, 5]
    assert m["cross_request_visible"] == [0, 0, 0, 0, 0]
    assert m["packed_equals_reference"] is True
    assert all(row["bitwise_equal"] for row in m["comparison"].values())
    trace = m["row0_trace"]
    assert trace["projected"] == {
        "q": [1.0, 0.5, -0.5, 0.25],
        "k": [0.5, 0.5, -0.75, 0.5],
        "v": [0.875, 0.3125, -0.25, 0.25],
    }
    assert trace["attention"]["visible_positions"] == {
        "A:0": [0, 1, 2, 3, 4, 5],
        "B:0": [],
        "C:0": [],
    }
    assert trace["source"]["logical_cache_handle"] == "logical-kv:A:0:v6"
    assert trace["scatter"] == {"packed_row": 0, "request_key": "A:0", "request_local_row": 0}


def test_report_is_byte_identical_across_runs() -> None:
    """The same fixture gives the same canonical JSON report."""
    first = dumps_canonical(sb.run(load_fixture(FIXTURE)).to_dict())
    second = dumps_canonical(sb.run(load_fixture(FIXTURE)).to_dict())
    assert first == second


def test_packed_path_really_reads_the_packing() -> None:
    """Swapping B's rows 1 and 2 in the packing is caught by the comparison, not only statically."""
    fixture = load_fixture(FIXTURE)
    world = sb._parse(fixture)
    _, state, plan = sb._records(fixture.data, world)
    from cbaudit.contract.packing import derive_packed_iteration

    data = derive_packed_iteration(plan, state).to_json()
    data["request_local_position"][2], data["request_local_position"][3] = 2, 1
    data["visible_keys_by_row"][2], data["visible_keys_by_row"][3] = (
        data["visible_keys_by_row"][3],
        data["visible_keys_by_row"][2],
    )
    run = sb.run_packed(world, PackedIteration.from_json(data))
    assert run.refusal is None
    reference = sb.run_reference(world)
    table, bad = sb._compare(reference, run)
    assert bad == ["B:0"], table


def test_changing_a_weight_changes_the_output_but_not_the_equality() -> None:
    """Packed equals reference for other weights too: the equality is not a constant."""
    data = _base()
    data["layer"]["w_o"][0][0] = 0.25
    data["expect"].pop("row0")
    result = sb.run(_fixture(data))
    base = sb.run(load_fixture(FIXTURE))
    assert result.outcome is CheckStatus.PASSED
    assert (
        result.metrics["row0_trace"]["output_projection"]
        != (base.metrics["row0_trace"]["output_projection"])
    )


@pytest.mark.parametrize(
    ("path", "value", "code"),
    [
        (("requests", 0, "interval"), [5, 7], "SELECTIVE.FIXTURE.INTERVAL"),
        (("requests", 1, "interval"), [0, 4], "SELECTIVE.FIXTURE.INTERVAL"),
        (("requests", 1, "hidden"), [[0.0, 0.0, 0.0, 0.0]], "SELECTIVE.FIXTURE.SHAPE"),
        (("layer", "w_q"), [[1.0, 0.0], [0.0, 1.0]], "SELECTIVE.FIXTURE.SHAPE"),
        (("layer", "heads"), "two", "SCHEMA.TYPE"),
    ],
)
def test_unusable_fixture_raises_a_located_input_error(
    path: tuple[Any, ...], value: Any, code: str
) -> None:
    """A fixture that cannot describe legal work is unusable input with its code and pointer."""
    data = copy.deepcopy(_base())
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with pytest.raises(InputError) as err:
        sb.run(_fixture(data))
    finding = err.value.findings[0]
    assert finding.code == code
    assert finding.location.pointer is not None and finding.location.pointer.startswith(
        "/" + "/".join(str(p) for p in path[:2])
    )


def test_patch_that_breaks_the_packed_schema_is_a_failure_not_a_crash() -> None:
    """A packing patch leaving a schema-invalid record fails the check with SCHEMA codes."""
    data = _base()
    data["packing_patch"] = [{"op": "replace", "path": "/request_offsets", "value": "x"}]
    result = sb.run(_fixture(data))
    assert result.outcome is CheckStatus.FAILED
    assert {f.code for f in result.findings} == {"SCHEMA.TYPE"}


def test_unappliable_packing_patch_is_unusable_input() -> None:
    """A packing patch naming a missing member is SELECTIVE.FIXTURE.PACKING_PATCH at its op."""
    data = _base()
    data["packing_patch"] = [{"op": "replace", "path": "/nope", "value": 1}]
    with pytest.raises(InputError) as err:
        sb.run(_fixture(data))
    assert err.value.findings[0].code == "SELECTIVE.FIXTURE.PACKING_PATCH"
    assert err.value.findings[0].location.pointer == "/packing_patch/0"
