"""Timing, CUDA graphs, L2 flushing, ceilings probes and device facts (torch).

GPU recipe (BENCH.md): inputs built outside the timed region; the whole N-layer step
captured in one CUDA graph when it captures (else eager, and said so); about 25 ms of warmup
(at least 3 replays); then `clamp(100 ms / estimate, 30, 500)` samples, each one an L2 flush
(zeroing `max(256 MiB, 4 x L2)` bytes) followed by CUDA event, replay, CUDA event. Events are
read after one synchronize at the end. The CPU path times with `perf_counter_ns` around a
call and a smaller sample policy: it checks plumbing, not speed.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cbaudit.bench.torch_env import require_torch

require_torch()

import torch  # noqa: E402  (after require_torch: a missing extra is a clear error)

from cbaudit.bench.stats import sample_count  # noqa: E402

# torch's CUDA stream and event constructors are untyped; name them once as Any.
_Event: Any = torch.cuda.Event
_Stream: Any = torch.cuda.Stream
MIB = 1 << 20
# Spec sheets of the accelerators the seeds name (dense, no sparsity). Bandwidth in bytes/s,
# bf16/fp16 tensor FLOP/s. H200 from BENCH.md; H100 SXM from the lesson (section 4.1).
SPEC_SHEETS: dict[str, dict[str, float]] = {
    "H200": {"bandwidth": 4.8e12, "flops16": 989e12},
    "H100": {"bandwidth": 3.35e12, "flops16": 989e12},
}


@dataclass(frozen=True)
class Policy:
    """How many samples to take and how long to warm up."""

    warmup_ms: float
    target_ms: float
    min_samples: int
    max_samples: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "warmup_ms": self.warmup_ms,
            "target_ms": self.target_ms,
            "min_samples": self.min_samples,
            "max_samples": self.max_samples,
        }


GPU_POLICY = Policy(warmup_ms=25.0, target_ms=100.0, min_samples=30, max_samples=500)
CPU_POLICY = Policy(warmup_ms=5.0, target_ms=20.0, min_samples=5, max_samples=30)


def spec_sheet(device_name: str) -> dict[str, float] | None:
    for key, sheet in SPEC_SHEETS.items():
        if key in device_name:
            return sheet
    return None


def flush_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return max(256 * MIB, 4 * l2)


class Timer:
    """Samples one zero-argument callable under a policy."""

    def __init__(self, device: torch.device, policy: Policy) -> None:
        self.device = device
        self.policy = policy
        self._flush: torch.Tensor | None = None
        if device.type == "cuda":
            self._flush = torch.empty(flush_bytes(device), dtype=torch.uint8, device=device)

    def _once_cuda(self, fn: Callable[[], object]) -> float:
        start = _Event(enable_timing=True)
        end = _Event(enable_timing=True)
        if self._flush is not None:
            self._flush.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    def _once_cpu(self, fn: Callable[[], object]) -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e6

    def samples(self, fn: Callable[[], object]) -> list[float]:
        """Estimate, warm up, then take the policy's number of samples (milliseconds)."""
        once = self._once_cuda if self.device.type == "cuda" else self._once_cpu
        estimate = statistics.median(once(fn) for _ in range(3))
        warm = max(3, math.ceil(self.policy.warmup_ms / max(estimate, 1e-3)))
        for _ in range(min(warm, 1000)):
            fn()
        n = sample_count(
            estimate, self.policy.target_ms, self.policy.min_samples, self.policy.max_samples
        )
        if self.device.type != "cuda":
            return [once(fn) for _ in range(n)]
        starts = [_Event(enable_timing=True) for _ in range(n)]
        ends = [_Event(enable_timing=True) for _ in range(n)]
        for s, e in zip(starts, ends, strict=True):
            if self._flush is not None:
                self._flush.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize(self.device)
        return [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]


