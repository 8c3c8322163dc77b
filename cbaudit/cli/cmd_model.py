"""`cbaudit model step-time|preemption-cost|graph-padding|hybrid-pools|profiles`.

The lecture's cost models as calculators over model and hardware profiles (shipped ids or
files). Each command parses its options, loads the profiles, runs the calculator
(`cbaudit.sim.calculator_report`), renders the report and exits. Text output shows every
input and output (as `-v` does elsewhere): a calculator's numbers are its answer.
"""

from __future__ import annotations

from pathlib import Path

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.model import Report, UsageError

model_app = typer.Typer(
    help=(
        "Calculators of lecture 4's cost models (derived): mixed-step time, preemption by"
        " recompute or swap, CUDA-graph padding, hybrid state pools."
    ),
    no_args_is_help=True,
)

ModelOpt = typer.Option(..., "--model", "-m", help="Model profile: a shipped id or a file.")
HardwareOpt = typer.Option(
    ..., "--hardware", "-H", help="Hardware profile: a shipped id or a file."
)
DtypeOpt = typer.Option(None, "--dtype", help="Peak FLOP/s of this dtype (default: the model's).")
MbuOpt = typer.Option(None, "--mbu", help="Fraction of the HBM bandwidth reached (0-1].")
MfuOpt = typer.Option(None, "--mfu", help="Fraction of the dense peak FLOP/s reached (0-1].")


def _render(
    report: Report, fmt: OutputFormat, output: Path | None, quiet: bool, verbose: int
) -> int:
    return emit(report, fmt, output, quiet, max(verbose, 1))


def _lengths(text: str) -> list[int]:
    """`512,4096,32768` -> [512, 4096, 32768]; anything else is a usage error."""
    out = []
    for part in text.split(","):
        item = part.strip().replace("_", "")
        if not item.isdigit() or int(item) < 1:
            raise UsageError(f"--lengths takes token counts >= 1 separated by commas: {text!r}")
        out.append(int(item))
    return out


