"""`cbaudit conform TRACE [--workload WORKLOAD]`: vllm-v1 held to vLLM's own decisions."""

from __future__ import annotations

from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.conform.core import ConformInput, conform, to_contract
from cbaudit.model import Report, UsageError
from cbaudit.sim.engine import Validation


def conform_cmd(
    trace: Path = typer.Argument(
        ..., help="vLLM's steps: a driver trace (JSONL) or a file of the cbaudit vLLM recorder."
    ),
    workload: Path = typer.Option(
        None,
        "--workload",
        "-w",
        help="The driver workload the trace ran (JSON); a recorder file carries its own.",
    ),
    validate: Validation = typer.Option(
        Validation.CONTRACT,
        "--validate",
        help="contract | off: check cbaudit's own plans and results while it replays.",
    ),
    contract_out: Path = typer.Option(
        None,
        "--to-contract",
        help="Compare nothing: write vLLM's decisions as contract records (JSONL) to this file,"
        " that validate-plan then checks.",
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Replay vLLM's workload under vllm-v1 and compare every step with vLLM's decisions.

    Exit codes: 0 every step agrees, 1 a step diverges (the first divergence is shown) or
    cbaudit's replay broke the contract, 2 unusable input (including a recorder file cut
    short by an aborted request, a workload that can never finish, or an engine setting
    cbaudit does not model).
    """
    case = ConformInput(trace, workload)
    if contract_out is not None:
        if contract_out.resolve() == trace.resolve():
            raise UsageError("--to-contract would overwrite the trace it reads")
        result = to_contract(case, contract_out)
    else:
        result = conform(case, validation=validate)
    summary = {"kind": "to-contract" if contract_out is not None else "compare"}
    report = Report.build("conform", [result], inputs=case.digests(), summary=summary)
    return emit(report, fmt, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    """Add `conform` to the app."""
    app.command("conform")(conform_cmd)
