"""Typed models of what users declare. Built by ``velyrix.declarations.loader`` from HCL; frozen."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Literal

from velyrix.frozen import frozen

SCHEDULERS = ("slurm", "kubernetes")
CHECKPOINT_MODES = ("sync", "async")
READ_PATTERNS = ("sequential", "random")
OPERATING_MODES = ("managed", "self_operated")
"""Who runs a cluster's nodes: Velyrix's operators, or the tenant with root (controlplane/access/modes.py)."""


@frozen
class Position:
    """Where something was declared: file and 1-based line and column."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@frozen
class StorageSpec:
    """Declared capacity per storage tier, in decimal TB. Local scratch comes with the node."""

    parallel_fs_tb: float = 0.0
    parallel_fs_capacity_tb: float = 0.0
    block_tb: float = 0.0
    object_tb: float = 0.0
    archive_tb: float = 0.0

    def by_key(self) -> dict[str, float]:
        """TB per tier keyed as in HCL (``parallel_fs_tb`` ...), in catalog order."""
        return {
            "parallel_fs_tb": self.parallel_fs_tb,
            "parallel_fs_capacity_tb": self.parallel_fs_capacity_tb,
            "block_tb": self.block_tb,
            "object_tb": self.object_tb,
            "archive_tb": self.archive_tb,
        }


@frozen
class WorkloadSpec:
    """The training job the storage and goodput planners size for (the optional ``workload`` block).

    The model is given either as ``model_params`` (a count, e.g. 405e9) or as its architecture
    (``vocab``, ``hidden``, ``ffn``, ``layers``, ``heads``, ``kv_heads``).
    """

    model_params: float | None = None
    vocab: int | None = None
    hidden: int | None = None
    ffn: int | None = None
    layers: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    bytes_per_param: float = 14.0
    tp: int = 1
    pp: int = 1
    dp: int | None = None
    zero_stage: int = 0
    checkpoint_interval_s: float | Literal["auto"] = "auto"
    checkpoint_mode: str = "sync"
    step_time_s: float | None = None
    max_checkpoint_overhead: float = 0.05
    """Target: share of wall time a checkpoint may block (stall target)."""
    goodput_target: float | None = None
    dataset_tb: float | None = None
    sample_mb: float | None = None
    read_pattern: str = "sequential"
    samples_per_s_per_gpu: float | None = None
    batch_per_gpu: int | None = None
    """Samples per GPU per step; with ``step_time_s`` it gives the samples/s/GPU when that is absent."""
    au_target: float = 0.9
    keep_checkpoints: int = 3
    promote_every: int = 10
    archive_after_days: float | None = None
    node_failure_rate: float | None = None
    """Failures per 1,000 node-days; the catalog's default when absent."""


def _test(scope: str, protocol: str | None = None) -> Any:
    return dataclasses.field(default=True, metadata={"scope": scope, "protocol": protocol})


@frozen
class AcceptanceSpec:
    """Which delivery tests to run (all on by default). Each field is one test; its ``scope`` says whether it
    runs on every node (``node``) or once on the whole cluster (``cluster``); a port test runs only on the
    compute fabric of its ``protocol`` (``ib_ports`` on InfiniBand, ``roce_ports`` on Ethernet, e.g.
    Spectrum-X). ``ACCEPTANCE_TESTS``, ``NODE_TESTS`` and ``CLUSTER_TESTS`` are derived from these fields."""

    gpu_burn_in: bool = _test("node")
    nvlink: bool = _test("node")
    ib_ports: bool = _test("node", "infiniband")
    roce_ports: bool = _test("node", "ethernet")
    local_nvme: bool = _test("node")
    all_reduce: bool = _test("cluster")
    storage: bool = _test("cluster")

    def enabled(self, protocol: str | None = None) -> list[str]:
        """The tests switched on that run on a fabric of ``protocol`` (None: regardless of the fabric)."""
        return [name for name in ACCEPTANCE_TESTS if getattr(self, name) and applies(name, protocol)]


ACCEPTANCE_TESTS = tuple(f.name for f in dataclasses.fields(AcceptanceSpec))
"""Every delivery test, in order: the per-node ones, then the cluster ones."""
NODE_TESTS = tuple(f.name for f in dataclasses.fields(AcceptanceSpec) if f.metadata["scope"] == "node")
"""Tests run on every node (``Driver.run_acceptance``)."""
CLUSTER_TESTS = tuple(f.name for f in dataclasses.fields(AcceptanceSpec) if f.metadata["scope"] == "cluster")
"""Tests run once on the whole cluster (``Driver.run_cluster_tests``)."""
TEST_PROTOCOL = {f.name: f.metadata["protocol"] for f in dataclasses.fields(AcceptanceSpec)}
"""The compute-fabric protocol a test needs (``catalog`` fabrics' ``protocol``), None for any fabric."""


def applies(test: str, protocol: str | None) -> bool:
    """Whether ``test`` runs on a cluster whose compute fabric speaks ``protocol`` (None: every test)."""
    needed = TEST_PROTOCOL.get(test)
    return needed is None or protocol is None or needed == protocol


@frozen
class ClusterSpec:
    """One ``resource "velyrix_cluster" "NAME"`` block, validated against the catalog."""

    address: str
    """Terraform-style address, e.g. ``velyrix_cluster.training``."""
    name: str
    region: str
    node_type: str
    node_count: int
    fabric: str
    scheduler: str
    storage: StorageSpec = field(default_factory=StorageSpec)
    workload: WorkloadSpec | None = None
    acceptance: AcceptanceSpec = field(default_factory=AcceptanceSpec)
    position: Position | None = None
    operating_mode: str = "managed"

    @property
    def gpus(self) -> int:
        from velyrix import catalog

        return self.node_count * catalog.node_type(self.node_type).gpus_per_node


@frozen
class Lifecycle:
    """A resource's ``lifecycle`` block and ``depends_on``: what ``apply`` and ``destroy`` must honour."""

    prevent_destroy: bool = False
    ignore_changes: tuple[str, ...] = ()
    """Attribute names (or ``"all"``) whose live values a plan keeps instead of the declared ones."""
    create_before_destroy: bool = False
    depends_on: tuple[str, ...] = ()
    """Addresses of the resources this one is created after (and destroyed before)."""


@frozen
class OutputValue:
    """An ``output "NAME"`` of the configuration (``velyrix output``)."""

    name: str
    value: object
    sensitive: bool = False
    description: str = ""


@frozen
class SpecFile:
    """A whole declaration file: the provider settings and every cluster resource."""

    path: str
    region: str
    clusters: tuple[ClusterSpec, ...]
    variables: dict[str, object] = field(default_factory=dict)
    outputs: dict[str, OutputValue] = field(default_factory=dict)
    lifecycles: dict[str, Lifecycle] = field(default_factory=dict)
    """Per resource address; absent means the defaults."""
    sensitive_variables: tuple[str, ...] = ()
    sensitive_arguments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per resource address, the arguments derived from sensitive variables (plans show them masked)."""