@model_app.command("step-time")
def step_time(
    model: str = ModelOpt,
    hardware: str = HardwareOpt,
    decode_rows: int = typer.Option(0, "--decode-rows", "-B", min=0, help="Decode rows B."),
    context: int = typer.Option(
        0, "--context", min=0, help="Mean context of the decode rows, in tokens (Lbar)."
    ),
    prefill: int | None = typer.Option(
        None, "--prefill", min=0, help="Tokens of the prefill chunk in the step (Lc)."
    ),
    budget: int | None = typer.Option(
        None, "--budget", min=1, help="Token budget T: the chunk is T - B (not with --prefill)."
    ),
    prompt_len: int | None = typer.Option(
        None,
        "--prompt-len",
        min=1,
        help="Prompt length L: TTFT = ceil(L / (T - B)) x T_step(B, T - B) (needs --budget).",
    ),
    dtype: str | None = DtypeOpt,
    mbu: float | None = MbuOpt,
    mfu: float | None = MfuOpt,
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """T_step(B, Lc) = max(bytes / (beta MBU), FLOPs / (pi MFU)), and which term binds."""
    from cbaudit.sim import calculator_report as core
    from cbaudit.sim.profiles import load_hardware_profile, load_model_profile

    report = core.step_time_report(
        load_model_profile(model),
        load_hardware_profile(hardware),
        dtype=dtype,
        mbu=mbu,
        mfu=mfu,
        decode_rows=decode_rows,
        context=context,
        prefill=prefill,
        budget=budget,
        prompt_len=prompt_len,
    )
    return _render(report, fmt, output, quiet, verbose)


@model_app.command("preemption-cost")
def preemption_cost(
    model: str = ModelOpt,
    hardware: str = HardwareOpt,
    lengths: str = typer.Option(
        ..., "--lengths", "-L", help="Victim lengths in tokens, comma-separated: 512,4096."
    ),
    kv_bytes: list[float] = typer.Option(
        [],
        "--kv-bytes",
        help="K/V bytes per token of a swap column (repeatable; default: the model's).",
    ),
    link: float | None = typer.Option(
        None,
        "--link-bytes-per-s",
        help="Host link bandwidth, each direction (default: the hardware's host_link).",
    ),
    dtype: str | None = DtypeOpt,
    mfu: float | None = MfuOpt,
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """T_recompute(L) = aL + cL^2 against T_swap(L) = sL, and the crossover L* = (s - a) / c."""
    from cbaudit.sim import calculator_report as core
    from cbaudit.sim.profiles import load_hardware_profile, load_model_profile

    report = core.preemption_report(
        load_model_profile(model),
        load_hardware_profile(hardware),
        lengths=_lengths(lengths),
        kv_bytes=kv_bytes,
        link_bytes_per_s=link,
        dtype=dtype,
        mfu=mfu,
    )
    return _render(report, fmt, output, quiet, verbose)


@model_app.command("graph-padding")
def graph_padding(
    buckets: list[str] = typer.Option(
        ...,
        "--buckets",
        help="pow2 | stride:G | a list such as 1,2,4,8 (repeatable: one result per set).",
    ),
    max_batch: int = typer.Option(
        ..., "--max-batch", "-N", min=1, help="Largest batch N; B is uniform in 1..N."
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", help="Model profile: a padded token costs Lbar kv / (beta MBU)."
    ),
    hardware: str | None = typer.Option(
        None, "--hardware", "-H", help="Hardware profile (with --model)."
    ),
    context: int | None = typer.Option(
        None, "--context", min=0, help="Mean context Lbar in tokens (with --model)."
    ),
    token_ms: float | None = typer.Option(
        None, "--token-ms", help="Cost of one padded token in ms (instead of a model)."
    ),
    step_ms: float | None = typer.Option(
        None,
        "--step-ms",
        help="Step time the waste is a share of (default with --model: its decode step at N).",
    ),
    dtype: str | None = DtypeOpt,
    mbu: float | None = MbuOpt,
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Padding to CUDA-graph buckets: mean and worst case, graphs, waste per step and share."""
    from cbaudit.sim import calculator_report as core
    from cbaudit.sim.profiles import load_hardware_profile, load_model_profile

    report = core.graph_padding_report(
        buckets,
        max_batch,
        model_profile=None if model is None else load_model_profile(model),
        hardware=None if hardware is None else load_hardware_profile(hardware),
        context=context,
        step_ms=step_ms,
        token_ms=token_ms,
        dtype=dtype,
        mbu=mbu,
    )
    return _render(report, fmt, output, quiet, verbose)


@model_app.command("hybrid-pools")
def hybrid_pools(
    model: str = ModelOpt,
    context: int = typer.Option(
        ..., "--context", "-L", min=0, help="The request's length in tokens."
    ),
    hardware: str | None = typer.Option(
        None, "--hardware", "-H", help="Hardware profile: its host link carries the swap."
    ),
    link: float | None = typer.Option(
        None, "--link-bytes-per-s", help="Host link bandwidth, each direction (overrides -H)."
    ),
    replay: float | None = typer.Option(
        None,
        "--replay-tokens-per-s",
        help="Prefill rate that replays the prefix through the recurrence (measured; none by"
        " default).",
    ),
    memory: float | None = typer.Option(
        None, "--memory-bytes", help="Memory for both pools: the concurrency ceiling."
    ),
    state_share: float | None = typer.Option(
        None,
        "--state-share",
        help="Share of --memory-bytes given to the state pool (0-1); without it one pool"
        " holds both.",
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Per-token K/V plus a fixed per-request state: bytes, swap, replay, concurrency."""
    from cbaudit.sim import calculator_report as core
    from cbaudit.sim.profiles import load_hardware_profile, load_model_profile

    report = core.hybrid_report(
        load_model_profile(model),
        context=context,
        hardware=None if hardware is None else load_hardware_profile(hardware),
        link_bytes_per_s=link,
        replay_tokens_per_s=replay,
        memory_bytes=memory,
        state_share=state_share,
    )
    return _render(report, fmt, output, quiet, verbose)


@model_app.command("profiles")
def profiles(
    fmt: OutputFormat = FormatOpt,
    output: Path | None = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """List the shipped model and hardware profiles with the figures the calculators read."""
    from cbaudit.sim import calculator_report as core

    return emit(core.profiles_report(), fmt, output, quiet, verbose)


def register(app: typer.Typer) -> None:
    """Add `model` and its subcommands to the app."""
    app.add_typer(model_app, name="model")
