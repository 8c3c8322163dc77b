"""Layer-stack geometries and the roofline figures (bytes, FLOPs) of one step on them.

Pure Python: the CLI and the fits use these without torch.

A layer is RMSNorm, one fused QKV projection (GQA: `q_heads` query heads share `kv_heads`
key/value heads), request-local attention over each request's K/V, the output projection, a
residual, RMSNorm, and a SwiGLU FFN (fused gate/up, then down). Positional rotation is left
out: it is row-local work that does not change what a row may attend to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from cbaudit.bench.spec import StepSpec
from cbaudit.model import InputError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True, slots=True)
class Geometry:
    """Shapes of one transformer block, repeated `layers` times with distinct weights."""

    name: str
    hidden: int
    q_heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: int

    def __post_init__(self) -> None:
        for key in ("hidden", "q_heads", "kv_heads", "head_dim", "ffn", "layers"):
            if getattr(self, key) < 1:
                raise ValueError(f"geometry {self.name}: {key} must be >= 1")
        if self.q_heads % self.kv_heads:
            raise ValueError(f"geometry {self.name}: q_heads must be a multiple of kv_heads")

    @property
    def q_dim(self) -> int:
        return self.q_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def linear_params_per_layer(self) -> int:
        """Weights of the four matrix products (QKV, output, gate/up, down)."""
        h = self.hidden
        return h * (self.q_dim + 2 * self.kv_dim) + self.q_dim * h + h * 2 * self.ffn + self.ffn * h

    def kv_bytes_per_row(self, dtype: str) -> int:
        """K and V bytes of one cached row across all layers."""
        return 2 * self.kv_dim * DTYPE_BYTES[dtype] * self.layers

    def with_layers(self, layers: int) -> Geometry:
        return Geometry(
            self.name, self.hidden, self.q_heads, self.kv_heads, self.head_dim, self.ffn, layers
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# An 8B-shaped block (hidden 4096, 32 q heads, 8 kv heads, head dim 128, FFN 14336); four
# distinct layers keep the working set far above any L2 while the run stays short.
GEOMETRIES: dict[str, Geometry] = {
    "8b": Geometry("8b", hidden=4096, q_heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=4),
    # CPU and test sized: every code path, small numbers.
    "tiny": Geometry("tiny", hidden=64, q_heads=4, kv_heads=2, head_dim=16, ffn=128, layers=2),
}


def geometry_named(name: str, *, file: str | None = None, pointer: str | None = None) -> Geometry:
    """A preset by name, or a located `BENCH.GEOMETRY.UNKNOWN`."""
    if name not in GEOMETRIES:
        raise InputError.at(
            "BENCH.GEOMETRY.UNKNOWN",
            f"unknown geometry {name!r} (known: {', '.join(sorted(GEOMETRIES))})",
            file,
            pointer=pointer,
        )
    return GEOMETRIES[name]


def geometry_from(value: Any, *, file: str | None = None, pointer: str | None = None) -> Geometry:
    """A preset name or a mapping of every field; located `BENCH.GEOMETRY.*` on error."""
    if isinstance(value, str):
        return geometry_named(value, file=file, pointer=pointer)
    if isinstance(value, Mapping):
        try:
            return Geometry(
                name=str(value["name"]),
                hidden=int(value["hidden"]),
                q_heads=int(value["q_heads"]),
                kv_heads=int(value["kv_heads"]),
                head_dim=int(value["head_dim"]),
                ffn=int(value["ffn"]),
                layers=int(value["layers"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise InputError.at(
                "BENCH.GEOMETRY.INVALID", f"unusable geometry: {err}", file, pointer=pointer
            ) from err
    raise InputError.at(
        "BENCH.GEOMETRY.INVALID",
        "geometry must be a preset name or a mapping",
        file,
        pointer=pointer,
    )


@dataclass(frozen=True, slots=True)
class Roofline:
    """Modeled traffic and work of one step (evidence class `modeled`)."""

    weight_bytes: int
    kv_read_bytes: int
    kv_write_bytes: int
    activation_bytes: int
    linear_flops: int
    attention_flops: int

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes + self.activation_bytes

    @property
    def flops(self) -> int:
        return self.linear_flops + self.attention_flops

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0

    def time_ms(self, bandwidth: float, flops_per_s: float) -> float:
        """`max(bytes / bandwidth, FLOPs / peak)` in milliseconds."""
        return 1e3 * max(self.bytes / bandwidth, self.flops / flops_per_s)


def roofline(spec: StepSpec, geo: Geometry, dtype: str) -> Roofline:
    """Bytes and FLOPs of one step of `spec` on `geo` (all layers).

    Counting rules, stated so a reader can redo them: every weight is read once per step;
    every request reads its `kv` key and value rows (history plus the rows it just wrote) and
    writes its `q` new rows; activations count one read and one write of each row-wise
    tensor (inputs and outputs of the four products, the attention output, two residuals);
    each multiply-add is 2 FLOPs; attention costs `4 * head_dim * q_heads` FLOPs per causal
    query-key pair (scores and weighted values). Softmax, norms and activations are left out
    of the FLOPs (a few per element, far below the products).
    """
    b = DTYPE_BYTES[dtype]
    L = geo.layers
    t = spec.tokens
    weight = geo.linear_params_per_layer * b * L + 2 * geo.hidden * b * L
    kv_read = spec.kv_tokens * 2 * geo.kv_dim * b * L
    kv_write = t * 2 * geo.kv_dim * b * L
    row_elems = (
        geo.hidden  # norm in -> qkv in
        + (geo.q_dim + 2 * geo.kv_dim)  # qkv out
        + geo.q_dim * 2  # attention out, o-proj in
        + geo.hidden * 3  # o-proj out, residual, norm
        + 2 * geo.ffn  # gate/up out
        + geo.ffn  # down in
        + geo.hidden  # down out + residual
    )
    activation = t * row_elems * b * 2 * L
    linear = 2 * t * geo.linear_params_per_layer * L
    attention = 4 * geo.head_dim * geo.q_heads * spec.attention_pairs * L
    return Roofline(weight, kv_read, kv_write, activation, linear, attention)
