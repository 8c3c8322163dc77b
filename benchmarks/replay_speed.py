"""Replay speed and memory on real request traces, side by side with peers, interleaved A B A B.

    .venv/bin/python benchmarks/replay_speed.py [--trace FILE]... [--rounds 5]
        [--reference] [--limit N]... [--rate-scale X]... [--skip-failed]
        [--blis BIN [--blis-data DIR]] [--vidur DIR]
        [--vidur-scheduler sarathi|vllm] [--rss-ratio N] [--python PY]... [--source]

Configuration (printed before the figures): vLLM-shaped scheduling (`vllm-v1`), token budget
2048 (`max_num_batched_tokens`), 256 sequences (`max_num_seqs`), K/V block 16, 26,312 blocks,
roofline Llama-3-8B on an H100 (`mfu=0.7`, `mbu` the profile's 1.0), contract validation on,
the default report (summaries) written to a file. Default trace: the Splitwise code trace
(`../shared/traces/splitwise_code.csv`, 8,819 requests); `--trace` takes any trace cbaudit
reads (Splitwise/Vidur, Azure 2023 and 2024, BurstGPT CSV, Mooncake JSON Lines:
docs/workloads.md), repeatable; the peers get the rows cbaudit's importer reads from it.
`--rate-scale X` (repeatable) also runs every trace at X times its arrival rate: each arrival
offset divided by X, rounded to the microsecond, the same rows written out for every tool (a
Splitwise CSV for cbaudit). The traces' own load is one point; a trace you do not have may be
busier, and the ratio to a peer changes with the load (docs/replay.md, "Eighth run").
`--limit N` (repeatable) measures only the first N rows of each trace, once per N: the ratio
to a peer also changes with the trace's size, since start-up weighs more on a small trace
(docs/replay.md, "Tenth run").
`--skip-failed` leaves out the rows of failed requests (0 output tokens: BurstGPT's
`BurstGPT_1.csv` logs them; cbaudit refuses such a row otherwise), as a generator spec's
`trace.skip_failed` does, and gives cbaudit the rows kept as a Splitwise CSV.

Tools, each timed as a whole process, start to exit (interpreter start-up, imports, trace
parse, replay, metrics, report written):

* `cbaudit`: `cbaudit replay run TRACE -p vllm-v1 ...` (the fast path: quiet decode stretches)
  from the wheel that `pip install .` builds from this checkout: built (`pip wheel`, untimed),
  unpacked into a scratch folder and its bytecode compiled, as `pip install` does. Where a C
  compiler and the Python headers are found, the wheel's hot modules are compiled by mypyc
  (hatch_build.py); its `cbaudit --version` line, printed first, says which build it is. With
  `--cbaudit CMD`, that command instead;
* `cbaudit-source` (`--source`): the same command on this checkout's sources as they are
  (interpreted: what an editable install runs, and the wheel where no compiler is found); its
  report is checked byte for byte against cbaudit's;
* `cbaudit-ref` (`--reference`): the same with `--per-iteration` (every iteration through the
  policy and the checks; the same report, checked byte for byte here);
* `cbaudit@VERSION` (`--python PY`, repeatable): the same command under another interpreter
  PY that has cbaudit installed (same report, checked byte for byte here); the interpreter is
  part of the configuration (a CPython built without profile-guided optimisation runs the
  same replay measurably slower), so every interpreter's version, path and the optimisation
  flags its `configure` was given are printed;
* `blis` (`--blis` binary, built outside the repository; `--blis-data` its checkout with
  `defaults.yaml`, `model_configs/`, `hardware_config.json`): `blis replay` on the same rows
  converted to its TraceV2 pair (outside the timing), roofline `llama-3.1-8b-instruct` (same
  shape as Llama-3-8B) on H100, `--cache-signal-delay 0` (its fastest mode), `--horizon`
  the largest tick (replay's default stops at twice the last arrival, which leaves an
  overloaded trace's queue unserved; cbaudit serves every request);
* `vidur-<scheduler>` (`--vidur` checkout with its own `.venv`): `python -m vidur.main` with
  the trace-replay generator on the same rows, batch cap 256, block 16, 26,312 blocks, chunk
  2048 (sarathi), no plots or traces; one untimed warm-up run first (predictor cache).

Each round runs every tool once in the same order (A B C A B C ...), so all see the same load;
the load average is printed before every round. Printed per tool: min and median wall seconds,
requests per second at the median, the median CPU time (user + system, all threads: a tool
whose runtime works on several cores, as Go's collector does, shows more CPU than wall time),
peak RSS (the child's ru_maxrss); then cbaudit's wall-time ratio to each peer (median and
min) and its requests/s ratio. A run that fails or finishes
fewer requests than the trace has stops the benchmark (exit 1). `--rss-ratio N` also runs
cbaudit on the first N rows of each trace, interleaved with the whole trace, and prints the
peak-RSS ratio whole / first N (the flat-memory check: the 19k-request conversation trace
against its first 2,000 rows). Nothing of the peers is part of this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "splitwise_code.csv"
TOKEN_BUDGET, SEQ_BUDGET, BLOCK, BLOCKS = 2048, 256, 16, 26312
BLIS_MODEL = "meta-llama/llama-3.1-8b-instruct"
BLIS_MODEL_DIR = "model_configs/llama-3.1-8b-instruct"
VIDUR_MODEL, VIDUR_DEVICE = "meta-llama/Meta-Llama-3-8B", "a100"
RF = "random_forrest_execution_time_predictor_config"  # (Vidur's spelling)
VIDUR_LOOP = re.compile(r"(\d\d:\d\d:\d\d) simulator\.py:\d+\] (Starting|Simulation ended)")

Rows = list[tuple[Decimal, int, int]]


def read_trace(path: Path, limit: int | None = None, skipped: list[int] | None = None) -> Rows:
    """(arrival s after the first row, prompt, output) of every request cbaudit reads from the
    trace, through cbaudit's own importer: any format it reads (Splitwise/Vidur, Azure 2023 and
    2024, BurstGPT, Mooncake JSON Lines), and the very rows the peers are then given. With
    `skipped` (a list), the failed rows (0 output tokens, as BurstGPT logs them) are left out
    and their line numbers appended to it, as a generator spec's `skip_failed` does."""
    from cbaudit.model import InputError
    from cbaudit.sim.importers import iter_trace_rows

    try:
        rows = [
            (r.arrival_ms / 1000, r.prompt_tokens, r.output_tokens)
            for r in iter_trace_rows(
                path, limit=limit, skip_failed=skipped is not None, skipped=skipped
            )
        ]
    except InputError as err:
        hint = " (here: --skip-failed)" if skipped is None and "skip_failed" in str(err) else ""
        sys.exit(f"cbaudit refuses the trace, so it cannot be compared: {err}{hint}")
    t0 = rows[0][0]
    return [(t - t0, p, d) for t, p, d in rows]


