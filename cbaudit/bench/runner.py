"""The mixed-step runner process: `python -m cbaudit.bench.runner --output FILE [...]`.

`cbaudit bench run` spawns this module so the CLI never imports torch. The core is
`run_bench(config, progress)`, which returns the results data; `main()` parses flags, refuses to
overwrite an existing results file without `--force`, writes atomically and exits 0 (every
measured point passed its checks), 1 (a point failed its correctness check or raised) or 2
(unusable input: no torch, a bad grid or spec, an unavailable device or backend).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cbaudit import __version__
from cbaudit.bench.geometry import DTYPE_BYTES, GEOMETRIES, Geometry, geometry_named, roofline
from cbaudit.bench.grid import Grid, GridPoint, adhoc_grid, load_grid
from cbaudit.bench.results import (
    CPU_LABEL,
    RESULTS_FORMAT,
    RESULTS_FORMAT_VERSION,
    PointStatus,
    canonical_json,
)
from cbaudit.bench.spec import StepSpec
from cbaudit.bench.stats import DRIFT_FRACTION, cv, drift, is_noisy, summarize
from cbaudit.bench.torch_env import EXTRA_HINT, torch_available
from cbaudit.model import EvidenceClass, ExitCode, InputError

Progress = Callable[[str], None]
DEFAULT_BUDGET_S = 150.0
# Set by SIGTERM/SIGINT (see `main`): the point being measured finishes, the rest are recorded
# as skipped, and the results file is still written whole. `timeout` and a CI job's
# cancellation both send SIGTERM; without this a run killed near its end left nothing.
STOP = threading.Event()


@dataclass(frozen=True)
class RunConfig:
    """Everything a run depends on (the CLI and `main` build one)."""

    output: Path
    grid: str = "auto"  # tiny | quick | default | PATH | auto (quick on CUDA, tiny on CPU)
    specs: tuple[str, ...] = ()  # ad-hoc points instead of a grid
    sentinel: str | None = None  # with specs
    geometry: str = "auto"
    layers: int | None = None
    backend: str = "auto"
    graph: str = "auto"  # auto | graph | eager
    dtype: str = "auto"
    device: str = "auto"
    budget_s: float = DEFAULT_BUDGET_S
    seed: int = 0
    raw_samples: bool = True
    ceilings: bool = True
    tolerance: float | None = None
    max_samples: int | None = None
    fault: str | None = None  # test hook: a deliberate packing defect
    force: bool = False
    notes: list[str] = field(default_factory=list)


def _git_sha() -> str | None:
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None


def check_output_path(output: Path, force: bool) -> None:
    """Refuse to overwrite an existing results file unless forced (`BENCH.OUTPUT.EXISTS`)."""
    if output.exists() and not force:
        raise InputError.at(
            "BENCH.OUTPUT.EXISTS",
            "results file exists; refusing to overwrite it (pass --force)",
            str(output),
        )
    if not output.parent.is_dir():
        raise InputError.at(
            "BENCH.OUTPUT.NO_DIR", f"directory {output.parent} does not exist", str(output)
        )


def _usable_memory(torch: Any, device: Any) -> int:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * 0.85)
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 8 << 30
    return int(phys * 0.4)


def estimate_bytes(spec: StepSpec, geo: Geometry, dtype: str) -> int:
    """Device memory one point needs beyond the weights (K/V, activations, reference)."""
    b = DTYPE_BYTES[dtype]
    kv = 2 * geo.layers * spec.kv_tokens * geo.kv_dim * b
    act = spec.tokens * (4 * geo.hidden + geo.q_dim + 2 * geo.kv_dim + 3 * geo.ffn) * b * 3
    worst_kv = max(kv_len for _, kv_len in spec.per_request())
    ref = 2 * worst_kv * geo.q_dim * 8 + 2 * 256 * geo.q_heads * worst_kv * 8
    ref += max(q for q, _ in spec.per_request()) * (geo.hidden + 3 * geo.ffn) * 8 * 2
    return kv + act + ref


class _Run:
    """State of one run: device, weights, timer, budget clock."""

    def __init__(self, cfg: RunConfig, progress: Progress) -> None:
        from cbaudit.bench.torch_env import require_torch

        self.torch = torch = require_torch()
        from cbaudit.bench import measure, model

        self.model = model
        self.measure = measure
        self.cfg = cfg
        self.progress = progress
        self.t_start = time.monotonic()
        self.notes = list(cfg.notes)
        want = cfg.device
        if want == "cuda" and not torch.cuda.is_available():
            raise InputError.at(
                "BENCH.DEVICE.UNAVAILABLE",
                "--device cuda but torch sees no CUDA device",
                "--device",
            )
        self.on_gpu = want == "cuda" or (want == "auto" and torch.cuda.is_available())
        self.device = torch.device("cuda" if self.on_gpu else "cpu")
        if not self.on_gpu:
            # One intra-op thread: tiny shapes gain nothing from more, and spinning worker
            # threads on a shared machine turn sub-millisecond steps into jitter.
            torch.set_num_threads(1)
        self.dtype = (
            cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if self.on_gpu else "float32")
        )
        if not self.on_gpu and self.dtype != "float32":
            raise InputError.at(
                "BENCH.DTYPE.UNSUPPORTED",
                f"{self.dtype} on CPU: the CPU path runs float32 (checks, not speed)",
                "--dtype",
            )
        self.grid = self._grid()
        geo = self.grid.geometry
        if cfg.geometry != "auto":
            geo = geometry_named(cfg.geometry, file="--geometry")
        elif not self.on_gpu and geo.name != "tiny":
            self.notes.append(f"CPU run: grid geometry {geo.name!r} replaced by 'tiny'")
            geo = geometry_named("tiny")
        if cfg.layers is not None:
            geo = geo.with_layers(cfg.layers)
        self.geo = geo
        self.backend = self._backend()
        self.tolerance = cfg.tolerance or model.TOLERANCE[self.dtype]
        policy = measure.GPU_POLICY if self.on_gpu else measure.CPU_POLICY
        if cfg.max_samples is not None:
            policy = measure.Policy(
                policy.warmup_ms,
                policy.target_ms,
                min(policy.min_samples, cfg.max_samples),
                cfg.max_samples,
            )
        self.policy = policy
        self.timer = measure.Timer(self.device, policy)
        self.tdtype = model.DTYPES[self.dtype]
        self.weights = model.make_weights(geo, self.tdtype, self.device, cfg.seed)
        self.weights64 = [w.to(torch.float64) for w in self.weights]
        self.flex: Any = None
        if self.backend == "flex":
            from torch.nn.attention.flex_attention import flex_attention

            if self.on_gpu:
                # Every point has its own shapes, so each one compiles anew. Past dynamo's
                # recompile limit (8 by default) torch would quietly run flex eagerly, which
                # materialises every score and times something else: lift the limit.
                dynamo_cfg: Any = torch._dynamo.config
                for name in ("recompile_limit", "cache_size_limit"):
                    if hasattr(dynamo_cfg, name):  # renamed in torch 2.6; set one spelling
                        setattr(dynamo_cfg, name, max(getattr(dynamo_cfg, name), 256))
                        break
                self.flex = torch.compile(flex_attention, dynamic=False)
            else:
                self.flex = flex_attention
        self.device_facts = measure.device_facts(self.device)
        self.rng = random.Random(cfg.seed)
        self.ceilings: dict[str, Any] | None = None

    def _grid(self) -> Grid:
        cfg = self.cfg
        if cfg.specs:
            return adhoc_grid(list(cfg.specs), geometry_named("tiny"), cfg.sentinel)
        ref = cfg.grid if cfg.grid != "auto" else ("quick" if self.on_gpu else "tiny")
        return load_grid(ref)

    def _backend(self) -> str:
        want = self.cfg.backend
        half = self.dtype in ("bfloat16", "float16")
        if want == "auto":
            return "varlen" if self.on_gpu and half and self._has_varlen() else "sdpa-loop"
        if want == "varlen" and not (self.on_gpu and half and self._has_varlen()):
            raise InputError.at(
                "BENCH.BACKEND.UNAVAILABLE",
                "varlen needs CUDA, bf16/fp16 and torch.nn.attention.varlen (torch >= 2.10)",
                "--backend",
            )
        if want not in self.model.BACKENDS:
            raise InputError.at("BENCH.BACKEND.UNKNOWN", f"unknown backend {want!r}", "--backend")
        return want

    def _has_varlen(self) -> bool:
        try:
            from torch.nn.attention.varlen import varlen_attn
        except ImportError:
            return False
        try:
            self.model.varlen_binding(varlen_attn, causal=True)
        except (RuntimeError, TypeError, ValueError):
            return False  # a signature this runner does not know how to call
        return True

    def elapsed(self) -> float:
        return time.monotonic() - self.t_start

    def sync(self) -> None:
        if self.on_gpu:
            self.torch.cuda.synchronize(self.device)

    def point_record(self, gp: GridPoint) -> dict[str, Any]:
        spec = gp.spec
        roof = roofline(spec, self.geo, self.dtype)
        sheet = self.measure.spec_sheet(self.device_facts["name"]) if self.on_gpu else None
        spec_ms = (
            roof.time_ms(sheet["bandwidth"], sheet["flops16"])
            if sheet and self.dtype != "float32"
            else None
        )
        ceil_ms = None
        c = self.ceilings
        if c and c["copy"].get("status") == "ok" and c["gemm"].get("status") == "ok":
            ceil_ms = roof.time_ms(c["copy"]["achieved"], c["gemm"]["achieved"])
        return {
            "id": gp.id,
            "spec": spec.text(),
            "kind": spec.kind,
            "role": gp.role,
            "status": PointStatus.SKIPPED_BUDGET.value,
            "reason": None,
            "measure_order": None,
            "requests": spec.requests,
            "tokens": spec.tokens,
            "decode_rows": spec.decode_rows,
            "prefill_tokens": spec.prefill_tokens,
            "history_tokens": spec.history_tokens,
            "prefill_history_tokens": spec.prefill_history_tokens,
            "kv_tokens": spec.kv_tokens,
            "attention_pairs": spec.attention_pairs,
            "backend": self.backend,
            "graph_mode": "none",
            "evidence_class": None,
            "median_ms": None,
            "noisy": False,
            "remeasured": False,
            "correctness": None,
            "stats": None,
            "samples_ms": None,
            "roofline": {
                "evidence_class": EvidenceClass.MODELED.value,
                "bytes": roof.bytes,
                "flops": roof.flops,
                "intensity": roof.intensity,
                "modeled_ms_spec": spec_ms,
                "modeled_ms_ceilings": ceil_ms,
                "measured_over_modeled": None,
            },
        }

    def measure_point(self, gp: GridPoint, seed: int) -> dict[str, Any]:
        """Check, then time one point; every outcome is a record, never an exception."""
        torch = self.torch
        rec = self.point_record(gp)
        need = estimate_bytes(gp.spec, self.geo, self.dtype)
        have = _usable_memory(torch, self.device)
        if need > have:
            rec["status"] = PointStatus.SKIPPED_MEMORY.value
            rec["reason"] = f"needs about {need} bytes, {have} usable"
            return rec
        step = None
        fn: Callable[[], object] | None = None
        try:
            step = self.model.build_step(
                gp.spec,
                self.geo,
                self.weights,
                self.tdtype,
                self.device,
                self.backend,
                seed,
                self.cfg.fault,
                self.flex,
            )
            out = self._quiet(step)
            self.sync()
            corr = self.model.check_output(
                out, self.model.reference_forward(step, self.weights64), step.pack, self.tolerance
            )
            rec["correctness"] = corr.to_dict()
            if not corr.passed:
                rec["status"] = PointStatus.FAILED_CORRECTNESS.value
                rec["reason"] = (
                    f"{corr.code}: packed output differs from the float64 per-request reference"
                    f" (relative RMS {corr.rel_rms_err}, tolerance {corr.tolerance}); not timed"
                )
                return rec
            fn, mode, why = self._timed_callable(step)
            rec["graph_mode"] = mode
            samples = self.timer.samples(fn)
            stats = summarize(samples, self.rng)
            if is_noisy(stats):
                rec["remeasured"] = True
                samples = self.timer.samples(fn)
                stats = summarize(samples, self.rng)
            rec["noisy"] = is_noisy(stats)
            rec["stats"] = stats
            rec["median_ms"] = stats["median_ms"]
            rec["samples_ms"] = samples if self.cfg.raw_samples else None
            rec["status"] = PointStatus.OK.value
            rec["reason"] = why
            rec["evidence_class"] = (
                EvidenceClass.MEASURED_GPU if self.on_gpu else EvidenceClass.MEASURED_CPU
            ).value
            modeled = rec["roofline"]["modeled_ms_ceilings"] or rec["roofline"]["modeled_ms_spec"]
            if modeled:
                rec["roofline"]["measured_over_modeled"] = stats["median_ms"] / modeled
        except torch.OutOfMemoryError as err:
            rec["status"] = PointStatus.SKIPPED_MEMORY.value
            rec["reason"] = f"out of memory: {str(err)[:160]}"
        except Exception as err:  # a backend failure is recorded on the point, the run goes on
            rec["status"] = PointStatus.ERROR.value
            rec["reason"] = f"{type(err).__name__}: {str(err)[:240]}"
        finally:
            step = fn = None  # drop inputs and any captured graph before freeing the cache
            if self.on_gpu:
                torch.cuda.empty_cache()
        return rec

    def _quiet(self, step: Any) -> Any:
        import warnings

        with warnings.catch_warnings():
            # flex_attention without compile warns that it is unfused; the CPU path knows.
            warnings.filterwarnings("ignore", message=".*flex_attention called without.*")
            return step()

    def _timed_callable(self, step: Any) -> tuple[Callable[[], object], str, str | None]:
        if not self.on_gpu:
            return (lambda: self._quiet(step)), "eager", None
        if self.cfg.graph == "eager":
            return step, "eager", None
        replay, why = self.measure.capture_graph(step, self.device)
        if why is not None and self.cfg.graph == "graph":
            raise RuntimeError(why)
        return replay, ("eager" if why else "graph"), why


def run_bench(cfg: RunConfig, progress: Progress) -> dict[str, Any]:
    """Run a grid; return the results data (schema `bench-results`)."""
    r = _Run(cfg, progress)
    smi_start = r.measure.nvidia_smi() if r.on_gpu else None
    if cfg.ceilings:
        progress("ceilings: copy and GEMM probes")
        r.ceilings = r.measure.probe_ceilings(r.device, r.tdtype, r.device_facts["name"])
    points, sentinel = _measure_grid(r, progress)
    sent = _sentinel_summary(r, sentinel)
    fits = _fits(r, points)
    ev = EvidenceClass.MEASURED_GPU if r.on_gpu else EvidenceClass.MEASURED_CPU
    return {
        "format": RESULTS_FORMAT,
        "format_version": RESULTS_FORMAT_VERSION,
        "evidence_class": ev.value,
        "measured_on_gpu": r.on_gpu,
        "label": f"measured on GPU ({r.device_facts['name']})" if r.on_gpu else CPU_LABEL,
        "manifest": _manifest(r, smi_start),
        "ceilings": r.ceilings,
        "sentinel": sent,
        "points": points,
        "fits": fits,
    }


def sentinel_positions(count: int, repeats: int) -> set[int]:
    """Where, in a measuring order of `count` points, the sentinel is measured `repeats` times:
    spread evenly from the first position to the last (none when `repeats` is 0)."""
    if not repeats:
        return set()
    last = max(count - 1, 0)
    return {round(i * last / max(repeats - 1, 1)) for i in range(repeats)}


@dataclass(frozen=True)
class _Sentinel:
    """The drift sentinel: where it is measured, and its medians and sample CVs so far."""

    at: set[int]
    medians: list[float] = field(default_factory=list)
    cvs: list[float] = field(default_factory=list)


def _measure_sentinel(r: _Run, sentinel: _Sentinel) -> None:
    """Measure the sentinel point once, unless the budget is spent or a signal came."""
    assert r.grid.sentinel is not None
    if r.elapsed() > r.cfg.budget_s or STOP.is_set():
        return
    rec = r.measure_point(GridPoint("sentinel", r.grid.sentinel, "sentinel"), r.cfg.seed)
    if rec["median_ms"] is not None:
        sentinel.medians.append(rec["median_ms"])
        sentinel.cvs.append(rec["stats"]["cv"])


def _measure_grid(r: _Run, progress: Progress) -> tuple[list[dict[str, Any]], _Sentinel]:
    """Measure every point in a seeded random order, with the sentinel spread through it.
    Returns the point records in grid order, and the sentinel's measurements."""
    points = list(r.grid.points)
    order = list(range(len(points)))
    r.rng.shuffle(order)
    repeats = r.grid.sentinel_repeats if r.grid.sentinel is not None else 0
    sentinel = _Sentinel(sentinel_positions(len(order), repeats))
    records: dict[str, dict[str, Any]] = {}
    for pos, idx in enumerate(order):
        if pos in sentinel.at and pos == 0:
            _measure_sentinel(r, sentinel)
        gp = points[idx]
        records[gp.id] = _grid_point(r, gp, pos, idx, len(points), progress)
        if pos in sentinel.at and pos != 0:
            _measure_sentinel(r, sentinel)
    return [records[p.id] for p in points], sentinel


