"""Model and hardware profiles for the roofline cost model and the `cbaudit model` calculators.

A profile is a schema'd YAML/JSON file. The package ships its profiles under
`cbaudit/sim/data/` (a Llama-3-8B-shaped GQA fp16 model, NVIDIA H100 SXM and H200 SXM spec
sheets, and the models and hardware of lecture 4 as it states them); a caller names a shipped
one by its `profile_id` or gives a path to its own file. A model profile gives a transformer
shape (`architecture`) or its totals directly (`totals`), and may add a fixed per-request
state (hybrid models).

Numbers that a roofline multiplies are kept as exact `Fraction`s (a declared `0.85` is 17/20),
so derived byte and FLOP counts are exact integers and times are correctly rounded once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from cbaudit.io.limits import resolve_max_bytes
from cbaudit.io.loader import Document, load_document, load_recorded, read_bounded
from cbaudit.model import InputError

DATA_DIR = Path(__file__).resolve().parent / "data"

MODEL_SCHEMA = "model-profile"
HARDWARE_SCHEMA = "hardware-profile"


def exact(value: int | float | str | Fraction) -> Fraction:
    """The decimal a person wrote, as an exact fraction (`0.85` -> 17/20, `3.35e12` -> int)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


@dataclass(frozen=True, slots=True)
class Architecture:
    """A decoder-only transformer's shape and storage widths (the `architecture` form)."""

    n_layers: int
    d_model: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    vocab_size: int
    weight_bytes: Fraction  # bytes per parameter
    kv_bytes: Fraction  # bytes per cached K or V element
    ffn_kind: str = "swiglu"
    tied_embeddings: bool = False

    @property
    def params_per_layer(self) -> int:
        """Q, K, V, O projections, the FFN matrices and two RMSNorm vectors (no biases)."""
        q_width = self.n_q_heads * self.head_dim
        kv_width = self.n_kv_heads * self.head_dim
        attn = self.d_model * q_width + 2 * self.d_model * kv_width + q_width * self.d_model
        ffn_mats = 3 if self.ffn_kind == "swiglu" else 2
        return attn + ffn_mats * self.d_model * self.ffn_dim + 2 * self.d_model

    @property
    def parameter_count(self) -> int:
        """All parameters: layers, input embedding, output head (unless tied), final norm."""
        embeddings = self.vocab_size * self.d_model * (1 if self.tied_embeddings else 2)
        return self.n_layers * self.params_per_layer + embeddings + self.d_model

    @property
    def kv_bytes_per_token(self) -> Fraction:
        """Logical K/V bytes of one all-layer cached row: 2 * layers * kv_heads * head_dim * b."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * self.kv_bytes

    @property
    def attention_flops_per_pair(self) -> int:
        """FLOPs of one query-key pair over all layers: QK^T and PV, 2 each per q-head element."""
        return 4 * self.n_q_heads * self.head_dim * self.n_layers


@dataclass(frozen=True, slots=True)
class KvLayout:
    """Where a declared per-token K/V size comes from: layers that cache K/V x bytes each."""

    layers: int
    bytes_per_layer: Fraction

    @property
    def bytes_per_token(self) -> Fraction:
        return self.layers * self.bytes_per_layer


@dataclass(frozen=True, slots=True)
class Totals:
    """A model declared by its totals (the `totals` form): what a roofline multiplies.

    Anything left out is unknown; a calculation that needs it refuses the profile with
    `PROFILE.FIELD.MISSING` (see `ModelProfile`). `d_model` and `n_layers` (the layers with
    full attention) give the attention FLOPs of a query-key pair, `4 * d_model * n_layers`.
    """

    kv_bytes_per_token: Fraction
    parameter_count: int | None = None
    weight_bytes: Fraction | None = None  # all weights, in bytes
    flops_per_token: int | None = None  # linear-layer FLOPs per token (2P for a dense model)
    d_model: int | None = None
    n_layers: int | None = None
    kv_layout: KvLayout | None = None


@dataclass(frozen=True, slots=True)
class StateLayout:
    """A fixed per-request recurrent state: layers x heads x a rows-by-cols matrix each."""

    layers: int
    heads: int
    rows: int
    cols: int
    element_bytes: Fraction

    @property
    def bytes(self) -> Fraction:
        return self.layers * self.heads * self.rows * self.cols * self.element_bytes


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model as the cost models see it: a transformer shape or declared totals.

    The properties a roofline multiplies (`parameter_count`, `weight_bytes_total`,
    `linear_flops_per_token`, `kv_bytes_per_token`, `attention_flops_per_pair`) are derived
    from the architecture, or read from the totals; a total the profile does not declare
    raises `PROFILE.FIELD.MISSING`, located at the profile's `/totals`. A hybrid model
    (linear-attention layers beside full attention) also declares a fixed state per request.
    """

    profile_id: str
    dtype: str
    shape: Architecture | Totals
    state_bytes_per_request: Fraction = Fraction(0)
    state_layout: StateLayout | None = None
    source: str | None = None
    description: str | None = None

    @property
    def form(self) -> str:
        """`architecture` or `totals`: how the profile declares the model."""
        return "architecture" if isinstance(self.shape, Architecture) else "totals"

    @property
    def architecture(self) -> Architecture | None:
        return self.shape if isinstance(self.shape, Architecture) else None

    def _missing(self, field: str) -> InputError:
        return InputError.at(
            "PROFILE.FIELD.MISSING",
            f"model profile {self.profile_id} declares no totals.{field}, which this"
            " calculation needs",
            self.source,
            pointer="/totals",
        )

    @property
    def parameter_count(self) -> int:
        """All parameters (derived from the architecture, or declared)."""
        if isinstance(self.shape, Architecture):
            return self.shape.parameter_count
        if self.shape.parameter_count is None:
            raise self._missing("parameter_count")
        return self.shape.parameter_count

    @property
    def weight_bytes_total(self) -> Fraction:
        """Bytes of every parameter: the roofline reads them once per step."""
        if isinstance(self.shape, Architecture):
            return self.shape.parameter_count * self.shape.weight_bytes
        if self.shape.weight_bytes is None:
            raise self._missing("weight_bytes")
        return self.shape.weight_bytes

    @property
    def linear_flops_per_token(self) -> int:
        """Linear-layer FLOPs of one token: 2 * parameters, or the declared figure (MoE)."""
        if isinstance(self.shape, Architecture):
            return 2 * self.shape.parameter_count
        if self.shape.flops_per_token is None:
            raise self._missing("flops_per_token")
        return self.shape.flops_per_token

    @property
    def kv_bytes_per_token(self) -> Fraction:
        """K/V bytes one cached token adds over all layers that cache K/V."""
        return self.shape.kv_bytes_per_token

    @property
    def attention_flops_per_pair(self) -> int:
        """Attention FLOPs of one causal query-key pair over all full-attention layers."""
        if isinstance(self.shape, Architecture):
            return self.shape.attention_flops_per_pair
        if self.shape.d_model is None:
            raise self._missing("d_model")
        if self.shape.n_layers is None:
            raise self._missing("n_layers")
        return 4 * self.shape.d_model * self.shape.n_layers

    def require_step_totals(self) -> None:
        """Refuse (`PROFILE.FIELD.MISSING`) a profile that cannot cost a step: the roofline
        reads the weight bytes, the FLOPs per token and the attention FLOPs per pair."""
        _ = (self.weight_bytes_total, self.linear_flops_per_token, self.attention_flops_per_pair)

    @property
    def is_hybrid(self) -> bool:
        """True when each running request also holds a fixed state (a hybrid model)."""
        return self.state_bytes_per_request > 0

    def to_json(self) -> dict[str, Any]:
        arch = self.shape
        if isinstance(arch, Architecture):
            out: dict[str, Any] = {
                "profile_id": self.profile_id,
                "n_layers": arch.n_layers,
                "d_model": arch.d_model,
                "n_q_heads": arch.n_q_heads,
                "n_kv_heads": arch.n_kv_heads,
                "head_dim": arch.head_dim,
                "ffn_dim": arch.ffn_dim,
                "ffn_kind": arch.ffn_kind,
                "vocab_size": arch.vocab_size,
                "tied_embeddings": arch.tied_embeddings,
                "dtype": self.dtype,
                "parameter_count": arch.parameter_count,
                "kv_bytes_per_token": _json_number(arch.kv_bytes_per_token),
            }
        else:
            out = {"profile_id": self.profile_id, "form": "totals", "dtype": self.dtype}
            for key in ("parameter_count", "flops_per_token", "d_model", "n_layers"):
                value = getattr(arch, key)
                if value is not None:
                    out[key] = value
            if arch.weight_bytes is not None:
                out["weight_bytes"] = _json_number(arch.weight_bytes)
            out["kv_bytes_per_token"] = _json_number(arch.kv_bytes_per_token)
        if self.is_hybrid:
            out["state_bytes_per_request"] = _json_number(self.state_bytes_per_request)
        return out