def capture_graph(
    fn: Callable[[], object], device: torch.device
) -> tuple[Callable[[], object], str | None]:
    """Capture `fn` in one CUDA graph; return (replay, None) or (fn, why eager)."""
    try:
        side = _Stream(device=device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize(device)
    except Exception as err:  # any capture failure means eager timing, recorded with its reason
        why = f"CUDA graph capture failed ({type(err).__name__}: {str(err)[:160]}); eager"
        try:
            torch.cuda.synchronize(device)
        except Exception as sync_err:  # the failed capture poisoned the stream: say so, go on
            why += f"; synchronize after it raised {type(sync_err).__name__}"
        return fn, why
    return graph.replay, None


def probe_ceilings(device: torch.device, dtype: torch.dtype, device_name: str) -> dict[str, Any]:
    """A large device copy (2 bytes of traffic per byte copied) and a large GEMM."""
    on_gpu = device.type == "cuda"
    ev = "measured_gpu" if on_gpu else "measured_cpu"
    sheet = spec_sheet(device_name) if on_gpu else None
    timer = Timer(device, GPU_POLICY if on_gpu else CPU_POLICY)
    out: dict[str, Any] = {"spec_source": "BENCH.md / lesson 4.1 spec sheets" if sheet else None}
    nbytes = (1 << 30) if on_gpu else 64 * MIB
    try:
        src = torch.empty(
            nbytes // 2, dtype=torch.bfloat16 if on_gpu else torch.float16, device=device
        )
        src.fill_(1)
        dst = torch.empty_like(src)
        med = statistics.median(timer.samples(lambda: dst.copy_(src)))
        achieved = 2 * nbytes / (med / 1e3)
        spec = sheet["bandwidth"] if sheet else None
        out["copy"] = {
            "evidence_class": ev,
            "status": "ok",
            "reason": f"copy of {nbytes} bytes, 2 bytes of traffic per byte copied",
            "median_ms": med,
            "achieved": achieved,
            "spec": spec,
            "fraction_of_spec": achieved / spec if spec else None,
            "unit": "bytes/s",
        }
    except Exception as err:  # a probe that cannot run is recorded, not fatal
        out["copy"] = {"evidence_class": ev, "status": "error", "reason": str(err)[:200]}
    n = 8192 if on_gpu else 384
    try:
        gdtype = dtype if on_gpu else torch.float32
        a = torch.randn(n, n, device=device).to(gdtype)
        b = torch.randn(n, n, device=device).to(gdtype)
        med = statistics.median(timer.samples(lambda: a @ b))
        achieved = 2 * n**3 / (med / 1e3)
        spec = sheet["flops16"] if sheet and gdtype != torch.float32 else None
        out["gemm"] = {
            "evidence_class": ev,
            "status": "ok",
            "reason": f"{n}x{n}x{n} {str(gdtype).removeprefix('torch.')} GEMM",
            "median_ms": med,
            "achieved": achieved,
            "spec": spec,
            "fraction_of_spec": achieved / spec if spec else None,
            "unit": "FLOP/s",
        }
    except Exception as err:  # recorded, not fatal
        out["gemm"] = {"evidence_class": ev, "status": "error", "reason": str(err)[:200]}
    return out


def nvidia_smi() -> dict[str, Any] | None:
    """Driver, clocks, power and temperature from nvidia-smi (None when it is absent)."""
    fields = "name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu"
    try:
        proc = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    vals = [v.strip() for v in first.split(",")]
    if len(vals) != 6:
        return None
    return dict(
        zip(
            ["name", "driver", "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c"],
            vals,
            strict=True,
        )
    )


def device_facts(device: torch.device) -> dict[str, Any]:
    """The manifest's device block."""
    if device.type != "cuda":
        import platform

        return {
            "type": "cpu",
            "name": platform.processor() or platform.machine() or "cpu",
            "compute_capability": None,
            "sm_count": None,
            "l2_bytes": None,
            "memory_bytes": None,
            "driver": None,
            "threads": torch.get_num_threads(),
        }
    props = torch.cuda.get_device_properties(device)
    smi = nvidia_smi()
    return {
        "type": "cuda",
        "name": str(props.name),
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": int(props.multi_processor_count),
        "l2_bytes": int(getattr(props, "L2_cache_size", 0) or 0) or None,
        "memory_bytes": int(props.total_memory),
        "memory_clock_khz": getattr(props, "memory_clock_rate", None),
        "memory_bus_width_bits": getattr(props, "memory_bus_width", None),
        "driver": smi["driver"] if smi else None,
    }
