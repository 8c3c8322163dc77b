"""`cbaudit bench run|check|attach|spec|grids`: the torch mixed-step runner and its files.

The CLI never imports torch: `bench run` checks its inputs here, then starts
`python -m cbaudit.bench.runner` in its own process and renders the results file it wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.io.atomic import atomic_write
from cbaudit.model import CheckResult, ExitCode, InputDigest, InputError, Report, UsageError

bench_app = typer.Typer(
    help=(
        "Measure mixed-step timings with torch (extra `bench`), check results files, "
        "attach them to replay reports."
    ),
    no_args_is_help=True,
)


@bench_app.command("run")
def bench_run(
    results: Path = typer.Argument(..., help="Results file to write (JSON)."),
    grid: str = typer.Option(
        "auto",
        "--grid",
        "-g",
        help="tiny | quick | default | a grid file (auto: quick on CUDA, tiny on CPU).",
    ),
    spec: list[str] = typer.Option(
        [], "--spec", "-s", help="Measure these step specs instead of a grid."
    ),
    geometry: str = typer.Option("auto", "--geometry", help="auto | 8b | tiny."),
    layers: int | None = typer.Option(None, "--layers", min=1, help="Override the layer count."),
    backend: str = typer.Option("auto", "--backend", help="auto | varlen | flex | sdpa-loop."),
    graph: str = typer.Option("auto", "--graph", help="auto | graph | eager (CUDA graphs)."),
    dtype: str = typer.Option("auto", "--dtype", help="auto | bfloat16 | float16 | float32."),
    device: str = typer.Option("auto", "--device", help="auto | cuda | cpu."),
    budget_s: float = typer.Option(150.0, "--budget-s", help="Hard time budget in seconds."),
    seed: int = typer.Option(0, "--seed", help="Seed of weights, inputs, order, bootstrap."),
    raw_samples: bool = typer.Option(True, "--raw-samples/--no-raw-samples", help="Keep samples."),
    ceilings: bool = typer.Option(True, "--ceilings/--no-ceilings", help="Copy and GEMM probes."),
    max_samples: int | None = typer.Option(
        None, "--max-samples", min=1, help="Cap samples per point."
    ),
    inject_fault: str | None = typer.Option(None, "--inject-fault", hidden=True),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing results file."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Measure a grid in a separate torch process; write RESULTS; report every point."""
    from cbaudit.bench.runner import check_output_path, runner_argv

    check_output_path(results, force)
    argv = runner_argv(
        results,
        grid=grid,
        specs=spec,
        geometry=geometry,
        layers=layers,
        backend=backend,
        graph=graph,
        dtype=dtype,
        device=device,
        budget_s=budget_s,
        seed=seed,
        raw_samples=raw_samples,
        ceilings=ceilings,
        max_samples=max_samples,
        fault=inject_fault,
        force=force,
        quiet=quiet,
    )
    from cbaudit.cli.signals import run_forwarding

    returncode = run_forwarding([sys.executable, "-m", "cbaudit.bench.runner", *argv])
    if returncode == ExitCode.UNUSABLE:
        return int(ExitCode.UNUSABLE)
    if not results.is_file():
        raise InputError.at(
            "BENCH.RUNNER.NO_OUTPUT",
            f"the runner exited {returncode} without writing the results file",
            str(results),
        )
    return _report_on(results, "bench run", fmt, output, quiet, verbose)


def _report_on(
    path: Path, command: str, fmt: OutputFormat, output: Path | None, quiet: bool, verbose: int
) -> int:
    from cbaudit.bench.checks import results_checks, summary_of
    from cbaudit.bench.results import load_results

    loaded = load_results(path)
    report = Report.build(
        command,
        results_checks(loaded),
        inputs=[InputDigest(path=loaded.path, sha256=loaded.sha256)],
        summary=summary_of(loaded),
    )
    return emit(report, fmt, output, quiet, verbose)


