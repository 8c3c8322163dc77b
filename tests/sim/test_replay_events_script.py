"""`benchmarks/replay_events.py`: its timers see every iteration the replay runs (or it says
so and fails), and it prints the per-event figures and the fitted per-row bound."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "replay_events.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )


def _trace(tmp_path: Path) -> Path:
    """Overlapping requests (arrivals 50 ms apart, outputs of 20-80 tokens): decode
    stretches, finishes inside them and admissions in full iterations."""
    rows = [f"{0.05 * i:.2f},{200 + 37 * i % 400},{20 + 13 * i % 60}" for i in range(150)]
    path = tmp_path / "overlap.csv"
    path.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" + "\n".join(rows) + "\n")
    return path


def test_every_iteration_is_accounted_for(tmp_path: Path) -> None:
    done = _run("--trace", str(_trace(tmp_path)))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    head = re.search(r"(\d+) iterations, 150 requests", out)
    assert head is not None, out
    taken = re.search(r"stretches taken, by B \(running requests at the first cut\): (\d+) ", out)
    full = re.search(r"iterations in full, by rows .*?: (\d+) events", out)
    assert taken is not None and full is not None, out
    # stretches happened, and the full iterations are fewer than the iterations
    assert int(taken.group(1)) > 0
    assert 0 < int(full.group(1)) < int(head.group(1))
    assert re.search(r"fit, stretch taken: -?[\d.]+ us fixed \+ -?[\d.]+ us per row", out)
    assert re.search(r"per-row work, fitted, as a share of the command: ", out)


def test_rate_scale_replays_the_same_requests_faster(tmp_path: Path) -> None:
    done = _run("--trace", str(_trace(tmp_path)), "--rate-scale", "4")
    assert done.returncode == 0, done.stderr
    assert "at 4x its rate" in done.stdout
    assert re.search(r"\d+ iterations, 150 requests", done.stdout)


def test_a_refused_trace_fails_the_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,abc,3\n")
    done = _run("--trace", str(bad))
    assert done.returncode == 1
    assert "the replay exited with 2" in done.stderr
