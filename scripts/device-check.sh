#!/usr/bin/env bash
# Device check for a session that has a GPU machine (one H200, no network): bootstrap, the tests marked
# `gpu` of the agent and health packages, one NVML scrape of the agent and the quick health check on NVML.
# Every step runs under its own timeout (at most about 4.5 minutes in all) and goes on after a failure; outputs
# and a summary (one line per step: name, exit code, seconds) are written under $OUT (default
# ./device-out), at most 7 files. Exit code: 0 when every step exited 0, else 1.
#
#   bash scripts/device-check.sh                      # on the device machine, from the repository root
#   VELYRIX_WHEELHOUSE=.wheels bash scripts/device-check.sh   # offline pip install from carried wheels
#
# The machine reaches nothing outside it: without a carried .venv or a wheelhouse the bootstrap's pip
# install fails, and the later steps say so in the summary.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-./device-out}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
failed=0

step() {  # step NAME TIMEOUT_S LOGFILE CMD...: run CMD with a timeout, log its output, record rc and time
    local name=$1 limit=$2 log=$3
    shift 3
    local start rc
    start=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$log" 2>&1
    rc=$?
    echo "$name rc=$rc $(( $(date +%s) - start ))s" | tee -a "$SUMMARY"
    [ "$rc" -eq 0 ] || failed=1
    return 0
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    uname -a
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    command -v dcgmi && (timeout 10 dcgmi --version 2>&1 || true) || echo "dcgmi: not installed"
} > "$OUT/env.txt" 2>&1

wheels=${VELYRIX_WHEELHOUSE:-}
if [ -n "$wheels" ] && [ -d "$wheels" ]; then
    export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/$wheels"
fi
step bootstrap 90 "$OUT/bootstrap.log" env VELYRIX_SKIP_APT=1 bash scripts/bootstrap.sh

PY=.venv/bin/python
VELYRIX=.venv/bin/velyrix
export PYTHONUNBUFFERED=1

step pytest-gpu 75 "$OUT/pytest-gpu.log" "$PY" -m pytest -m gpu --gpu tests/agent tests/health -q -rs -p no:cacheprovider
step agent-nvml-once 20 "$OUT/agent-metrics.txt" "$VELYRIX" agent --collector nvml --once
step health-quick-nvml 45 "$OUT/health-quick.json" "$VELYRIX" health check --quick --collector nvml --json
step health-quick-nvml-prober-none 20 "$OUT/health-quick-prober-none.json" \
    "$VELYRIX" health check --quick --collector nvml --prober none --json

echo "overall: $([ "$failed" -eq 0 ] && echo ok || echo 'some step failed (see its log)')" | tee -a "$SUMMARY"
exit "$failed"