@bench_app.command("check")
def bench_check(
    results: Path = typer.Argument(..., help="A results file."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Validate a results file and report every point with its evidence class."""
    return _report_on(results, "bench check", fmt, output, quiet, verbose)


@bench_app.command("attach")
def bench_attach(
    report: Path = typer.Argument(..., help="A replay JSON report (cbaudit replay --format json)."),
    results: Path = typer.Argument(..., help="A bench results file."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the new report here."),
    in_place: bool = typer.Option(False, "--in-place", help="Rewrite REPORT itself."),
) -> int:
    """Add RESULTS' step timings (with their evidence classes and sha256) to REPORT."""
    from cbaudit.bench.attach import attach
    from cbaudit.bench.results import load_results
    from cbaudit.io.loader import load_document
    from cbaudit.report.json_report import dumps_canonical

    if (output is None) == (not in_place):
        raise UsageError("bench attach: give exactly one of --output FILE or --in-place")
    loaded = load_results(results)
    doc = load_document(report, fmt="json", expect=dict)
    new = attach(doc.data, loaded, display_path=str(results), file=doc.path)
    target = report if in_place else output
    assert target is not None
    atomic_write(target, dumps_canonical(new))
    n = sum(1 for p in loaded.points if p.usable)
    typer.echo(f"attached {n} measured step timings ({loaded.evidence_class.value}) to {target}")
    return 0


@bench_app.command("spec")
def bench_spec(
    specs: list[str] = typer.Argument(..., help="Step specs, e.g. 32q1s2k_q512s4k."),
    geometry: str = typer.Option("8b", "--geometry", help="8b | tiny."),
    dtype: str = typer.Option("bfloat16", "--dtype", help="bfloat16 | float16 | float32."),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Parse step specs and show their totals and modeled bytes and FLOPs (no torch)."""
    from cbaudit.bench.geometry import DTYPE_BYTES, geometry_named, roofline
    from cbaudit.bench.spec import parse_spec
    from cbaudit.model import EvidenceClass

    if dtype not in DTYPE_BYTES:
        raise UsageError(f"--dtype must be one of {', '.join(DTYPE_BYTES)}")
    geo = geometry_named(geometry, file="--geometry")
    out = []
    for i, text in enumerate(specs):
        parsed = parse_spec(text, file="<argv>", pointer=f"/{i}")
        roof = roofline(parsed, geo, dtype)
        metrics = {
            "spec": parsed.text(),
            "kind": parsed.kind,
            "requests": parsed.requests,
            "tokens": parsed.tokens,
            "decode_rows": parsed.decode_rows,
            "prefill_tokens": parsed.prefill_tokens,
            "history_tokens": parsed.history_tokens,
            "prefill_history_tokens": parsed.prefill_history_tokens,
            "attention_pairs": parsed.attention_pairs,
            "bytes": roof.bytes,
            "flops": roof.flops,
            "intensity": roof.intensity,
        }
        out.append(
            CheckResult(
                check="bench.spec",
                subject=text,
                metrics=metrics,
                evidence_class=EvidenceClass.MODELED,
                reason=f"{parsed.kind}: {parsed.tokens} rows,"
                f" {roof.bytes} bytes, {roof.flops} FLOPs (modeled)",
            )
        )
    summary = {"geometry": geo.to_dict(), "dtype": dtype}
    return emit(Report.build("bench spec", out, summary=summary), fmt, output, quiet, verbose)


@bench_app.command("grids")
def bench_grids() -> int:
    """List the packaged grids with their geometry and point counts."""
    from cbaudit.bench.grid import PACKAGED_GRIDS, load_grid

    for name in PACKAGED_GRIDS:
        g = load_grid(name)
        sentinel = g.sentinel.text() if g.sentinel else "-"
        typer.echo(f"{name}\t{g.geometry.name}\t{len(g.points)} points\tsentinel {sentinel}")
    return 0


def register(app: typer.Typer) -> None:
    """Add `bench` and its subcommands to the app."""
    app.add_typer(bench_app, name="bench")
