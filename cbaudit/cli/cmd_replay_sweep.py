"""`cbaudit replay sweep GENERATOR --policy ID --rates A:B:N --repeats K --attainment 0.9`.

Also the small group that lets `cbaudit replay WORKLOAD ...` keep working beside
`cbaudit replay sweep ...`: any first argument that is not a subcommand name runs the plain
replay (the hidden `run` subcommand).
"""

# No `from __future__ import annotations` here: Typer reads each option's annotation when
# the command is built, and a string annotation costs an eval (issue 13, start-up).

import os
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from cbaudit.cli.common import (
    ExecutorOpt,
    FormatOpt,
    OutputFormat,
    OutputOpt,
    QuietOpt,
    RayAddressOpt,
    VerboseOpt,
    emit,
)
from cbaudit.cli.goodput_option import GoodputCommand
from cbaudit.cli.progress import progress_bar
from cbaudit.io.executor import ExecutorKind, make_executor
from cbaudit.io.loader import load_document
from cbaudit.model import CheckResult, EvidenceClass, InputDigest, Report, UsageError


class ReplayGroup(TyperGroup):
    """A group whose default subcommand is `run`: `replay W --policy P` is `replay run W ...`."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    from cbaudit.cli.cmd_replay import _pairs as pairs

    return pairs(items, what)


def sweep(
    generator: Path = typer.Argument(
        ..., help="Workload generator spec (kind: workload-generator)."
    ),
    policy: str = typer.Option(..., "--policy", "-p", help="Policy id."),
    rates: str = typer.Option(
        ...,
        "--rates",
        metavar="A:B:N",
        help="N evenly spaced offered rates from A to B inclusive (the spec's rate unit).",
    ),
    repeats: int = typer.Option(3, "--repeats", min=1, help="Seeds per rate (seed + k)."),
    attainment: float = typer.Option(0.9, "--attainment", help="Target offered-load attainment."),
    goodput: list[str] = typer.Option(
        None,
        "--goodput",
        help="SLO limits as vllm bench serve takes them: --goodput ttft:MS tpot:MS e2el:MS"
        " (also tbt:MS).",
    ),
    window_ms: float = typer.Option(
        None, "--window-ms", help="Observation window (default: run end)."
    ),
    policy_option: list[str] = typer.Option(None, "--policy-option", help="key=value, repeatable."),
    cost_model: str = typer.Option("unit", "--cost-model", help="unit | roofline | table."),
    cost_option: list[str] = typer.Option(None, "--cost-option", help="key=value, repeatable."),
    seed: int = typer.Option(None, "--seed", help="Base seed (default: the spec's seed)."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Parallel processes (default: CPUs)."),
    executor_kind: ExecutorKind = ExecutorOpt,
    ray_address: str | None = RayAddressOpt,
    fmt: OutputFormat = FormatOpt,
    output: Path = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Replay GENERATOR at each offered rate and estimate the goodput capacity."""
    from cbaudit.sim import sweep as core  # here: `replay run` need not load the sweep
    from cbaudit.sim.slo import parse_goodput

    if not 0 < attainment <= 1:
        raise UsageError("--attainment must be in (0, 1]")
    try:
        grid = core.parse_rates(rates)
        limits = parse_goodput(goodput or [])
    except ValueError as err:
        raise UsageError(str(err)) from None
    doc = load_document(generator, display=str(generator))
    core.require_generator(doc)
    spec = dict(doc.data)
    core.rate_field(spec, doc.path)
    base = seed if seed is not None else spec.get("seed")
    if not isinstance(base, int) or isinstance(base, bool):
        raise UsageError(f"{generator}: declare an integer `seed` in the spec or pass --seed")
    executor = make_executor(executor_kind, jobs or os.cpu_count() or 1, ray_address)
    shipment = None
    if executor.remote:  # the cells' inputs travel with them: the spec and the files it names
        from cbaudit.io.shipping import pack

        base_dir = generator.resolve().parent
        shipment = pack((), core.referenced_files(spec, base_dir))
    config = core.SweepConfig(
        spec=spec,
        spec_file=doc.path,
        base_dir=str(generator.resolve().parent),
        policy=policy,
        policy_options=_pairs(policy_option, "--policy-option"),
        cost_model=cost_model,
        cost_options=_pairs(cost_option, "--cost-option"),
        goodput=limits,
        window_ms=window_ms,
        base_seed=base,
        shipment=shipment,
    )
    for note in core.notes(config):  # (even with --quiet, as `replay` prints it)
        sys.stderr.write(f"cbaudit: note: {note}\n")
    try:
        with progress_bar("sweep", "cells", quiet=quiet) as progress:
            result = core.run_sweep(
                config,
                grid,
                repeats=repeats,
                attainment=attainment,
                executor=executor,
                progress=progress,
            )
    finally:
        executor.close()
    cap = result["goodput_capacity"]
    check = CheckResult(
        check="replay-sweep",
        subject=str(generator),
        metrics=result,
        evidence_class=EvidenceClass.SYNTHETIC,
        reason=f"goodput capacity estimate {cap['estimate']} (per repeat {cap['per_repeat']})",
        charts=(
            {
                "type": "lines",
                "title": f"Offered-load attainment by offered rate ({policy})",
                "series": {
                    "mean": [[p["rate"], p["attainment_mean"]] for p in result["per_rate"]],
                    "target": [[grid[0], attainment], [grid[-1], attainment]],
                },
                "x_label": f"offered rate ({result['rate_unit']})",
                "y_label": "offered-load attainment",
            },
        ),
    )
    report = Report.build(
        "replay sweep",
        [check],
        inputs=[InputDigest.of(generator, display=str(generator))],
        summary={"policy": policy, "goodput_capacity": cap["estimate"]},
        executor=executor.provenance(),
    )
    return emit(report, fmt, output, quiet, verbose)


def register(replay_app: typer.Typer) -> None:
    """Add `sweep` to the `replay` group."""
    replay_app.command("sweep", cls=GoodputCommand)(sweep)
