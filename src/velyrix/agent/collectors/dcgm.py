"""Active tests on a real node through NVIDIA DCGM's diagnostics (``dcgmi diag``).

``DcgmProber`` runs ``dcgmi diag -r LEVEL -j`` (level 1 for the short tests of the quick check, level 3
for the long tests of the deep and acceptance checks) under a hard timeout that kills the whole process
group, parses its JSON and answers each GPU's GEMM / memory probe with DCGM's own per-GPU verdict, the
names and statuses of the tests behind it, and the figure DCGM measured where it reports one.

JSON shapes read (the DCGM user guide, "DCGM Diagnostics", and ``nvvs/include/NvvsJsonStrings.h`` of
github.com/NVIDIA/DCGM for the key names):

- DCGM 3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
  [{"gpu_ids": "0", "status": "Pass", "warnings": [...], "info": [...]}]}]}]}}``
- DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [... "results": [{"entity_group": "GPU",
  "entity_id": 0, "status": "Pass", ...}]]}, "entity_groups": [...], "metadata": {...}}``

Level 1 runs DCGM's deployment ("software") tests only, no compute or memory kernel: the short probes
then judge on those tests and say so in their detail. Level 2 adds the memory test and level 3 the
stress tests ("targeted_stress", "memory_bandwidth", "diagnostic"), whose figures are reported when
their info text carries one with a unit (GB/s, Gflop/s...). Those figures are not BF16 dense TFLOPS or
an HBM stream of our own, so they are compared between the GPUs of the node only (``vs_spec=False``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.agent.collectors.base import Prober, ProbeResult

QUICK_LEVEL = 1
DEEP_LEVEL = 3
DEFAULT_TIMEOUTS_S = {1: 20.0, 2: 150.0, 3: 540.0, 4: 3000.0}
"""Hard limits per run level: under the check timeouts of ``suites`` (25 s short, 600 s long)."""

# normalized DCGM test names (3.x spells them with spaces and capitals, 4.x in snake case)
KIND_TESTS = {
    "gemm": ("targeted_stress", "diagnostic", "sm_stress", "targeted_power"),
    "mem": ("memory_bandwidth", "memory", "gpu_memory", "memtest"),
}
_GEMM_RE = re.compile(r"([\d][\d,]*(?:\.\d+)?)\s*\(?\s*(tflop/s|tflops|gflop/s|gflops)", re.IGNORECASE)
_BW_RE = re.compile(r"([\d][\d,]*(?:\.\d+)?)\s*(tb/s|gb/s|gib/s|mb/s|mib/s)", re.IGNORECASE)
_TO_TFLOPS = {"tflop/s": 1.0, "tflops": 1.0, "gflop/s": 1e-3, "gflops": 1e-3}
_TO_GB_S = {"tb/s": 1000.0, "gb/s": 1.0, "gib/s": 1.073741824, "mb/s": 1e-3, "mib/s": 1.048576e-3}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def _texts(value: Any) -> list[str]:
    """Warnings/info as strings: DCGM gives a string, a list of strings or of ``{"warning": ...}``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [str(value.get("warning") or value.get("info") or value)]
    return [t for v in value for t in _texts(v)]


def _status(raw: Any) -> str:
    """pass / fail / warn / skip / notrun; a word DCGM never used here is ``unknown`` (not a pass)."""
    word = _norm(str(raw or ""))
    return {
        "pass": "pass",
        "fail": "fail",
        "warn": "warn",
        "warning": "warn",
        "skip": "skip",
        "skipped": "skip",
        "not_run": "notrun",
        "notrun": "notrun",
    }.get(word, "unknown")


def _gpu_ids(result: dict[str, Any]) -> list[int]:
    if "entity_id" in result:
        group = str(result.get("entity_group", "GPU")).upper()
        return [int(result["entity_id"])] if group == "GPU" else []
    raw = result.get("gpu_ids", result.get("gpu_id"))
    if raw is None:
        return []
    if isinstance(raw, (list, tuple)):
        return [int(x) for x in raw]
    return [int(x) for x in str(raw).replace(" ", "").split(",") if x.isdigit()]


@dataclass(frozen=True)
class TestOutcome:
    """One DCGM test's result on one GPU."""

    name: str
    status: str
    messages: tuple[str, ...] = ()


