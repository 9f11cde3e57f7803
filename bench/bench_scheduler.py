"""Utilization report over 1,000,000 synthetic accounting records (target: under 10 s).

Records have the shape of ``sacct --json`` jobs (user, account, submission/start/end, allocated TRES)
for 200 users in 40 teams under 8 cost centers, over 30 days. Timed: records → column table
(``JobTable.from_records``), the report (``reports.build``: GPU-hours allocated clipped to the period and
busy from telemetry given for every job, jobs, wait mean and p95, top users, per team and per cost
center) and its four renderings. In the same run, a plain
Python loop computes the per-team GPU-hours of 100,000 of the records (scaled x10) for the ratio, and
must agree with the report on them.
"""

from __future__ import annotations

import json
import random
import time

from velyrix.ops.scheduler import accounting, report_formats, reports

RECORDS = 1_000_000
T0 = 1_800_000_000
DAYS = 30


def synthetic(n: int, seed: int = 7) -> tuple[list[dict], dict[str, str]]:
    """``n`` sacct-like job records and the account → cost center map."""
    rng = random.Random(seed)
    teams = [f"team{i:02d}" for i in range(40)]
    cost = {t: f"cc{i % 8}" for i, t in enumerate(teams)}
    users = [(f"user{i:03d}", teams[i % 40]) for i in range(200)]
    tres = {
        g: [
            {"type": "cpu", "name": None, "count": 8 * max(1, g)},
            {"type": "gres", "name": "gpu", "count": g},
            {"type": "gres", "name": "gpu:h200", "count": g},
        ]
        for g in (0, 1, 2, 4, 8, 16, 32, 64)
    }
    sizes = [1, 2, 4, 8, 8, 8, 16, 32, 64, 0]
    span = DAYS * 86400
    jobs = []
    for i in range(n):
        user, team = users[rng.randrange(200)]
        submit = T0 - 86400 + rng.randrange(span + 86400)
        wait = int(rng.expovariate(1 / 600))
        run = int(rng.expovariate(1 / 5400)) + 10
        started = rng.random() > 0.02
        start = submit + wait if started else 0
        end = start + run if started and start + run < T0 + span else 0
        jobs.append(
            {
                "job_id": i + 1,
                "user": user,
                "account": team,
                "time": {"submission": submit, "start": start, "end": end},
                "tres": {"allocated": tres[sizes[rng.randrange(len(sizes))]]},
            }
        )
    return jobs, cost


def _naive_team_gpu_s(jobs: list[dict], t_from: int, t_to: int, now: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for j in jobs:
        t = j["time"]
        if not t["start"]:
            continue
        gpus = next((x["count"] for x in j["tres"]["allocated"] if x["type"] == "gres" and x["name"] == "gpu"), 0)
        end = t["end"] or now
        sec = max(0, min(end, t_to) - max(t["start"], t_from))
        out[j["account"]] = out.get(j["account"], 0.0) + sec * gpus
    return out


def main() -> None:
    t = time.perf_counter()
    jobs, cost = synthetic(RECORDS)
    print(f"generated {len(jobs):,} records in {time.perf_counter() - t:.1f} s (not counted)")
    t_from, t_to, now = T0, T0 + DAYS * 86400, T0 + DAYS * 86400

    # Telemetry for every job: busy GPU-seconds at 70% of its allocation (what --busy-from would give).
    busy = {
        j["job_id"]: 0.7
        * j["tres"]["allocated"][1]["count"]
        * max(0, (j["time"]["end"] or now) - (j["time"]["start"] or now))
        for j in jobs
    }
    t0 = time.perf_counter()
    table = accounting.JobTable.from_records(jobs)
    t1 = time.perf_counter()
    data = reports.build(table, t_from, t_to, cost_center_of=cost, now=now, busy_gpu_s=busy)
    t2 = time.perf_counter()
    sizes = {fmt: len(report_formats.render(data, fmt)) for fmt in report_formats.FORMATS}
    t3 = time.perf_counter()
    total = t3 - t0
    print(f"records -> table      {t1 - t0:6.2f} s")
    print(f"report (aggregation)  {t2 - t1:6.2f} s")
    print(f"4 renderings          {t3 - t2:6.2f} s  ({', '.join(f'{k} {v:,} B' for k, v in sizes.items())})")
    print(
        f"total                 {total:6.2f} s  (target < 10 s)  {data['totals']['gpu_hours']:,.0f} GPU-hours "
        f"({data['totals']['busy_gpu_hours']:,.0f} busy), "
        f"{len(data['teams'])} teams, {len(data['cost_centers'])} cost centers"
    )

    sample = jobs[:100_000]
    t4 = time.perf_counter()
    naive = _naive_team_gpu_s(sample, t_from, t_to, now)
    t5 = time.perf_counter()
    small = reports.build(accounting.JobTable.from_records(sample), t_from, t_to, cost_center_of=cost, now=now)
    for row in small["teams"]:
        assert abs(row["gpu_hours"] - naive[row["team"]] / 3600) < 1e-3, row["team"]
    naive_1m = (t5 - t4) * RECORDS / len(sample)
    print(
        f"plain Python loop, GPU-hours per team only: {t5 - t4:.2f} s per 100k -> {naive_1m:.2f} s per 1M "
        f"(agrees with the report); report total / loop = {total / naive_1m:.2f}"
    )
    # The sacct -P fast path: the same 1M records as the text sacct prints, parsed into the same table.
    lines = "\n".join(
        f"{j['job_id']}|{j['user']}|{j['account']}|billing={g},cpu={8 * max(1, g)},gres/gpu={g},node=1|"
        f"{j['time']['submission']}|{j['time']['start'] or 'Unknown'}|{j['time']['end'] or 'Unknown'}"
        for j in jobs
        for g in (j["tres"]["allocated"][1]["count"],)
    )
    t8 = time.perf_counter()
    fast = reports.build(
        accounting.JobTable.from_parsable(lines), t_from, t_to, cost_center_of=cost, now=now, busy_gpu_s=busy
    )
    t9 = time.perf_counter()
    assert fast["teams"] == data["teams"]
    print(f"sacct -P text ({len(lines) / 1e6:.0f} MB) -> table -> report: {t9 - t8:.2f} s (same report)")
    # Not in the total: parsing sacct's JSON text. Our minimal records; real 22.05 records are ~10x larger.
    text = json.dumps({"jobs": sample})
    t6 = time.perf_counter()
    json.loads(text)
    t7 = time.perf_counter()
    print(
        f"json.loads of the minimal records: {t7 - t6:.2f} s per 100k ({len(text) / 1e6:.0f} MB) -> "
        f"{(t7 - t6) * 10:.1f} s per 1M"
    )


if __name__ == "__main__":
    main()
