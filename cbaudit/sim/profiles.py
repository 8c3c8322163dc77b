"""Model and hardware profiles for the roofline cost model.

A profile is a schema'd YAML/JSON file. The package ships three under `cbaudit/sim/data/`
(a Llama-3-8B-shaped GQA fp16 model, NVIDIA H100 SXM and H200 SXM spec sheets); a caller names a
shipped one by its `profile_id` or gives a path to its own file.

Numbers that a roofline multiplies are kept as exact `Fraction`s (a declared `0.85` is 17/20),
so derived byte and FLOP counts are exact integers and times are correctly rounded once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from cbaudit.io.loader import Document, load_document
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
class ModelProfile:
    """A decoder-only transformer's shape and storage widths."""

    profile_id: str
    n_layers: int
    d_model: int
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    vocab_size: int
    dtype: str
    weight_bytes: Fraction  # bytes per parameter
    kv_bytes: Fraction  # bytes per cached K or V element
    ffn_kind: str = "swiglu"
    tied_embeddings: bool = False
    source: str | None = None

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
    def weight_bytes_total(self) -> Fraction:
        """Bytes of every parameter: the roofline reads them once per step."""
        return self.parameter_count * self.weight_bytes

    @property
    def kv_bytes_per_token(self) -> Fraction:
        """Logical K/V bytes of one all-layer cached row: 2 * layers * kv_heads * head_dim * b."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim * self.kv_bytes

    @property
    def attention_flops_per_pair(self) -> int:
        """FLOPs of one query-key pair over all layers: QK^T and PV, 2 each per q-head element."""
        return 4 * self.n_q_heads * self.head_dim * self.n_layers

    def to_json(self) -> dict[str, Any]:
        return {
            "profile_id": self.profile_id,
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "n_q_heads": self.n_q_heads,
            "n_kv_heads": self.n_kv_heads,
            "head_dim": self.head_dim,
            "ffn_dim": self.ffn_dim,
            "ffn_kind": self.ffn_kind,
            "vocab_size": self.vocab_size,
            "tied_embeddings": self.tied_embeddings,
            "dtype": self.dtype,
            "parameter_count": self.parameter_count,
            "kv_bytes_per_token": _json_number(self.kv_bytes_per_token),
        }


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

    def peak_flops(self, dtype: str) -> Fraction | None:
        return self.peak_dense_flops.get(dtype)

    def to_json(self) -> dict[str, Any]:
        return {
            "profile_id": self.profile_id,
            "name": self.name,
            "peak_dense_flops": {
                k: _json_number(v) for k, v in sorted(self.peak_dense_flops.items())
            },
            "hbm_bandwidth_bytes_per_s": _json_number(self.hbm_bandwidth),
            "memory_bytes": None if self.memory_bytes is None else _json_number(self.memory_bytes),
            "evidence_class": "source_reported",
        }


def _json_number(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def shipped_profiles() -> dict[str, Path]:
    """`profile_id` -> file of every profile shipped in the package."""
    return dict(_shipped())


@cache
def _shipped() -> tuple[tuple[str, Path], ...]:
    out: list[tuple[str, Path]] = []
    for path in sorted(DATA_DIR.glob("*.yaml")):
        doc = load_document(path)
        pid = doc.data.get("profile_id")
        if isinstance(pid, str):
            out.append((pid, path))
    return tuple(out)


def _load(ref: str | Path, schema: str, base_dir: Path | None) -> Document:
    path: Path | None = None
    if isinstance(ref, str) and ref in dict(_shipped()):
        path = dict(_shipped())[ref]
    else:
        candidate = Path(ref)
        if not candidate.is_absolute() and base_dir is not None:
            candidate = base_dir / candidate
        path = candidate
        if not path.is_file():
            known = ", ".join(sorted(dict(_shipped())))
            raise InputError.at(
                "PROFILE.NOT_FOUND",
                f"{ref!s} is neither a shipped profile ({known}) nor a file",
                str(ref),
            )
    return load_document(path, schema=schema)


def load_model_profile(ref: str | Path, *, base_dir: Path | None = None) -> ModelProfile:
    """Load a model profile by shipped `profile_id` or path; checks a declared parameter count."""
    doc = _load(ref, MODEL_SCHEMA, base_dir)
    data = doc.data
    arch = data["architecture"]
    dtype = data["dtype"]
    profile = ModelProfile(
        profile_id=data["profile_id"],
        n_layers=arch["n_layers"],
        d_model=arch["d_model"],
        n_q_heads=arch["n_q_heads"],
        n_kv_heads=arch["n_kv_heads"],
        head_dim=arch["head_dim"],
        ffn_dim=arch["ffn_dim"],
        vocab_size=arch["vocab_size"],
        dtype=dtype["name"],
        weight_bytes=exact(dtype["weight_bytes"]),
        kv_bytes=exact(dtype["kv_bytes"]),
        ffn_kind=arch.get("ffn_kind", "swiglu"),
        tied_embeddings=arch.get("tied_embeddings", False),
        source=doc.path,
    )
    if profile.n_q_heads % profile.n_kv_heads:
        raise InputError.at(
            "PROFILE.HEADS.NOT_GROUPED",
            f"{profile.n_q_heads} query heads are not a multiple of {profile.n_kv_heads} K/V heads",
            doc.path,
            pointer="/architecture/n_kv_heads",
        )
    declared = data.get("parameter_count")
    if declared is not None and declared != profile.parameter_count:
        raise InputError.at(
            "PROFILE.PARAMETER_COUNT.MISMATCH",
            f"declared parameter_count {declared} != {profile.parameter_count} derived from the"
            " architecture",
            doc.path,
            pointer="/parameter_count",
        )
    return profile


def load_hardware_profile(ref: str | Path, *, base_dir: Path | None = None) -> HardwareProfile:
    """Load a hardware profile by shipped `profile_id` or path."""
    doc = _load(ref, HARDWARE_SCHEMA, base_dir)
    data = doc.data
    eff = data.get("efficiency") or {}
    mem = data.get("memory_bytes")
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
    )