def scaled(rows: Rows, rate: Decimal) -> Rows:
    """`rows` at `rate` times their arrival rate: each arrival offset divided by `rate`,
    rounded to the microsecond (what BLIS's integer-microsecond trace can hold)."""
    us = Decimal("0.000001")
    return [((t / rate).quantize(us), p, d) for t, p, d in rows]


def write_splitwise(rows: Rows, path: Path) -> None:
    """`rows` as a Splitwise CSV (arrival seconds, prompt, output): the trace Vidur's replay
    generator reads, and the one cbaudit is given for rows that are not the file's own."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("arrived_at,num_prefill_tokens,num_decode_tokens\n")
        for t, p, d in rows:
            fh.write(f"{t},{p},{d}\n")


def row_count(text: str) -> int:
    """`--limit`'s value: a positive whole number of rows."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of rows: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"a row count must be at least 1: {text!r}")
    return n


def rate_scale(text: str) -> Decimal:
    """`--rate-scale`'s value: a positive decimal number."""
    try:
        value = Decimal(text)
    except ArithmeticError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value.is_finite() or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def write_prefix(src: Path, n: int, dst: Path) -> None:
    """The trace's first n requests as a trace of its own: a CSV's header and its first n
    data lines, or a JSON Lines file's first n lines (blank lines are not requests)."""
    with src.open(encoding="utf-8", newline="") as fh, dst.open("w", encoding="utf-8") as out:
        if src.suffix.lower() != ".jsonl":
            out.write(fh.readline())
        for line in fh:
            if n <= 0:
                break
            if line.strip():
                out.write(line if line.endswith("\n") else line + "\n")
                n -= 1


