#!/usr/bin/env bash
# The prepared GPU check for `cbaudit bench` (issue 5, item 7).
#
# Usage: benchmarks/gpu_check.sh OUTDIR
#
# Runs the `quick` grid (about 20 mixed/decode/prefill points on four distinct 8B-shaped
# layers, bf16) and the ceilings probes (a 1 GiB device copy and an 8192^3 bf16 GEMM) on the
# first CUDA device, then writes into OUTDIR:
#   results-quick.json  the results file (schema bench-results; `cbaudit bench check` reads it)
#   summary.txt         achieved copy bandwidth and GEMM FLOP/s against the spec sheet, the
#                       sentinel's CV and drift, the roofline fit and its MAPE on mixed points
#   runner.log          the runner's progress lines
#   nvidia-smi.txt      the device as nvidia-smi saw it at the end (when present)
#   gpu-tests.txt       pytest of the packed step against its float64 reference on this
#                       device (tests/bench/test_model.py, test_varlen_binding.py: the CUDA
#                       bf16 varlen/sdpa cases and the installed torch's varlen signature),
#                       when pytest is importable there
# Sized to finish in under five minutes on an H200: the runner starts no point after 170 s; at
# 220 s `timeout` sends SIGTERM, on which the runner finishes the point in hand and still writes
# a whole results file (the rest marked skipped); 15 s later it is killed outright. The device
# tests then get at most 45 s (a dry run's 240 s; a line in gpu-tests.txt says when they hit it).
#
# Installing what it needs. The runner needs only python3 and torch with CUDA (PyYAML and
# jsonschema are optional here: without them the packaged grid is checked by the runner's own
# code). The device machine may already have torch with CUDA: this script checks first and
# installs nothing in that case. It cannot reach PyPI. Python packages missing there must be
# carried as wheels in .whl/ at the repository root; they are installed with
#     python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
# and used through PYTHONPATH=/tmp/site. A caller whose device lacks torch must therefore
# carry a CUDA torch wheel (and its nvidia-* dependency wheels) in .whl/.
#
# CBAUDIT_GPU_CHECK_DRY_RUN=1 rehearses the script without a GPU: the tiny grid on the CPU
# (measured_cpu, not measured on GPU), to check the plumbing before device time is spent.
#
# Exit status: the runner's (0 every measured point passed its float64 reference check,
# 1 a point failed it, 2 unusable setup), or 2 when no CUDA torch can be found.
set -uo pipefail

OUTDIR=${1:?usage: benchmarks/gpu_check.sh OUTDIR}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

cuda_torch() {
    "$PY" - <<'PYEOF' 2>/dev/null
import sys, warnings
warnings.simplefilter("ignore")
try:
    import torch
except ImportError:
    sys.exit(1)
sys.exit(0 if torch.cuda.is_available() else 1)
PYEOF
}

GRID=(--grid quick --budget-s 170)
RESULTS="$OUTDIR/results-quick.json"
if [ "${CBAUDIT_GPU_CHECK_DRY_RUN:-0}" = "1" ]; then
    echo "gpu_check: DRY RUN on CPU (tiny grid; nothing here is a GPU measurement)"
    GRID=(--grid tiny --device cpu --budget-s 30)
    RESULTS="$OUTDIR/results-dry-run-cpu.json"
elif ! cuda_torch; then
    if compgen -G "$REPO/.whl/*.whl" >/dev/null; then
        echo "gpu_check: no CUDA torch importable; installing the wheels in .whl/ into /tmp/site"
        "$PY" -m pip install -q --no-index --no-deps --target /tmp/site "$REPO"/.whl/*.whl
        export PYTHONPATH="$PYTHONPATH:/tmp/site"
    fi
    if ! cuda_torch; then
        echo "gpu_check: torch with CUDA is not available (carry a CUDA torch wheel in .whl/)" >&2
        exit 2
    fi
fi

"$PY" -c 'import torch; print("gpu_check: torch", torch.__version__, "cuda", torch.version.cuda)' \
    2>/dev/null

timeout -k 15 220 "$PY" -m cbaudit.bench.runner --output "$RESULTS" "${GRID[@]}" --force 2>&1 | tee "$OUTDIR/runner.log"
rc=${PIPESTATUS[0]}

if command -v nvidia-smi >/dev/null; then
    nvidia-smi >"$OUTDIR/nvidia-smi.txt" 2>&1 || true
fi
if "$PY" -c 'import pytest' 2>/dev/null; then
    # The CUDA cases are marked gpu and skip without a device; the varlen stand-in tests also
    # check that this torch's varlen_attn signature is one the runner knows how to call.
    # 45 s of device time; a dry run spends none, and on a loaded CPU (CI) it gets 240 s
    tests_limit=45
    if [ "${CBAUDIT_GPU_CHECK_DRY_RUN:-0}" = "1" ]; then
        tests_limit=240
    fi
    (cd "$REPO" && timeout -k 5 "$tests_limit" "$PY" -m pytest -rs -p no:cacheprovider \
        tests/bench/test_model.py tests/bench/test_varlen_binding.py) >"$OUTDIR/gpu-tests.txt" 2>&1
    trc=$?
    if [ "$trc" -eq 124 ] || [ "$trc" -eq 137 ]; then
        echo "gpu_check: device tests stopped at their ${tests_limit} s limit (exit $trc)" \
            >>"$OUTDIR/gpu-tests.txt"
    fi
    echo "gpu_check: device tests: $(tail -n 1 "$OUTDIR/gpu-tests.txt")"
fi
if [ -f "$RESULTS" ]; then
    "$PY" -m cbaudit.bench.summary "$RESULTS" | tee "$OUTDIR/summary.txt"
else
    echo "gpu_check: no results file was written (runner exit $rc)" | tee "$OUTDIR/summary.txt"
fi
exit "$rc"
