"""Prolog and epilog scripts: the agent's quick health check, and the GPU-to-job mapping for telemetry.

The mapping is one file per GPU index in the job-mapping directory, holding the job id (the layout
DCGM's ``--hpc-job-mapping-dir`` and ``velyrix.agent.jobs`` read), plus ``jobs/<job id>.json`` with the
job's user and account (team). The prolog writes them, the epilog removes the files that still name
its job. Health check exit codes: 0 healthy; 1 unhealthy (the script fails, so Slurm drains the node
and requeues the job); anything else means the check itself is broken or missing, which is logged and
does not take the node out (a broken check must not drain a fleet).
"""

from __future__ import annotations

import shlex

_COMMON = """\
HEALTH_CHECK={check}
JOB_MAP_DIR="{job_map_dir}"
LOG_TAG="velyrix-{kind}[$SLURM_JOB_ID]"

# GPU indices of this job on this node: SLURM_JOB_GPUS when slurmd sets it, else the IDX list of
# `scontrol -d show job` for this node (Slurm 22.05 leaves it out of the prolog environment).
gpu_indices() {{
    if [ -n "${{SLURM_JOB_GPUS:-}}" ]; then echo "$SLURM_JOB_GPUS"; return; fi
    scontrol -d show job "$SLURM_JOB_ID" 2>/dev/null | while read -r line; do
        case "$line" in Nodes=*IDX:*) ;; *) continue ;; esac
        nodes=${{line#Nodes=}}; nodes=${{nodes%% *}}
        for n in $(scontrol show hostnames "$nodes" 2>/dev/null); do
            [ "$n" = "$SLURMD_NODENAME" ] || continue
            idx=${{line##*IDX:}}; idx=${{idx%%)*}}
            echo "$idx" | awk -F, '{{s=""; for (i = 1; i <= NF; i++) {{ n = split($i, a, "-");
                if (n == 2) {{ for (j = a[1]; j <= a[2]; j++) {{ printf "%s%d", s, j; s = "," }} }}
                else {{ printf "%s%s", s, $i; s = "," }} }} print "" }}'
        done
    done
}}

run_health_check() {{
    [ -n "$HEALTH_CHECK" ] || return 0
    out=$(sh -c "$HEALTH_CHECK" 2>&1)
    rc=$?
    if [ "$rc" -eq 1 ]; then
        echo "$LOG_TAG: health check failed on $SLURMD_NODENAME: $out" >&2
        exit 1
    elif [ "$rc" -ne 0 ]; then
        echo "$LOG_TAG: health check unavailable (exit $rc), node kept in service: $out" >&2
    fi
    return 0
}}
"""

_PROLOG = """\
#!/bin/sh
# Velyrix Slurm prolog: quick node health check, then the GPU-to-job mapping telemetry reads.
{common}
run_health_check
GPUS=$(gpu_indices)
[ -n "$GPUS" ] || exit 0
mkdir -p "$JOB_MAP_DIR" || exit 0
old_ifs=$IFS; IFS=,
for gpu in $GPUS; do
    printf '%s\\n' "$SLURM_JOB_ID" > "$JOB_MAP_DIR/.$gpu.$$" && mv -f "$JOB_MAP_DIR/.$gpu.$$" "$JOB_MAP_DIR/$gpu"
done
IFS=$old_ifs
# Attribution for the agent's velyrix_job_info (team = Slurm account).
mkdir -p "$JOB_MAP_DIR/jobs" && printf '{{"user": "%s", "team": "%s", "account": "%s"}}\n' \
    "${{SLURM_JOB_USER:-}}" "${{SLURM_JOB_ACCOUNT:-}}" "${{SLURM_JOB_ACCOUNT:-}}" \
    > "$JOB_MAP_DIR/jobs/$SLURM_JOB_ID.json"
exit 0
"""

_EPILOG = """\
#!/bin/sh
# Velyrix Slurm epilog: remove this job's GPU-to-job mapping, then the quick node health check.
{common}
# Every file that still names this job (the allocation may be gone from scontrol by now).
if [ -d "$JOB_MAP_DIR" ]; then
    for f in "$JOB_MAP_DIR"/*; do
        if [ -f "$f" ] && [ "$(cat "$f")" = "$SLURM_JOB_ID" ]; then rm -f "$f"; fi
    done
    rm -f "$JOB_MAP_DIR/jobs/$SLURM_JOB_ID.json"
fi
run_health_check
exit 0
"""


def _common(kind: str, health_check_command: str, job_map_dir: str) -> str:
    if '"' in job_map_dir or "`" in job_map_dir:
        raise ValueError("job_map_dir must not contain quotes or backticks")
    return _COMMON.format(check=shlex.quote(health_check_command), job_map_dir=job_map_dir, kind=kind)


def prolog(health_check_command: str, job_map_dir: str) -> str:
    """Prolog text. ``job_map_dir`` may use shell variables of the prolog (``${SLURMD_NODENAME}``)."""
    return _PROLOG.format(common=_common("prolog", health_check_command, job_map_dir))


def epilog(health_check_command: str, job_map_dir: str) -> str:
    """Epilog text: removes the mapping files that still hold this job's id, then checks health."""
    return _EPILOG.format(common=_common("epilog", health_check_command, job_map_dir))
