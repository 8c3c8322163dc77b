"""`load_patched`: plain documents pass through; base + patch files resolve or fail located.

Parameterised over both code families that use it (oracle fixtures and simulator fixtures).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cbaudit.io.loader import Document
from cbaudit.io.patched import PatchCodes, load_patched
from cbaudit.model import Finding, InputError
from cbaudit.oracles.fixtures import CODES as ORACLE_CODES
from cbaudit.oracles.fixtures import LOOP_CODES as SIM_CODES

FAMILIES = pytest.mark.parametrize(
    ("codes", "escape", "nested", "invalid"),
    [
        (
            ORACLE_CODES,
            "ORACLE.FIXTURE.BASE_ESCAPE",
            "ORACLE.FIXTURE.BASE_NESTED",
            "ORACLE.FIXTURE.PATCH_INVALID",
        ),
        (SIM_CODES, "FIXTURE.BASE.ESCAPE", "FIXTURE.BASE.NESTED", "FIXTURE.PATCH.INVALID"),
    ],
    ids=["oracle", "sim"],
)

BASE = "name: base\nitems:\n  - 1\n  - 2\nnested:\n  value: 3\n"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle root holding `base.yaml` and an empty `negative/` folder."""
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "negative").mkdir()
    return tmp_path


def _load(bundle: Path, text: str, codes: PatchCodes) -> object:
    path = bundle / "negative" / "case.yaml"
    path.write_text(text)
    return load_patched(path, display="negative/case.yaml", root=bundle, codes=codes)


def _code(bundle: Path, text: str, codes: PatchCodes) -> tuple[str, str | None]:
    with pytest.raises(InputError) as err:
        _load(bundle, text, codes)
    finding = err.value.findings[0]
    assert finding.location is not None
    assert finding.location.file == "negative/case.yaml"
    return finding.code, finding.location.pointer


@FAMILIES
def test_plain_document_passes_through(
    bundle: Path, codes: PatchCodes, escape: str, nested: str, invalid: str
) -> None:
    """A document that is not base + patch is returned as loaded, located in its own text."""
    doc = load_patched(bundle / "base.yaml", display="base.yaml", root=bundle, codes=codes)
    assert doc.data == {"name": "base", "items": [1, 2], "nested": {"value": 3}}
    assert doc.base is None
    assert doc.expect_code is None
    assert doc.directory == bundle.resolve()
    loc = doc.locate("/nested/value")
    assert (loc.file, loc.pointer, loc.line) == ("base.yaml", "/nested/value", 6)


@FAMILIES
def test_patched_document_locates_in_the_negative_file(
    bundle: Path, codes: PatchCodes, escape: str, nested: str, invalid: str
) -> None:
    """The patch applies over the base; locations name the negative file and patched pointer."""
    text = (
        "base: ../base.yaml\n"
        "patch: [{op: replace, path: /nested/value, value: 9}, {op: remove, path: /items/0}]\n"
        "expect_code: SOME.CODE\n"
    )
    path = bundle / "negative" / "case.yaml"
    path.write_text(text)
    doc = load_patched(path, display="negative/case.yaml", root=bundle, codes=codes)
    assert doc.data == {"name": "base", "items": [2], "nested": {"value": 9}}
    assert doc.base == "negative/../base.yaml"  # display path of the base, joined as written
    assert doc.path == "negative/case.yaml"
    assert doc.expect_code == "SOME.CODE"
    assert doc.directory == bundle.resolve()
    loc = doc.locate("/nested/value")
    assert (loc.file, loc.pointer) == ("negative/case.yaml", "/nested/value")
    assert (bundle / "base.yaml").read_text() == BASE  # the base is never rewritten


@FAMILIES
def test_base_outside_root_is_refused(
    bundle: Path, codes: PatchCodes, escape: str, nested: str, invalid: str
) -> None:
    """A base that resolves outside the root is the family's escape code, at /base."""
    text = "base: ../../outside.yaml\npatch: [{op: remove, path: /name}]\n"
    assert _code(bundle, text, codes) == (escape, "/base")


@FAMILIES
def test_nested_base_is_refused(
    bundle: Path, codes: PatchCodes, escape: str, nested: str, invalid: str
) -> None:
    """A base that is itself a base + patch file is the family's nested code, at /base."""
    (bundle / "negative" / "inner.yaml").write_text(
        "base: ../base.yaml\npatch: [{op: remove, path: /name}]\n"
    )
    text = "base: inner.yaml\npatch: [{op: remove, path: /name}]\n"
    assert _code(bundle, text, codes) == (nested, "/base")


@FAMILIES
@pytest.mark.parametrize(
    ("patch", "pointer"),
    [
        ("[{op: remove, path: /name}, {op: remove, path: /missing}]", "/patch/1"),
        ("[{op: test, path: /name, value: other}]", "/patch/0"),
        ("[{op: frobnicate, path: /name}]", "/patch/0"),
        ("[{op: replace, path: '', value: [1]}]", ""),
    ],
    ids=["missing-member", "failed-test", "unknown-op", "not-a-mapping"],
)
def test_invalid_patch_is_located(
    bundle: Path,
    codes: PatchCodes,
    escape: str,
    nested: str,
    invalid: str,
    patch: str,
    pointer: str,
) -> None:
    """A patch that cannot be applied is the family's invalid code, at the failing operation."""
    text = f"base: ../base.yaml\npatch: {patch}\n"
    code, where = _code(bundle, text, codes)
    assert code == invalid
    if pointer:
        assert where == pointer
    else:
        assert where is None  # the patched result as a whole: no pointer


@FAMILIES
def test_malformed_patch_file_is_invalid_at_root(
    bundle: Path, codes: PatchCodes, escape: str, nested: str, invalid: str
) -> None:
    """Without a validator, a non-string base or non-list patch is the invalid code at ''."""
    text = "base: ../base.yaml\npatch: {op: remove}\n"
    assert _code(bundle, text, codes) == (invalid, "")


def test_validator_runs_before_resolving(bundle: Path) -> None:
    """A validator's findings are raised before the base is looked at (even one outside root)."""
    seen: list[str] = []

    def validator(doc: Document) -> list[Finding]:
        seen.append(doc.path)
        return [Finding("SCHEMA.TEST", "refused", location=doc.locate("/patch"))]

    path = bundle / "negative" / "case.yaml"
    path.write_text("base: ../../outside.yaml\npatch: [{op: remove, path: /name}]\n")
    with pytest.raises(InputError) as err:
        load_patched(
            path, display="case", root=bundle, codes=ORACLE_CODES, validate_patch=validator
        )
    assert [f.code for f in err.value.findings] == ["SCHEMA.TEST"]
    assert seen == ["case"]
    plain = load_patched(
        bundle / "base.yaml", display="b", root=bundle, codes=ORACLE_CODES, validate_patch=validator
    )
    assert plain.data["name"] == "base" and seen == ["case"]  # plain documents skip it


def test_nested_rule_differs_by_family(bundle: Path) -> None:
    """A base with a `patch` key but no `base` is nested for the sim family only (as before)."""
    (bundle / "negative" / "inner.yaml").write_text("name: inner\npatch: kept\n")
    text = "base: inner.yaml\npatch: [{op: remove, path: /name}]\n"
    assert _code(bundle, text, SIM_CODES) == ("FIXTURE.BASE.NESTED", "/base")
    path = bundle / "negative" / "case.yaml"
    doc = load_patched(path, display="case", root=bundle, codes=ORACLE_CODES)
    assert doc.data == {"patch": "kept"}