BLIS_COLUMNS = (
    "request_id,client_id,tenant_id,slo_class,session_id,round_index,prefix_group,"
    "prefix_length,streaming,input_tokens,output_tokens,text_tokens,image_tokens,audio_tokens,"
    "video_tokens,reason_ratio,model,deadline_us,server_input_tokens,arrival_time_us,"
    "send_time_us,first_chunk_time_us,last_chunk_time_us,num_chunks,status,error_message,"
    "finish_reason"
)


def write_blis_trace(rows: Rows, prefix: Path) -> None:
    """BLIS's TraceV2 pair: a header YAML and a 27-column CSV (arrivals in integer us)."""
    prefix.with_suffix(".yaml").write_text(
        "trace_version: 3\ntime_unit: microseconds\nmode: real\nwarm_up_requests: 0\n"
    )
    with prefix.with_suffix(".csv").open("w") as fh:
        fh.write(BLIS_COLUMNS + "\n")
        for i, (t, p, d) in enumerate(rows):
            us = int((t * 1_000_000).to_integral_value())
            fh.write(f"{i},trace,,,,0,,0,false,{p},{d},{p},0,0,0,0,,0,0,{us},{us},0,0,0,ok,,\n")


@dataclass
class Tool:
    name: str
    argv: list[str]
    cwd: Path | None
    finished: Callable[[str], int]  # the run's stdout+stderr -> requests completed
    env: dict[str, str] | None = None  # the child's environment (None: this one's)
    walls: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # user + system CPU seconds
    extra: dict[str, str] = field(default_factory=dict)


def run_child(
    argv: list[str], cwd: Path | None, env: dict[str, str] | None = None
) -> tuple[float, int, int, float, str]:
    """(wall s, exit code, peak RSS KiB, CPU s, stdout+stderr) of one child process (CPU:
    user + system time of all its threads, and of any children it waited for)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        # reaped here (for its rusage), so the Popen object is told: it would otherwise
        # believe the child still runs and warn when it is collected
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, proc.returncode, usage.ru_maxrss, cpu, text


def compile_package() -> str:
    """Compile this checkout's package bytecode once, before any timing, as `pip install`
    does for a user: a checkout run with PYTHONDONTWRITEBYTECODE set (as on these machines)
    would otherwise compile every changed module again at each start."""
    compile_bytecode(REPO / "cbaudit", bytecode_env())
    return f"compiled {REPO / 'cbaudit'} (untimed, as pip install does)"


def bytecode_env() -> dict[str, str]:
    """This environment, with bytecode written (PYTHONDONTWRITEBYTECODE dropped)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_bytecode(pkg: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], env=env, check=True)


