"""`cbaudit replay WORKLOAD --policy ID`: a deterministic, contract-checked replay."""

# No `from __future__ import annotations` here: Typer reads each option's annotation when
# the command is built, and a string annotation costs an eval (issue 13, start-up).

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import typer

from cbaudit.cli.common import FormatOpt, OutputFormat, OutputOpt, QuietOpt, VerboseOpt, emit
from cbaudit.cli.goodput_option import GoodputCommand
from cbaudit.cli.progress import progress_bar
from cbaudit.model import UsageError
from cbaudit.sim import replay as core
from cbaudit.sim import replay_compare as comparable
from cbaudit.sim.engine import Validation


def _pairs(items: list[str] | None, what: str) -> dict[str, Any]:
    """`key=value` options; values parse as JSON when they can (numbers, booleans)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {item!r} is not key=value")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


@contextmanager
def _progress_bar(quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    """Finished requests of a long replay on a terminal (after two seconds; not with -q)."""
    with progress_bar("replay", "requests finished", quiet=quiet, delay_s=2.0) as bar:
        yield None if bar is None else (lambda done, total: bar(done, total, ""))


def _list_policies(value: bool) -> None:
    """Print every registered policy with its one-line summary, then exit 0."""
    if not value:
        return
    from cbaudit.policies.registry import POLICIES

    width = max(len(pid) for pid in POLICIES.ids())
    for pid in POLICIES.ids():
        typer.echo(f"{pid:<{width}}  {POLICIES.summary(pid)}")
    raise typer.Exit(0)


def replay(
    workload: Path = typer.Argument(
        ...,
        help="WorkloadManifest or workload-generator spec (JSON or YAML), or a request trace"
        " (.csv: Splitwise/Vidur, Azure, BurstGPT; .jsonl: Mooncake).",
    ),
    policy: str = typer.Option(..., "--policy", "-p", help="Policy id (see --list-policies)."),
    _list: bool = typer.Option(
        False,
        "--list-policies",
        callback=_list_policies,
        is_eager=True,
        expose_value=False,
        help="List the registered policies with a one-line summary each, and exit.",
    ),
    policy_option: list[str] = typer.Option(None, "--policy-option", help="key=value, repeatable."),
    cost_model: str = typer.Option("unit", "--cost-model", help="unit | roofline | table."),
    cost_option: list[str] = typer.Option(None, "--cost-option", help="key=value, repeatable."),
    budget: list[str] = typer.Option(None, "--budget", help="Override a budget: key=value."),
    horizon: int = typer.Option(None, "--horizon", min=1, help="Stop after N iterations."),
    window: list[int] = typer.Option(
        None, "--window", min=1, help="Also report occupancy on [1, N]."
    ),
    seed: int = typer.Option(
        None, "--seed", help="Draw a generator spec with this seed (a manifest only records it)."
    ),
    samples: bool = typer.Option(
        False,
        "--samples/--no-samples",
        help="Also put every per-request sample inline in the report (small runs; see"
        " --samples-out).",
    ),
    samples_out: Path = typer.Option(
        None,
        "--samples-out",
        help="Stream per-request samples and records to FILE.jsonl (for compare-results; the"
        " report names it with its sha256).",
    ),
    per_request: bool = typer.Option(
        False,
        "--per-request/--no-per-request",
        help="Also put one record per request inline in the report (default: summaries only).",
    ),
    trace_out: Path = typer.Option(None, "--trace-out", help="Write state/plan/result JSONL."),
    steps: int = typer.Option(
        0,
        "--steps",
        min=0,
        help="Also report the first N iterations one per line: their time and the binding"
        " roofline term (memory bandwidth or compute), admissions and K/V blocks left.",
    ),
    validate: Validation = typer.Option(
        Validation.CONTRACT, "--validate", help="contract | fast | off."
    ),
    no_validate: bool = typer.Option(False, "--no-validate", help="Same as --validate off."),
    per_iteration: bool = typer.Option(
        False,
        "--per-iteration",
        help="Run every iteration through the policy and the checks (no quiet decode"
        " stretches in closed form). The report is the same; it is the reference path.",
    ),
    goodput: list[str] = typer.Option(
        None,
        "--goodput",
        help="SLO limits for every request, as vllm bench serve takes them: --goodput ttft:MS"
        " tpot:MS e2el:MS (space-separated; also tbt:MS, the largest gap between tokens).",
    ),
    slo_window_ms: float = typer.Option(
        None, "--slo-window-ms", help="Report the SLO outcome ledger over [0, MS]."
    ),
    engine_config: Path = typer.Option(
        None,
        "--engine-config",
        help="A vLLM engine's scheduler and cache arguments by vLLM's names (YAML or JSON):"
        " they set the budgets, vllm-v1's options and each request's max_model_len limit"
        " (see docs/replay.md).",
    ),
    preemption: list[str] = typer.Option(
        None,
        "--preemption",
        help="Preemption model key=value: mode=recompute|swap|auto, link_bytes_per_ms=N,"
        " read_bytes_per_ms=N, bytes_per_row=N, host_pool_bytes=N, log_limit=N,"
        " recompute_ms_per_token=A, recompute_ms_per_token_sq=C (default: recompute; swap"
        " with --state-pool; see docs/replay.md).",
    ),
    state_pool: list[str] = typer.Option(
        None,
        "--state-pool",
        help="A hybrid model's per-request state pool, key=value: capacity_bytes=N and"
        " bytes_per_request=N or model=PROFILE (default: the roofline model's state).",
    ),
    graph_buckets: str = typer.Option(
        None,
        "--graph-buckets",
        help="Pad each step to a captured CUDA-graph bucket: pow2, stride:G or a list"
        " (1,2,4,8); padded tokens are costed and reported.",
    ),
    graph_max_batch: int = typer.Option(
        None,
        "--graph-max-batch",
        min=1,
        help="The largest batch captured (with --graph-buckets; a list's default is its"
        " largest size); larger steps run without a graph.",
    ),
    fmt: OutputFormat = FormatOpt,
    output: Path = OutputOpt,
    quiet: bool = QuietOpt,
    verbose: int = VerboseOpt,
) -> int:
    """Replay WORKLOAD under a policy; every plan and result is contract-checked."""
    if slo_window_ms is not None and not (0 < slo_window_ms < float("inf")):
        raise UsageError(f"--slo-window-ms must be a finite number > 0, got {slo_window_ms}")
    engine = None
    if engine_config is not None:
        from cbaudit.sim.engine_config import load_engine_config

        engine = load_engine_config(engine_config)
    loaded, source = comparable.load_replay_workload(workload, seed=seed)
    options = core.ReplayOptions(
        policy=policy,
        policy_options=_pairs(policy_option, "--policy-option"),
        cost_model=cost_model,
        cost_options=_pairs(cost_option, "--cost-option"),
        horizon=horizon,
        seed=seed,
        budgets=_pairs(budget, "--budget"),
        windows=tuple(window or ()),
        validation=Validation.OFF if no_validate else validate,
        goodput=_goodput(goodput),
        slo_window_ms=slo_window_ms,
        preemption=_pairs(preemption, "--preemption"),
        state_pool=_pairs(state_pool, "--state-pool"),
        graph_buckets=_graph_buckets(graph_buckets, graph_max_batch),
        engine_config=engine,
        stretches=not per_iteration,
        per_request=per_request,
    )
    out_file = None
    if samples_out is not None:
        base = output.parent if output is not None else Path(".")
        out_file = (samples_out, os.path.relpath(samples_out, base))
    sink = core.trace_file(trace_out) if trace_out is not None else nullcontext(None)
    notes: list[str] = []
    with sink as trace, _progress_bar(quiet) as progress:
        report, _ = comparable.replay_report(
            loaded,
            source,
            options,
            samples=samples,
            trace=trace,
            progress=progress,
            steps=steps,
            samples_out=out_file,
            notes=notes,
        )
    for note in notes:  # (even with --quiet: they say how far the report was checked)
        sys.stderr.write(f"cbaudit: note: {note}\n")
    return emit(report, fmt, output, quiet, verbose)


def _graph_buckets(spec: str | None, max_batch: int | None) -> dict[str, Any]:
    if spec is None:
        if max_batch is not None:
            raise UsageError("--graph-max-batch needs --graph-buckets")
        return {}
    out: dict[str, Any] = {"buckets": spec}
    if max_batch is not None:
        out["max_batch"] = max_batch
    return out


def _goodput(items: list[str] | None) -> dict[str, float]:
    if not items:
        return {}  # what parse_goodput([]) gives, without loading the SLO module
    from cbaudit.sim.slo import parse_goodput

    try:
        return parse_goodput(items or [])
    except ValueError as err:
        raise UsageError(str(err)) from None


def register(app: typer.Typer) -> None:
    """Add `replay` (default subcommand `run`) and `replay sweep` to the app."""
    from cbaudit.cli import cmd_replay_sweep

    replay_app = typer.Typer(
        cls=cmd_replay_sweep.ReplayGroup,
        help="Replay WORKLOAD under a policy (`replay WORKLOAD --policy ID`, the same as"
        " `replay run ...`), or sweep offered rates (`replay sweep`).",
        no_args_is_help=True,
    )
    replay_app.command("run", cls=GoodputCommand)(replay)
    cmd_replay_sweep.register(replay_app)
    app.add_typer(replay_app, name="replay")