def _grid_point(
    r: _Run, gp: GridPoint, pos: int, idx: int, total: int, progress: Progress
) -> dict[str, Any]:
    """The record of the point measured at position `pos`: skipped (with the reason) once a
    signal came or the budget is spent, else measured with its own seed."""
    cfg = r.cfg
    if STOP.is_set():
        rec = r.point_record(gp)
        rec["reason"] = "run stopped by a signal before this point"
    elif r.elapsed() > cfg.budget_s:
        rec = r.point_record(gp)
        rec["reason"] = f"time budget of {cfg.budget_s} s spent"
    else:
        progress(f"[{pos + 1}/{total}] {gp.id} {gp.spec.text()}")
        rec = r.measure_point(gp, cfg.seed * 1_000_003 + idx)
        rec["measure_order"] = pos
    return rec


def _sentinel_summary(r: _Run, sentinel: _Sentinel) -> dict[str, Any] | None:
    """The sentinel's medians, their drift (flagged past DRIFT_FRACTION) and CV; None when the
    grid has no sentinel."""
    if r.grid.sentinel is None:
        return None
    d = drift(sentinel.medians)
    return {
        "spec": r.grid.sentinel.text(),
        "medians_ms": sentinel.medians,
        "sample_cv": sentinel.cvs,
        "drift": d,
        "drift_flag": d is not None and d > DRIFT_FRACTION,
        "cv": cv(sentinel.medians),
    }


