#!/usr/bin/env bash
# run_vllm.sh [--recorder DIR] WORKLOAD.json OUT.jsonl [...]: drive_vllm.py in the environment
# that ../shared/peers/vllm/setup.sh builds (VLLM_ENV, default /work/peers/vllm-env). The
# repository root is on PYTHONPATH so that vLLM can import cbaudit's recorder.
set -euo pipefail
ENV=${VLLM_ENV:-/work/peers/vllm-env}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
export PYTHONPATH="$ENV/src/vllm-0.23.0:$ROOT" HF_HUB_OFFLINE=1 VLLM_TARGET_DEVICE=cpu
export VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-WARNING}
exec "$ENV/venv/bin/python" "$HERE/drive_vllm.py" "$ENV/tiny_opt" "$@"