@dataclass
class DiagReport:
    """A parsed ``dcgmi diag -j`` run: per GPU index, the outcome of every test; ``version`` of DCGM."""

    level: int
    gpus: dict[int, list[TestOutcome]] = field(default_factory=dict)
    version: str = ""
    exit_code: int = 0


def _tests(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") or doc
    for cat in root.get("test_categories", []) or []:
        yield from cat.get("tests", []) or []
    yield from root.get("tests", []) or []  # a flattened document (no categories)


def parse_diag(text: str, level: int, exit_code: int = 0) -> DiagReport:
    """Parse the JSON ``dcgmi diag -r LEVEL -j`` printed (a banner line before it is skipped).

    Returns a ``DiagReport``; raises ``DcgmDiagError`` when there is no JSON document, DCGM reported a
    runtime error, or no test named a GPU.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise errors.DcgmDiagError(level=level, reason=f"no JSON in its output: {text.strip()[:200]!r}")
    try:
        doc = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise errors.DcgmDiagError(level=level, reason=f"its output is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise errors.DcgmDiagError(level=level, reason="its JSON is not an object")
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") or doc
    if root.get("runtime_error"):
        raise errors.DcgmDiagError(level=level, reason=f"DCGM runtime error: {root['runtime_error']}")
    meta = doc.get("metadata") or {}
    report = DiagReport(level, version=str(meta.get("version") or root.get("version") or ""), exit_code=exit_code)
    for test in _tests(doc):
        name = _norm(str(test.get("name", "")))
        for result in test.get("results", []) or []:
            msgs = tuple(_texts(result.get("warnings")) + _texts(result.get("info")))
            for gpu in _gpu_ids(result):
                report.gpus.setdefault(gpu, []).append(TestOutcome(name, _status(result.get("status")), msgs))
    if not report.gpus:
        raise errors.DcgmDiagError(level=level, reason="its JSON names no GPU result")
    return report


def _figure(kind: str, gpu: int, outcomes: list[TestOutcome]) -> float | None:
    """The figure DCGM printed for ``gpu`` (TFLOPS for gemm, GB/s for mem) in the first of ``outcomes``
    that has one, from a message naming the GPU ("GPU 3 ...") or else any of its messages; None if none."""
    regex, scale = (_GEMM_RE, _TO_TFLOPS) if kind == "gemm" else (_BW_RE, _TO_GB_S)
    own = re.compile(rf"\bGPU\s*{gpu}\b", re.IGNORECASE)
    for o in outcomes:
        for pool in ([m for m in o.messages if own.search(m)], o.messages):
            for msg in pool:
                hit = regex.search(msg)
                if hit:
                    return float(hit.group(1).replace(",", "")) * scale[hit.group(2).lower()]
    return None


def verdict(report: DiagReport, kind: str, gpu: int) -> ProbeResult:
    """Judge ``gpu`` for probe ``kind`` from ``report``: fail when a DCGM test of that kind failed
    (or, at a level with none of that kind, any test); raise ``DcgmDiagError`` when DCGM said nothing
    about the GPU or ran none of the tests (skipped / not run is not a pass)."""
    outcomes = report.gpus.get(gpu)
    if not outcomes:
        raise errors.DcgmDiagError(
            level=report.level, reason=f"no result for gpu{gpu} (DCGM reported GPUs {sorted(report.gpus)})"
        )
    relevant = [o for o in outcomes if o.name in KIND_TESTS[kind]]
    note = ""
    if not relevant:
        relevant = outcomes
        note = f"level {report.level} runs no {'compute' if kind == 'gemm' else 'memory'} test; "
    order = KIND_TESTS[kind]
    ran = sorted(
        (o for o in relevant if o.status in ("pass", "warn", "fail")),
        key=lambda o: order.index(o.name) if o.name in order else len(order),
    )  # figure source: first
    listing = ", ".join(f"{o.name} {o.status}" for o in relevant)
    if not ran:
        raise errors.DcgmDiagError(level=report.level, reason=f"gpu{gpu}: no test ran ({listing})")
    failed = [o for o in ran if o.status == "fail"]
    why = "; ".join(m for o in failed for m in o.messages)[:300]
    value = _figure(kind, gpu, ran)
    detail = f"dcgmi diag -r {report.level}: {note}{listing}" + (f" ({why})" if why else "")
    return ProbeResult(value, passed=not failed, vs_spec=False, detail=detail)


def run_dcgmi(args: list[str], timeout_s: float, level: int, exe: str | None = None) -> tuple[int, str, str]:
    """Run ``dcgmi ARGS`` with a hard timeout (the whole process group is killed when it passes).

    Returns (exit code, stdout, stderr); raises ``DcgmUnavailableError`` when ``dcgmi`` is not on PATH
    and ``DcgmDiagError`` on timeout.
    """
    path = exe or shutil.which("dcgmi")
    if not path:
        raise errors.DcgmUnavailableError(
            hint="packages: datacenter-gpu-manager (DCGM 3) or datacenter-gpu-manager-4-core; or run with --prober none"
        )
    proc = subprocess.Popen(
        [path, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - ended between the timeout and the kill
            pass
        proc.communicate()
        raise errors.DcgmDiagError(level=level, reason=f"no answer within {timeout_s:g} s (killed)") from None
    return proc.returncode, out, err


class DcgmProber(Prober):
    """GEMM / memory probes answered by ``dcgmi diag``. One run per level serves every GPU and both
    probes (the result, or the error, is kept for the life of the prober: one check suite).

    ``quick_level`` serves probes of at most ``short_s`` seconds (the quick check's short tests),
    ``deep_level`` the longer ones; ``timeouts_s`` maps a level to its hard limit in seconds.
    """

    def __init__(
        self,
        *,
        quick_level: int = QUICK_LEVEL,
        deep_level: int = DEEP_LEVEL,
        short_s: float = 10.0,
        timeouts_s: dict[int, float] | None = None,
        exe: str | None = None,
    ) -> None:
        self.quick_level, self.deep_level, self.short_s = quick_level, deep_level, short_s
        self.timeouts_s = {**DEFAULT_TIMEOUTS_S, **(timeouts_s or {})}
        self.exe = exe
        self._runs: dict[int, DiagReport | errors.VelyrixError] = {}
        self._lock = threading.Lock()

    def diag(self, level: int) -> DiagReport:
        """The report of ``dcgmi diag -r LEVEL -j`` (run once per level; failures are kept too)."""
        with self._lock:
            if level not in self._runs:
                try:
                    rc, out, err = run_dcgmi(["diag", "-r", str(level), "-j"], self.timeouts_s[level], level, self.exe)
                    try:
                        self._runs[level] = parse_diag(out, level, rc)
                    except errors.DcgmDiagError:
                        if rc == 0:
                            raise
                        tail = (err or out).strip()[-300:]
                        raise errors.DcgmDiagError(level=level, reason=f"exit {rc}: {tail}") from None
                except errors.VelyrixError as exc:
                    self._runs[level] = exc
            got = self._runs[level]
        if isinstance(got, errors.VelyrixError):
            raise got
        return got

    def probe(self, kind: str, gpu: int, duration_s: float) -> ProbeResult:
        level = self.quick_level if duration_s <= self.short_s else self.deep_level
        return verdict(self.diag(level), kind, gpu)

    def _value(self, kind: str, gpu: int, duration_s: float) -> float:
        res = self.probe(kind, gpu, duration_s)
        if res.value is None:
            raise errors.DcgmDiagError(
                level=self.quick_level if duration_s <= self.short_s else self.deep_level,
                reason=f"DCGM reported no {kind} figure for gpu{gpu}",
            )
        return res.value

    def run_gemm(self, gpu: int, duration_s: float = 10.0) -> float:
        return self._value("gemm", gpu, duration_s)

    def run_memtest(self, gpu: int, duration_s: float = 10.0) -> float:
        return self._value("mem", gpu, duration_s)


def create(name: str, node: Any = None) -> Prober:
    """The prober an operator chose: ``dcgm`` (real node), ``sim`` (``node`` is a twin ``SimNode``) or
    ``none`` (active tests skipped by configuration). ``UnknownNameError`` otherwise."""
    from velyrix.agent.collectors import base

    if name == "dcgm":
        return DcgmProber()
    if name == "none":
        return base.NoProber()
    if name == "sim":
        if node is None:
            raise errors.InvalidInputError("--prober sim needs a twin node", hint="use it with --collector sim")
        from velyrix.agent.collectors.sim import SimProber

        return SimProber(node)
    raise errors.UnknownNameError("prober", name, PROBERS)


PROBERS = ("dcgm", "sim", "none")