def _fits(r: _Run, points: list[dict[str, Any]]) -> dict[str, Any]:
    """The roofline fits over the measured points (`compute_fits` decides what qualifies)."""
    from cbaudit.bench.fits import compute_fits

    sheet = r.measure.spec_sheet(r.device_facts["name"]) if r.on_gpu else None
    return compute_fits(
        points,
        on_gpu=r.on_gpu,
        spec_bandwidth=sheet["bandwidth"] if sheet else None,
        spec_flops=sheet["flops16"] if sheet and r.dtype != "float32" else None,
    )


def _run_notes(r: _Run) -> list[str]:
    """The caller's and the run's notes, then what every run leaves out or does not touch."""
    notes = [
        *r.notes,
        "positional rotation is left out (row-local; it does not change visibility)",
        "GPU clocks are never locked or reset; they are recorded at start and end",
    ]
    if not r.on_gpu:
        notes.insert(
            0,
            "CPU run: float32, correctness and plumbing only; timings are"
            " measured_cpu, not measured on GPU, and never feed fits",
        )
    if r.backend == "flex" and not r.on_gpu:
        notes.append("flex on CPU runs eager (unfused)")
    if r.cfg.fault:
        notes.append(f"deliberate packing defect injected: {r.cfg.fault}")
    if STOP.is_set():
        notes.append("run stopped early by a signal; unmeasured points are skipped")
    return notes


