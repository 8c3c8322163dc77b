"""Grids: which steps a run measures.

A grid file (format `cbaudit-bench-grid`, schema `bench-grid`) names a geometry, a sentinel
spec, explicit `points` and/or `sweeps`. A sweep is a product: `decode: {B, L}` alone gives
decode points `{B}q1s{L}`; `prefill: {C, history}` alone gives prefill points
`q{C}s{C+history}`; both give mixed points (the decode rows plus one chunk). Numbers may be
written `2k`. Points are de-duplicated by canonical spec (the first role wins) and numbered
`p000`, `p001`, ... in file order. The packaged grids are `tiny` (CPU), `quick` and `default`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cbaudit.bench.geometry import Geometry, geometry_from
from cbaudit.bench.spec import StepSpec, parse_spec
from cbaudit.model import InputError
from cbaudit.model.findings import pointer_join

GRID_FORMAT = "cbaudit-bench-grid"
GRID_DIR = Path(__file__).resolve().parent / "grids"
PACKAGED_GRIDS = ("tiny", "quick", "default")


@dataclass(frozen=True, slots=True)
class GridPoint:
    id: str
    spec: StepSpec
    role: str  # grid | tile | adhoc


@dataclass(frozen=True)
class Grid:
    name: str
    sha256: str
    geometry: Geometry
    sentinel: StepSpec | None
    sentinel_repeats: int
    points: tuple[GridPoint, ...]


def _n(value: Any, file: str, pointer: str) -> int:
    if isinstance(value, bool):
        raise InputError.at("BENCH.GRID.NUMBER", f"{value!r} is not a count", file, pointer=pointer)
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.rstrip("k").isdigit():
        return int(value.rstrip("k")) * (1024 if value.endswith("k") else 1)
    raise InputError.at(
        "BENCH.GRID.NUMBER", f"{value!r} is not a count (int or e.g. '2k')", file, pointer=pointer
    )


def _list(obj: Any, key: str, file: str, pointer: str) -> list[int]:
    vals = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(vals, list) or not vals:
        raise InputError.at(
            "BENCH.GRID.SWEEP", f"{key} must be a non-empty list", file, pointer=pointer
        )
    return [_n(v, file, pointer_join(pointer, key, i)) for i, v in enumerate(vals)]


def expand(data: dict[str, Any], *, name: str, file: str, sha256: str) -> Grid:
    """Expand a (schema-valid) grid mapping into numbered points."""
    geometry = geometry_from(data.get("geometry", "8b"), file=file, pointer="/geometry")
    specs: list[tuple[str, str, str]] = []  # (text, role, pointer)
    for i, text in enumerate(data.get("points", [])):
        specs.append((text, "grid", pointer_join("/points", i)))
    for i, sweep in enumerate(data.get("sweeps", [])):
        ptr = pointer_join("/sweeps", i)
        if not isinstance(sweep, dict):
            raise InputError.at("BENCH.GRID.SWEEP", "a sweep is a mapping", file, pointer=ptr)
        role = sweep.get("role", "grid")
        dec = sweep.get("decode")
        pre = sweep.get("prefill")
        if dec is None and pre is None:
            raise InputError.at(
                "BENCH.GRID.SWEEP", "a sweep needs decode and/or prefill", file, pointer=ptr
            )
        dec_parts = [""]
        if dec is not None:
            bs = _list(dec, "B", file, ptr + "/decode")
            ls = _list(dec, "L", file, ptr + "/decode")
            dec_parts = [f"{b}q1s{ll}" for b in bs for ll in ls]
        pre_parts = [""]
        if pre is not None:
            cs = _list(pre, "C", file, ptr + "/prefill")
            hs = _list(pre, "history", file, ptr + "/prefill") if "history" in pre else [0]
            pre_parts = [f"q{c}s{c + h}" for c in cs for h in hs]
        for d in dec_parts:
            for p in pre_parts:
                specs.append(("_".join(x for x in (d, p) if x), role, ptr))
    seen: set[str] = set()
    points: list[GridPoint] = []
    for text, role, ptr in specs:
        spec = parse_spec(text, file=file, pointer=ptr)
        key = spec.text()
        if key in seen:
            continue
        seen.add(key)
        points.append(GridPoint(f"p{len(points):03d}", spec, role))
    if not points:
        raise InputError.at("BENCH.GRID.EMPTY", "the grid has no points", file, pointer="")
    sentinel = None
    if data.get("sentinel") is not None:
        sentinel = parse_spec(data["sentinel"], file=file, pointer="/sentinel")
    repeats = data.get("sentinel_repeats", 3)
    return Grid(name, sha256, geometry, sentinel, int(repeats), tuple(points))


def _validate_schema(data: Any, file: str) -> None:
    try:
        # cbaudit.io needs PyYAML and jsonschema; a bare GPU machine running only the runner
        # may lack them, and then the grid is checked by `expand` alone.
        import jsonschema  # noqa: F401

        from cbaudit.io.schemas import validate
    except ImportError:
        return

    findings = validate(data, "bench-grid", file=file)
    if findings:
        raise InputError(findings)


def grid_from_bytes(raw: bytes, *, name: str, file: str, fmt: str) -> Grid:
    """Parse, validate and expand grid file bytes."""
    sha = hashlib.sha256(raw).hexdigest()
    try:
        if fmt == "json":
            data = json.loads(raw.decode("utf-8"))
        else:
            import yaml

            data = yaml.safe_load(raw.decode("utf-8"))
    except Exception as err:  # any parse error is unusable input, located at the file
        raise InputError.at("BENCH.GRID.PARSE", f"cannot parse grid: {err}", file) from err
    if not isinstance(data, dict) or data.get("format") != GRID_FORMAT:
        raise InputError.at(
            "BENCH.GRID.FORMAT",
            f"not a grid file (format must be {GRID_FORMAT!r})",
            file,
            pointer="/format",
        )
    _validate_schema(data, file)
    return expand(data, name=str(data.get("name", name)), file=file, sha256=sha)


def load_grid(ref: str) -> Grid:
    """A packaged grid by name (`tiny`, `quick`, `default`) or a grid file path."""
    if ref in PACKAGED_GRIDS:
        path = GRID_DIR / f"{ref}.json"
        return grid_from_bytes(path.read_bytes(), name=ref, file=f"<grid {ref}>", fmt="json")
    path = Path(ref)
    if not path.is_file():
        raise InputError.at(
            "BENCH.GRID.NOT_FOUND",
            f"no grid {ref!r}: neither a packaged grid ({', '.join(PACKAGED_GRIDS)}) nor a file",
            ref,
        )
    fmt = "yaml" if path.suffix.lower() in (".yaml", ".yml") else "json"
    return grid_from_bytes(path.read_bytes(), name=path.stem, file=ref, fmt=fmt)


def adhoc_grid(specs: list[str], geometry: Geometry, sentinel: str | None = None) -> Grid:
    """A grid made of `--spec` arguments."""
    points: list[GridPoint] = []
    seen: set[str] = set()
    for i, text in enumerate(specs):
        spec = parse_spec(text, file="--spec", pointer=f"/{i}")
        if spec.text() not in seen:
            seen.add(spec.text())
            points.append(GridPoint(f"p{len(points):03d}", spec, "adhoc"))
    sha = hashlib.sha256("\n".join(specs).encode()).hexdigest()
    sent = parse_spec(sentinel, file="--sentinel") if sentinel else None
    return Grid("adhoc", sha, geometry, sent, 3 if sent else 0, tuple(points))