@dataclass(frozen=True, slots=True)
class HardwareProfile:
    """Spec-sheet ceilings (source_reported) and optional declared efficiency fractions."""

    profile_id: str
    name: str
    peak_dense_flops: Mapping[str, Fraction]
    hbm_bandwidth: Fraction  # bytes per second
    memory_bytes: Fraction | None = None
    mbu: Fraction | None = None
    mfu: Fraction | None = None
    efficiency_basis: str | None = None
    source: str | None = None
    host_link_bandwidth: Fraction | None = None  # bytes per second, each direction
    host_link_name: str | None = None

    def peak_flops(self, dtype: str) -> Fraction | None:
        return self.peak_dense_flops.get(dtype)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "profile_id": self.profile_id,
            "name": self.name,
            "peak_dense_flops": {
                k: _json_number(v) for k, v in sorted(self.peak_dense_flops.items())
            },
            "hbm_bandwidth_bytes_per_s": _json_number(self.hbm_bandwidth),
            "memory_bytes": None if self.memory_bytes is None else _json_number(self.memory_bytes),
            "evidence_class": "source_reported",
        }
        if self.host_link_bandwidth is not None:
            out["host_link_bytes_per_s"] = _json_number(self.host_link_bandwidth)
        return out


def _json_number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


# The shipped profiles: profile_id -> (kind, file under DATA_DIR). An explicit table, so that
# naming one profile reads one file (a test holds it equal to the files' own ids and kinds).
SHIPPED: dict[str, tuple[str, str]] = {
    "llama-3-8b-gqa-fp16": (MODEL_SCHEMA, "model-llama3-8b-gqa-fp16.yaml"),
    "lecture4-dense-70b-fp16": (MODEL_SCHEMA, "model-lecture4-dense-70b-fp16.yaml"),
    "lecture4-nominal-8b-fp16": (MODEL_SCHEMA, "model-lecture4-nominal-8b-fp16.yaml"),
    "lecture4-kimi-k3-hybrid": (MODEL_SCHEMA, "model-lecture4-kimi-k3-hybrid.yaml"),
    "nvidia-h100-sxm": (HARDWARE_SCHEMA, "hw-nvidia-h100-sxm.yaml"),
    "nvidia-h200-sxm": (HARDWARE_SCHEMA, "hw-nvidia-h200-sxm.yaml"),
    "lecture4-h100-sxm": (HARDWARE_SCHEMA, "hw-lecture4-h100-sxm.yaml"),
}