def _software(r: _Run) -> dict[str, Any]:
    """The tool, the host and torch that ran."""
    import torch as _t  # already imported by require_torch

    cudnn: Any = _t.backends.cudnn
    return {
        "tool": {"name": "cbaudit", "version": __version__, "git_sha": _git_sha()},
        "host": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
        },
        "torch": {
            "version": str(_t.__version__),
            "cuda": _t.version.cuda,
            "cudnn": cudnn.version() if r.on_gpu else None,
        },
    }


def _manifest(r: _Run, smi_start: Any) -> dict[str, Any]:
    """Everything a comparison of this run with another must check: software, device, shapes,
    sampling, grid, seed, budget, clocks, the correctness reference and the notes."""
    cfg = r.cfg
    notes = _run_notes(r)
    return {
        **_software(r),
        "device": r.device_facts,
        "dtype": r.dtype,
        "geometry": r.geo.to_dict(),
        "backend": r.backend,
        "graph_mode": cfg.graph if r.on_gpu else "eager",
        "timer": "cuda_events" if r.on_gpu else "perf_counter",
        "sampling": {
            **r.policy.to_dict(),
            "flush_bytes": r.measure.flush_bytes(r.device),
            "raw_samples": cfg.raw_samples,
        },
        "grid": {"name": r.grid.name, "sha256": r.grid.sha256, "points": len(r.grid.points)},
        "seed": cfg.seed,
        "budget_s": cfg.budget_s,
        "elapsed_s": r.elapsed(),
        "clocks": {
            "start": smi_start,
            "end": r.measure.nvidia_smi() if r.on_gpu else None,
            "note": "not locked or reset",
        },
        "correctness": {
            "reference": "every request recomputed alone in float64 from the same weights and"
            " K/V history",
            "metric": "worst per-request relative RMS error of the packed output",
            "tolerance": r.tolerance,
        },
        "notes": notes,
    }