def wheel_build(work: Path) -> tuple[Path | None, str]:
    """The wheel `pip install .` builds from this checkout (hatch_build.py: compiled where a
    C compiler is found), unpacked under `work` with its bytecode compiled, untimed: (the
    folder to run it from, first on PYTHONPATH, and what it is), or (None, why not)."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "wheel", "-q", "--no-deps",
         "-w", str(work / "dist"), str(REPO)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    took = time.perf_counter() - t0
    wheels = sorted((work / "dist").glob("cbaudit-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        return (
            None,
            f"pip wheel failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}",
        )
    site = work / "site"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(site)
    env = placed_env(site)
    compile_bytecode(site / "cbaudit", env)
    version = subprocess.run(
        [sys.executable, "-m", "cbaudit", "--version"],
        cwd=site, env=env, capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return site, f"{version}; {wheels[0].name} built from {REPO} in {took:.0f} s (untimed)"


def placed_env(folder: Path) -> dict[str, str]:
    """The environment of a cbaudit run from `folder` (first on PYTHONPATH; bytecode kept)."""
    env = bytecode_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    return env


def python_build(python: str) -> str:
    """`python`'s version, path and the build flags that change its speed, as its `configure`
    arguments state them (a distribution may optimise without stating it there)."""
    probe = (
        "import sys, sysconfig; a = sysconfig.get_config_var('CONFIG_ARGS') or ''; "
        "print(sys.implementation.name, sys.version.split()[0], sys.executable); "
        "print(' '.join(f for f in ('--enable-optimizations', '--with-lto', '--enable-shared')"
        " if f in a) or 'none of --enable-optimizations, --with-lto, --enable-shared')"
    )
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"{python}: not runnable ({done.stderr.strip()[-200:]})"
    ident, flags = done.stdout.strip().splitlines()
    return f"{ident} (configure arguments state: {flags})"


def replay_args(trace: Path, report: Path, *extra: str) -> list[str]:
    """`cbaudit`'s arguments for the measured replay of `trace` (the configuration above),
    its JSON report written to `report` (also `benchmarks/replay_events.py`'s)."""
    return [
        "replay", "run", str(trace), "-p", "vllm-v1",
        "--cost-model", "roofline",
        "--cost-option", "hardware=nvidia-h100-sxm",
        "--cost-option", "model=llama-3-8b-gqa-fp16",
        "--cost-option", "mfu=0.7",
        "--budget", f"token_budget={TOKEN_BUDGET}",
        "--budget", f"sequence_budget={SEQ_BUDGET}",
        "--budget", f"kv_block_size={BLOCK}",
        "--budget", f"kv_total_blocks={BLOCKS}",
        *extra, "-q", "-f", "json", "-o", str(report),
    ]  # fmt: skip


def cbaudit_tool(cmd: list[str], trace: Path, report: Path, name: str, *extra: str) -> Tool:
    argv = [*cmd, *replay_args(trace, report, *extra)]

    def finished(_text: str) -> int:
        metrics = json.loads(report.read_text())["results"][0]["metrics"]
        tool.extra["iterations"] = str(metrics["iterations"])
        tool.extra["report_bytes"] = str(report.stat().st_size)
        return int(metrics["requests_finished"])

    tool = Tool(name, argv, None, finished)
    return tool


def blis_tool(binary: Path, data: Path, prefix: Path) -> Tool:
    argv = [
        str(binary), "replay",
        "--trace-header", str(prefix.with_suffix(".yaml")),
        "--trace-data", str(prefix.with_suffix(".csv")),
        "--model", BLIS_MODEL, "--latency-model", "roofline", "--hardware", "H100", "--tp", "1",
        "--max-num-batched-tokens", str(TOKEN_BUDGET), "--max-num-seqs", str(SEQ_BUDGET),
        "--block-size-in-tokens", str(BLOCK), "--total-kv-blocks", str(BLOCKS),
        "--cache-signal-delay", "0",
        "--horizon", str(2**63 - 1),  # serve every request, as cbaudit does
        "--defaults-filepath", str(data / "defaults.yaml"),
        "--model-config-folder", str(data / BLIS_MODEL_DIR),
        "--hardware-config", str(data / "hardware_config.json"),
    ]  # fmt: skip

    def finished(text: str) -> int:
        m = json.loads(text[text.index("{") : text.rindex("}") + 1])
        return int(m["completed_requests"])

    return Tool("blis", argv, None, finished)


def vidur_tool(checkout: Path, trace_csv: Path, out_dir: Path, scheduler: str) -> Tool:
    kind = "sarathi" if scheduler == "sarathi" else "vllm"
    size = "chunk_size" if kind == "sarathi" else "max_tokens_in_batch"
    argv = [
        str(checkout / ".venv" / "bin" / "python"), "-m", "vidur.main",
        "--replica_config_device", VIDUR_DEVICE, "--replica_config_model_name", VIDUR_MODEL,
        "--replica_config_tensor_parallel_size", "1", "--replica_config_num_pipeline_stages", "1",
        "--cluster_config_num_replicas", "1",
        "--request_generator_config_type", "trace_replay",
        "--trace_request_generator_config_trace_file", str(trace_csv),
        "--trace_request_generator_config_max_tokens", "16384",
        "--replica_scheduler_config_type", kind,
        f"--{kind}_scheduler_config_{size}", str(TOKEN_BUDGET),
        f"--{kind}_scheduler_config_batch_size_cap", str(SEQ_BUDGET),
        f"--{kind}_scheduler_config_block_size", str(BLOCK),
        f"--{kind}_scheduler_config_num_blocks", str(BLOCKS),
        f"--{RF}_prediction_max_prefill_chunk_size", "4096",
        f"--{RF}_prediction_max_batch_size", "256",
        f"--{RF}_prediction_max_tokens_per_request", "16384",
        f"--{RF}_num_estimators", "100",
        f"--{RF}_max_depth", "16",
        f"--{RF}_min_samples_split", "2",
        f"--{RF}_k_fold_cv_splits", "3",
        "--metrics_config_output_dir", str(out_dir),
        "--metrics_config_cache_dir", str(checkout / "cache"),
        "--no-metrics_config_store_plots", "--no-metrics_config_enable_chrome_trace",
        "--no-metrics_config_write_json_trace",
    ]  # fmt: skip

    def finished(text: str) -> int:
        stamps = VIDUR_LOOP.findall(text)
        if len(stamps) == 2:  # Vidur's own loop, from its 1-second log stamps
            a, b = (datetime.strptime(t, "%H:%M:%S") for t, _ in stamps)
            loops.append((b - a).total_seconds())
            tool.extra["sim_loop_s_median"] = f"{statistics.median(loops):.0f}+-1"
        found = sorted(out_dir.rglob("request_metrics.csv"), key=lambda p: p.stat().st_mtime)
        n = 0
        if found:
            with found[-1].open() as fh:
                n = sum(1 for _ in fh) - 1
        shutil.rmtree(out_dir, ignore_errors=True)
        return n

    loops: list[float] = []
    tool = Tool(f"vidur-{scheduler}", argv, checkout, finished)
    return tool


def summary(tool: Tool, n: int) -> str:
    lo, med = min(tool.walls), statistics.median(tool.walls)
    extra = " ".join(f"{k}={v}" for k, v in sorted(tool.extra.items()))
    return (
        f"  {tool.name:14s} min {lo:7.2f} s  median {med:7.2f} s  {n / med:9.0f} req/s"
        f"  CPU median {statistics.median(tool.cpus):6.2f} s"
        f"  peak RSS {max(tool.rss_kib) / 1024:6.0f} MiB  {extra}"
    )


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_rounds(tools: list[Tool], rounds: int, n_of: dict[str, int]) -> bool:
    for k in range(rounds):
        print(f"  round {k + 1} ({load()})", flush=True)
        for tool in tools:
            wall, rc, rss, cpu, text = run_child(tool.argv, tool.cwd, tool.env)
            done = tool.finished(text) if rc == 0 else -1
            n = n_of[tool.name]
            if rc != 0 or done != n:
                print(f"  {tool.name}: exit {rc}, {done} of {n} requests finished\n{text[-2000:]}")
                return False
            tool.walls.append(wall)
            tool.rss_kib.append(rss)
            tool.cpus.append(cpu)
            print(
                f"    {tool.name:14s} {wall:7.2f} s  CPU {cpu:6.2f} s  {rss / 1024:6.0f} MiB",
                flush=True,
            )
    return True


@dataclass
class Setup:
    """What every measured trace shares: the options, cbaudit's command, the other cbaudit
    builds (name, command) and where some of them run, and BLIS's data folder."""

    args: argparse.Namespace
    cmd: list[str]
    others: list[tuple[str, list[str]]]
    placed: dict[str, tuple[Path, dict[str, str]]]
    blis_data: Path | None


def measure(
    setup: Setup, trace: Path, rows: Rows, label: str, *, own: bool, limit: int | None = None
) -> bool:
    """Time every tool on `rows` (read from `trace`, its first `limit` rows when given; with
    `own`, not the file's rows as they are, so cbaudit gets them as a Splitwise CSV),
    interleaved, and print the figures; False when a run failed or the reports that must match
    do not."""
    args, cmd, others, placed = setup.args, setup.cmd, setup.others, setup.placed
    names_of_others = {name for name, _ in others}
    n = len(rows)
    with tempfile.TemporaryDirectory(prefix="replay-speed-") as tmp:
        work = Path(tmp)
        src = trace
        if own:
            src = work / f"{trace.stem}-rows.csv"
            write_splitwise(rows, src)
        elif limit:
            src = work / trace.name
            write_prefix(trace, limit, src)
        tools = [cbaudit_tool(cmd, src, work / "fast.json", "cbaudit")]
        if args.reference:
            ref = cbaudit_tool(cmd, src, work / "ref.json", "cbaudit-ref", "--per-iteration")
            tools.append(ref)
        for name, other in others:
            tools.append(cbaudit_tool(other, src, work / f"{name}.json", name))
        n_of = dict.fromkeys((t.name for t in tools), n)
        if args.rss_ratio:
            small = work / f"first{args.rss_ratio}{src.suffix}"
            write_prefix(src, args.rss_ratio, small)
            name = f"cbaudit-{args.rss_ratio}"
            tools.append(cbaudit_tool(cmd, small, work / "small.json", name))
            n_of[name] = min(args.rss_ratio, n)
        # where each run starts: cbaudit's own runs (`cmd`) from the unpacked wheel, the
        # checkout's sources from the checkout
        with_cmd = {"cbaudit", "cbaudit-ref", f"cbaudit-{args.rss_ratio}"}
        for tool in tools:
            where = placed.get("cbaudit" if tool.name in with_cmd else tool.name)
            if where is not None:
                tool.cwd, tool.env = where
        if args.blis and setup.blis_data is not None:
            write_blis_trace(rows, work / "blis-trace")
            tools.append(blis_tool(args.blis, setup.blis_data, work / "blis-trace"))
            n_of["blis"] = n
        if args.vidur:
            write_splitwise(rows, work / "vidur.csv")
            v = vidur_tool(args.vidur, work / "vidur.csv", work / "vidur-out", args.vidur_scheduler)
            tools.append(v)
            wall, rc, _, _, text = run_child(v.argv, v.cwd)
            print(f"  (vidur warm-up, untimed: {wall:.1f} s, exit {rc})")
            if rc != 0:
                print(text[-2000:])
                return False
            shutil.rmtree(work / "vidur-out", ignore_errors=True)
            n_of[v.name] = n
        print(f"\n{label}: {n} requests")
        if not run_rounds(tools, args.rounds, n_of):
            return False
        if args.reference:
            same = (work / "fast.json").read_bytes() == (work / "ref.json").read_bytes()
            print(f"  fast path and --per-iteration reports byte-identical: {same}")
            if not same:
                return False
        for name, _ in others:
            same = (work / "fast.json").read_bytes() == (work / f"{name}.json").read_bytes()
            print(f"  {name} report byte-identical to cbaudit's: {same}")
            if not same:
                return False
        for tool in tools:
            print(summary(tool, n_of[tool.name]))
        cb = tools[0]
        mine = [cb] + [t for t in tools if t.name in names_of_others]
        for peer in tools[1:]:
            if args.rss_ratio and peer.name == f"cbaudit-{args.rss_ratio}":
                ratio = max(cb.rss_kib) / max(peer.rss_kib)
                print(f"  peak RSS whole / first {args.rss_ratio} rows: x{ratio:.2f}")
                continue
            if peer.name in names_of_others:
                continue
            for me in mine:
                med = statistics.median(me.walls) / statistics.median(peer.walls)
                lo = min(me.walls) / min(peer.walls)
                print(
                    f"  {me.name} / {peer.name}: wall time x{med:.2f} (median),"
                    f" x{lo:.2f} (min); requests/s x{1 / med:.2f} (median)"
                )
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--limit",
        type=row_count,
        action="append",
        metavar="N",
        help="only the first N rows of each trace (repeatable: one measurement per N)",
    )
    ap.add_argument("--cbaudit", help="command that runs cbaudit (default: this Python -m)")
    ap.add_argument("--reference", action="store_true", help="also time --per-iteration")
    ap.add_argument("--blis", type=Path, help="BLIS binary (built outside the repository)")
    ap.add_argument("--blis-data", type=Path, help="BLIS checkout (defaults.yaml, ...)")
    ap.add_argument("--vidur", type=Path, help="Vidur checkout with its own .venv")
    ap.add_argument("--vidur-scheduler", choices=("sarathi", "vllm"), default="sarathi")
    ap.add_argument("--rss-ratio", type=int, metavar="N", help="peak RSS: whole trace / first N")
    ap.add_argument(
        "--skip-failed",
        action="store_true",
        help="leave out failed rows (0 output tokens, as BurstGPT logs them) for every tool",
    )
    ap.add_argument(
        "--rate-scale",
        type=rate_scale,
        action="append",
        metavar="X",
        help="also run each trace at X times its arrival rate (repeatable; 1 is the trace as is)",
    )
    ap.add_argument(
        "--python",
        action="append",
        default=[],
        help="also time cbaudit under this interpreter (cbaudit installed there; repeatable)",
    )
    ap.add_argument(
        "--source",
        action="store_true",
        help="also time this checkout's sources, interpreted (an editable install's build)",
    )
    args = ap.parse_args()
    traces = [t.resolve() for t in args.trace or [DEFAULT_TRACE]]
    cmd = shlex.split(args.cbaudit) if args.cbaudit else [sys.executable, "-m", "cbaudit"]
    blis_data = args.blis_data
    if args.blis and blis_data is None:
        for cand in (args.blis.resolve().parent, args.blis.resolve().parent.parent):
            if (cand / "defaults.yaml").exists():
                blis_data = cand
        if blis_data is None:
            sys.exit("--blis-data: no defaults.yaml beside the BLIS binary; name its checkout")
    print(
        f"configuration: vllm-v1, token budget {TOKEN_BUDGET}, {SEQ_BUDGET} sequences, K/V block"
        f" {BLOCK}, {BLOCKS} blocks; roofline Llama-3-8B on H100 (mfu 0.7, mbu 1.0; BLIS"
        f" roofline {BLIS_MODEL} on H100); contract validation on; default report to a file;"
        f" {args.rounds} interleaved rounds; cbaudit command: {shlex.join(cmd)}"
    )
    print(f"host: {os.cpu_count()} CPUs, {load()}")
    # a tool run from its own folder with its own environment (`python -m` puts the working
    # folder first on sys.path: the cbaudit found there is the one measured)
    placed: dict[str, tuple[Path, dict[str, str]]] = {}
    others: list[tuple[str, list[str]]] = []
    scratch = None
    if not args.cbaudit:
        scratch = tempfile.TemporaryDirectory(prefix="replay-speed-wheel-")
        site, what = wheel_build(Path(scratch.name))
        print(f"cbaudit: {what}")
        if site is None:
            return 1
        placed["cbaudit"] = (site, placed_env(site))
        print(f"python: {python_build(sys.executable)}")
    if args.source:
        print(f"cbaudit-source: {REPO} as it is; bytecode: {compile_package()}")
        others.append(("cbaudit-source", [sys.executable, "-m", "cbaudit"]))
        placed["cbaudit-source"] = (REPO, placed_env(REPO))
    for py in args.python:
        build = python_build(py)
        version = build.split()[1] if " " in build else py
        print(f"python (cbaudit@{version}): {build}")
        others.append((f"cbaudit@{version}", [py, "-m", "cbaudit"]))
    scales: list[Decimal | None] = list(args.rate_scale or [None])
    setup = Setup(args, cmd, others, placed, blis_data)
    limits: list[int | None] = list(args.limit or [None])
    for trace in traces:
        for limit in limits:
            failed: list[int] | None = [] if args.skip_failed else None
            rows_read = read_trace(trace, limit, failed)
            name = trace.name if limit is None else f"{trace.name} (first {limit} rows)"
            if failed:
                print(f"\n{name}: {len(failed)} failed rows (0 output tokens) left out")
            for rate in scales:
                rows = rows_read if rate is None or rate == 1 else scaled(rows_read, rate)
                label = name if rate is None else f"{name} at x{rate} its arrival rate"
                # rows that are not the file's own (scaled, or failed ones left out) are given
                # to cbaudit as a trace of their own
                own = rows is not rows_read or bool(failed)
                if not measure(setup, trace, rows, label, own=own, limit=limit):
                    return 1
    print(f"\n{load()}")
    if scratch is not None:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