def shipped_profiles() -> dict[str, Path]:
    """`profile_id` -> file of every profile shipped in the package."""
    return {pid: DATA_DIR / name for pid, (_, name) in SHIPPED.items()}


def shipped_profile_kinds() -> dict[str, str]:
    """`profile_id` -> `model-profile` or `hardware-profile`, for every shipped profile."""
    return {pid: kind for pid, (kind, _) in SHIPPED.items()}


# What each shipped profile's YAML parses to, keyed by the file's sha256: naming a shipped
# profile then costs no YAML parser (PyYAML and its patterns are most of a replay's start-up
# after the interpreter's own). A file whose bytes differ from the index's is parsed as any
# other; `tests/sim/test_profiles_index.py` holds this file equal to `parsed_index_text()`.
PARSED_INDEX = DATA_DIR / "parsed-profiles.json"


def parsed_index_text() -> str:
    """The text of `PARSED_INDEX`: every shipped profile's sha256 and the data it parses to.

    Regenerate the file after editing a shipped profile:
    `python -c "from cbaudit.sim.profiles import write_parsed_index; write_parsed_index()"`.
    """
    profiles = {}
    for name in sorted(name for _, name in SHIPPED.values()):
        doc = load_document(DATA_DIR / name)
        profiles[name] = {"sha256": doc.sha256, "data": doc.data}
    about = "generated from the YAML files beside it by cbaudit.sim.profiles.parsed_index_text"
    return json.dumps({"about": about, "profiles": profiles}, indent=1, ensure_ascii=False) + "\n"


def write_parsed_index() -> None:
    """Rewrite `PARSED_INDEX` from the shipped YAML files (atomically)."""
    from cbaudit.io.atomic import atomic_write

    atomic_write(PARSED_INDEX, parsed_index_text())