def write_atomically(path: Path, text: str) -> None:
    """`cbaudit.io.atomic.atomic_write`, or the same temp-file-and-rename without cbaudit.io.

    `cbaudit.io` imports PyYAML; a bare GPU machine that runs only this process may not have
    it, and the results file must still never be half-written.
    """
    try:
        from cbaudit.io.atomic import atomic_write
    except ImportError:
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            # mkstemp's 0600 is not the output's mode: the replaced file's, else open()'s
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return
    atomic_write(path, text)


def exit_code_of(data: dict[str, Any]) -> int:
    """1 when a point failed its correctness check or raised, else 0."""
    bad = {PointStatus.FAILED_CORRECTNESS.value, PointStatus.ERROR.value}
    return int(
        ExitCode.FINDINGS if any(p["status"] in bad for p in data["points"]) else ExitCode.OK
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cbaudit.bench.runner", description=__doc__)
    p.add_argument("--output", "-o", required=True, type=Path)
    p.add_argument("--grid", default="auto")
    p.add_argument("--spec", action="append", default=[])
    p.add_argument("--sentinel", default=None)
    p.add_argument("--geometry", default="auto")
    p.add_argument("--layers", type=int, default=None)
    p.add_argument("--backend", default="auto", choices=["auto", "varlen", "flex", "sdpa-loop"])
    p.add_argument("--graph", default="auto", choices=["auto", "graph", "eager"])
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-raw-samples", action="store_true")
    p.add_argument("--no-ceilings", action="store_true")
    p.add_argument("--tolerance", type=float, default=None)
    p.add_argument("--max-samples", type=int, default=None)
    p.add_argument(
        "--inject-fault", default=None, choices=["cross_request", "future_visible", "row_swap"]
    )
    p.add_argument("--force", action="store_true")
    p.add_argument("--quiet", action="store_true")
    return p


def config_from(ns: argparse.Namespace) -> RunConfig:
    return RunConfig(
        output=ns.output,
        grid=ns.grid,
        specs=tuple(ns.spec),
        sentinel=ns.sentinel,
        geometry=ns.geometry,
        layers=ns.layers,
        backend=ns.backend,
        graph=ns.graph,
        dtype=ns.dtype,
        device=ns.device,
        budget_s=ns.budget_s,
        seed=ns.seed,
        raw_samples=not ns.no_raw_samples,
        ceilings=not ns.no_ceilings,
        tolerance=ns.tolerance,
        max_samples=ns.max_samples,
        fault=ns.inject_fault,
        force=ns.force,
    )


def main(argv: Sequence[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    cfg = config_from(ns)

    def progress(msg: str) -> None:
        if not ns.quiet:
            sys.stderr.write(f"bench: {msg}\n")
            sys.stderr.flush()

    def stop(signum: int, _frame: object) -> None:
        if STOP.is_set():  # a second signal: give up at once, writing nothing
            raise KeyboardInterrupt
        STOP.set()
        progress(f"{signal.Signals(signum).name}: finishing this point, then writing results")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if cfg.budget_s <= 0:
            raise InputError.at("BENCH.BUDGET.INVALID", "--budget-s must be > 0", "--budget-s")
        check_output_path(cfg.output, cfg.force)
        data = run_bench(cfg, progress)
        check_output_path(cfg.output, cfg.force)  # nothing appeared meanwhile
        write_atomically(cfg.output, canonical_json(data))
    except InputError as err:
        for f in err.findings:
            sys.stderr.write(f"cbaudit: {f.render()}\n")
        return int(ExitCode.UNUSABLE)
    except KeyboardInterrupt:
        sys.stderr.write("bench: stopped by a second signal; no results file written\n")
        return 130
    code = exit_code_of(data)
    ok = sum(1 for p in data["points"] if p["status"] == "ok")
    progress(f"wrote {cfg.output}: {ok}/{len(data['points'])} points ok ({data['label']})")
    return code


if __name__ == "__main__":
    sys.exit(main())


def runner_argv(
    output: Path,
    *,
    grid: str = "auto",
    specs: Sequence[str] = (),
    geometry: str = "auto",
    layers: int | None = None,
    backend: str = "auto",
    graph: str = "auto",
    dtype: str = "auto",
    device: str = "auto",
    budget_s: float = DEFAULT_BUDGET_S,
    seed: int = 0,
    raw_samples: bool = True,
    ceilings: bool = True,
    max_samples: int | None = None,
    fault: str | None = None,
    force: bool = False,
    quiet: bool = False,
) -> list[str]:
    """Check what can be checked without torch, then build the runner's argument list.

    Raises located InputErrors for unknown choices, bad specs and bad grid files, so the CLI
    reports them (exit 2) before a process is started.
    """
    choices = {
        "--backend": (backend, ("auto", "varlen", "flex", "sdpa-loop")),
        "--graph": (graph, ("auto", "graph", "eager")),
        "--dtype": (dtype, ("auto", "float32", "bfloat16", "float16")),
        "--device": (device, ("auto", "cpu", "cuda")),
        "--geometry": (geometry, ("auto", *sorted(GEOMETRIES))),
    }
    for flag, (value, allowed) in choices.items():
        if value not in allowed:
            raise InputError.at(
                "BENCH.OPTION.INVALID", f"{value!r} is not one of {', '.join(allowed)}", flag
            )
    if fault is not None and fault not in ("cross_request", "future_visible", "row_swap"):
        raise InputError.at("BENCH.OPTION.INVALID", f"unknown fault {fault!r}", "--inject-fault")
    if budget_s <= 0:
        raise InputError.at("BENCH.BUDGET.INVALID", "--budget-s must be > 0", "--budget-s")
    if specs:
        adhoc_grid(list(specs), geometry_named("tiny"))
    elif grid != "auto":
        load_grid(grid)
    if not torch_available():
        raise InputError.at(
            "BENCH.TORCH.MISSING", f"torch is not installed; {EXTRA_HINT}", "cbaudit bench run"
        )
    argv = [
        "--output", str(output), "--grid", grid, "--geometry", geometry, "--backend", backend,
        "--graph", graph, "--dtype", dtype, "--device", device, "--budget-s", str(budget_s),
        "--seed", str(seed),
    ]  # fmt: skip
    for s in specs:
        argv += ["--spec", s]
    if layers is not None:
        argv += ["--layers", str(layers)]
    if max_samples is not None:
        argv += ["--max-samples", str(max_samples)]
    if fault is not None:
        argv += ["--inject-fault", fault]
    if not raw_samples:
        argv.append("--no-raw-samples")
    if not ceilings:
        argv.append("--no-ceilings")
    if force:
        argv.append("--force")
    if quiet:
        argv.append("--quiet")
    return argv