def _shipped_document(path: Path) -> Document:
    """A shipped profile, read like any input; its data from `PARSED_INDEX` when that holds
    these bytes (`load_recorded`), else parsed."""
    name = str(path)
    raw = read_bounded(path, name, resolve_max_bytes(None))
    try:
        index = json.loads(PARSED_INDEX.read_text(encoding="utf-8"))
        recorded = {entry["sha256"]: entry["data"] for entry in index["profiles"].values()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        recorded = {}  # an index that is gone or unreadable: the YAML is parsed, as for any file
    return load_recorded(raw, name=name, fmt="yaml", recorded=recorded)


_KIND_NAMES = {MODEL_SCHEMA: "a model profile", HARDWARE_SCHEMA: "a hardware profile"}


def _load(
    ref: str | Path,
    schema: str,
    base_dir: Path | None,
    precheck: Callable[[Document], None] | None = None,
) -> Document:
    """The profile document `ref` (shipped id or path), of kind `schema`, schema-checked.

    A profile of the other kind (a hardware id where a model is expected, or the reverse)
    is one located `PROFILE.KIND.MISMATCH` line that says what it is; `precheck` runs
    before the schema on a document of the right kind, for mistakes a schema would report
    less plainly. A path that exists but cannot be read is the loader's `LOAD.*` error.
    """
    shipped = shipped_profiles()
    if isinstance(ref, str) and ref in shipped:
        doc = _shipped_document(shipped[ref])
    else:
        path = Path(ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.exists():
            known = ", ".join(sorted(shipped))
            raise InputError.at(
                "PROFILE.NOT_FOUND",
                f"{ref!s} is neither a shipped profile ({known}) nor a file",
                str(ref),
            )
        doc = load_document(path)
    kind = doc.data.get("kind")
    if kind != schema and kind in _KIND_NAMES:
        loc = doc.locate("/kind")
        raise InputError.at(
            "PROFILE.KIND.MISMATCH",
            f"{ref!s} is {_KIND_NAMES[kind]}, not {_KIND_NAMES[schema]}",
            loc.file,
            pointer="/kind",
            line=loc.line,
        )
    if precheck is not None and kind == schema:
        precheck(doc)
    from cbaudit.io.schemas import validate

    findings = validate(doc.data, schema, file=doc.path, locate=doc.locate)
    if findings:
        raise InputError(findings)
    return doc


def _located(doc: Document, code: str, message: str, pointer: str) -> InputError:
    loc = doc.locate(pointer)
    return InputError.at(code, message, loc.file, pointer=pointer, line=loc.line)


def load_model_profile(ref: str | Path, *, base_dir: Path | None = None) -> ModelProfile:
    """Load a model profile by shipped `profile_id` or path.

    The `architecture` form derives every total (a declared `parameter_count` is checked
    against the derivation); the `totals` form declares them (a declared `kv_layout` or
    state layout is checked against the declared bytes).
    """
    doc = _load(ref, MODEL_SCHEMA, base_dir, precheck=_check_form)
    data = doc.data
    dtype = data["dtype"]
    shape = _architecture(doc) if "architecture" in data else _totals(doc)
    state_bytes, state_layout = _state(doc)
    return ModelProfile(
        profile_id=data["profile_id"],
        dtype=dtype["name"],
        shape=shape,
        state_bytes_per_request=state_bytes,
        state_layout=state_layout,
        source=doc.path,
        description=data.get("description"),
    )


def _check_form(doc: Document) -> None:
    """Exactly one of `architecture` and `totals` (said plainly, before the schema's oneOf)."""
    data = doc.data
    has_arch, has_totals = "architecture" in data, "totals" in data
    if has_arch == has_totals:
        raise _located(
            doc,
            "PROFILE.FORM.AMBIGUOUS" if has_arch else "PROFILE.FORM.MISSING",
            "a model profile declares exactly one of `architecture` (a transformer shape) or"
            " `totals` (parameter count, weight bytes, FLOPs and K/V bytes per token)",
            "",
        )
    if has_totals and "parameter_count" in data:
        raise _located(
            doc,
            "PROFILE.FORM.AMBIGUOUS",
            "a `totals` profile declares its parameter count as totals.parameter_count",
            "/parameter_count",
        )


def _architecture(doc: Document) -> Architecture:
    data = doc.data
    arch, dtype = data["architecture"], data["dtype"]
    shape = Architecture(
        n_layers=arch["n_layers"],
        d_model=arch["d_model"],
        n_q_heads=arch["n_q_heads"],
        n_kv_heads=arch["n_kv_heads"],
        head_dim=arch["head_dim"],
        ffn_dim=arch["ffn_dim"],
        vocab_size=arch["vocab_size"],
        weight_bytes=exact(dtype["weight_bytes"]),
        kv_bytes=exact(dtype["kv_bytes"]),
        ffn_kind=arch.get("ffn_kind", "swiglu"),
        tied_embeddings=arch.get("tied_embeddings", False),
    )
    if shape.n_q_heads % shape.n_kv_heads:
        raise _located(
            doc,
            "PROFILE.HEADS.NOT_GROUPED",
            f"{shape.n_q_heads} query heads are not a multiple of {shape.n_kv_heads} K/V heads",
            "/architecture/n_kv_heads",
        )
    declared = data.get("parameter_count")
    if declared is not None and declared != shape.parameter_count:
        raise _located(
            doc,
            "PROFILE.PARAMETER_COUNT.MISMATCH",
            f"declared parameter_count {declared} != {shape.parameter_count} derived from the"
            " architecture",
            "/parameter_count",
        )
    return shape


def _totals(doc: Document) -> Totals:
    data = doc.data
    totals = data["totals"]
    layout_raw = totals.get("kv_layout")
    layout = (
        None
        if layout_raw is None
        else KvLayout(layout_raw["layers"], exact(layout_raw["bytes_per_layer"]))
    )
    declared_kv = totals.get("kv_bytes_per_token")  # the schema requires it or a layout
    kv = exact(declared_kv) if declared_kv is not None else Fraction(0)
    if layout is not None:
        if declared_kv is not None and kv != layout.bytes_per_token:
            raise _located(
                doc,
                "PROFILE.KV_BYTES.MISMATCH",
                f"declared kv_bytes_per_token {declared_kv} != {layout.layers} x"
                f" {_json_number(layout.bytes_per_layer)} = {_json_number(layout.bytes_per_token)}"
                " from kv_layout",
                "/totals/kv_bytes_per_token",
            )
        kv = layout.bytes_per_token
    weight = totals.get("weight_bytes")
    return Totals(
        kv_bytes_per_token=kv,
        parameter_count=totals.get("parameter_count"),
        weight_bytes=None if weight is None else exact(weight),
        flops_per_token=totals.get("flops_per_token"),
        d_model=totals.get("d_model"),
        n_layers=totals.get("n_layers"),
        kv_layout=layout,
    )


def _state(doc: Document) -> tuple[Fraction, StateLayout | None]:
    """The fixed per-request state of a hybrid model (0 bytes when none is declared)."""
    state = doc.data.get("state")
    if state is None:
        return Fraction(0), None
    raw = state.get("layout")
    layout = (
        None
        if raw is None
        else StateLayout(
            layers=raw["layers"],
            heads=raw["heads"],
            rows=raw["rows"],
            cols=raw["cols"],
            element_bytes=exact(raw["element_bytes"]),
        )
    )
    declared = state.get("bytes_per_request")  # the schema requires it or a layout
    if layout is None:
        return exact(declared), None
    if declared is not None and exact(declared) != layout.bytes:
        raise _located(
            doc,
            "PROFILE.STATE_BYTES.MISMATCH",
            f"declared bytes_per_request {declared} != {_json_number(layout.bytes)} from the"
            " layout (layers x heads x rows x cols x element_bytes)",
            "/state/bytes_per_request",
        )
    return layout.bytes, layout


def load_hardware_profile(ref: str | Path, *, base_dir: Path | None = None) -> HardwareProfile:
    """Load a hardware profile by shipped `profile_id` or path."""
    doc = _load(ref, HARDWARE_SCHEMA, base_dir)
    data = doc.data
    eff = data.get("efficiency") or {}
    mem = data.get("memory_bytes")
    link = data.get("host_link")
    return HardwareProfile(
        profile_id=data["profile_id"],
        name=data["name"],
        peak_dense_flops={k: exact(v) for k, v in data["peak_dense_flops"].items()},
        hbm_bandwidth=exact(data["hbm_bandwidth_bytes_per_s"]),
        memory_bytes=None if mem is None else exact(mem),
        mbu=exact(eff["mbu"]) if "mbu" in eff else None,
        mfu=exact(eff["mfu"]) if "mfu" in eff else None,
        efficiency_basis=eff.get("basis"),
        source=doc.path,
        host_link_bandwidth=None if link is None else exact(link["bytes_per_s"]),
        host_link_name=None if link is None else link["name"],
    )
