"""Checkpoint model: how many bytes a training job saves, in total, per rank and per node.

Size from a parameter count or from a transformer architecture with the DLIO formula (REFERENCE §2):
``P = 2*V*h + L*(2h + h*(h + 2*d_kv) + h^2 + 3*h*f) + h`` with ``d_kv = kv_heads * (h // heads)``.
Bytes per parameter default to 14 (2 for bf16 weights + 12 for fp32 master weights and two Adam
moments; gradients are not saved). The split across ranks follows DLIO/MLPerf Storage: weights are
sharded over TP x PP and written by the first data-parallel replica (all ranks with ZeRO-3);
optimizer state is sharded over every rank with ZeRO >= 1 and written by the first replica without ZeRO.
Ranks are laid out rank = dp_rank*(tp*pp) + pp_rank*tp + tp_rank, filling nodes in order.
"""

from __future__ import annotations

from velyrix import errors, units
from velyrix.frozen import frozen

WEIGHT_BYTES_PER_PARAM = 2.0
"""bf16/fp16 weights: the part of ``bytes_per_param`` written by the weight-holding ranks."""


@frozen
class Architecture:
    """A decoder-only transformer: vocabulary, hidden size, FFN size, layers, attention and KV heads."""

    vocab: int
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int

    def validate(self) -> None:
        """Raise ``InvalidInputError`` for sizes < 1 or heads that do not fit the hidden size."""
        for name in ("vocab", "hidden", "ffn", "layers", "heads", "kv_heads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise errors.InvalidInputError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.heads > self.hidden:
            raise errors.InvalidInputError(
                f"heads ({self.heads}) cannot exceed hidden ({self.hidden})",
                hint="heads is the number of attention heads, e.g. 128 for 16384",
            )
        if self.kv_heads > self.heads or self.heads % self.kv_heads:
            raise errors.InvalidInputError(
                f"kv_heads ({self.kv_heads}) must divide heads ({self.heads})",
                hint=f"valid kv_heads: {', '.join(str(d) for d in _divisors(self.heads)[:12])}",
            )

    @property
    def head_dim(self) -> int:
        # Integer division as DLIO does; it matters only for configs like MLPerf's 1T (25872 / 192).
        return self.hidden // self.heads

    def param_count(self) -> int:
        """Parameters by the DLIO formula (input and output embeddings untied, RMSNorm weights, no biases)."""
        self.validate()
        h, f, v, n = self.hidden, self.ffn, self.vocab, self.layers
        d_kv = self.kv_heads * self.head_dim
        per_layer = 2 * h + h * (h + 2 * d_kv) + h * h + 3 * h * f
        return 2 * v * h + n * per_layer + h


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@frozen
class Parallelism:
    """Tensor, pipeline and data parallel degrees plus the ZeRO stage of a job."""

    tp: int
    pp: int
    dp: int
    zero_stage: int

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp


def resolve_parallelism(
    gpus: int, *, tp: int = 1, pp: int = 1, dp: int | None = None, zero_stage: int = 0, layers: int | None = None
) -> Parallelism:
    """Check the degrees against ``gpus`` and fill ``dp`` (gpus / (tp*pp)) when it is ``None``.

    Raises ``InvalidInputError`` naming the valid values when TP x PP x DP does not divide the GPUs,
    when a degree is < 1, when the ZeRO stage is not 0-3, when PP exceeds the layers, or for ZeRO-3
    with pipeline parallelism (DeepSpeed does not combine them).
    """
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise errors.InvalidInputError(f"GPU count must be a whole number >= 1, got {gpus!r}", hint="e.g. --gpus 512")
    for name, value in (("tp", tp), ("pp", pp)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise errors.InvalidInputError(f"{name} must be a whole number >= 1, got {value!r}")
    if zero_stage not in (0, 1, 2, 3):
        raise errors.InvalidInputError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    mp = tp * pp
    if gpus % mp:
        valid = [d for d in _divisors(gpus) if d % tp == 0] if gpus % tp == 0 else _divisors(gpus)
        raise errors.InvalidInputError(
            f"tp x pp = {tp} x {pp} = {mp} does not divide the {gpus} GPUs",
            hint=f"expected tp x pp x dp to divide {gpus}; tp x pp could be one of: "
            f"{', '.join(str(d) for d in valid[:16])}",
        )
    if dp is None:
        dp = gpus // mp
    if not isinstance(dp, int) or isinstance(dp, bool) or dp < 1:
        raise errors.InvalidInputError(f"dp must be a whole number >= 1, got {dp!r}")
    if gpus % (mp * dp):
        valid_dp = [d for d in _divisors(gpus // mp)]
        raise errors.InvalidInputError(
            f"tp x pp x dp = {tp} x {pp} x {dp} = {mp * dp} does not divide the {gpus} GPUs",
            hint=f"expected tp x pp x dp to divide {gpus}; with tp={tp}, pp={pp} valid dp: "
            f"{', '.join(str(d) for d in valid_dp[:16])}",
        )
    if layers is not None and pp > layers:
        raise errors.InvalidInputError(
            f"pp ({pp}) exceeds the model's {layers} layers", hint=f"expected pp <= {layers}"
        )
    if zero_stage == 3 and pp > 1:
        raise errors.InvalidInputError(
            f"ZeRO stage 3 cannot be combined with pipeline parallelism (pp={pp})",
            hint="expected pp = 1 with zero_stage 3, or zero_stage <= 2 with pp > 1",
        )
    return Parallelism(tp=tp, pp=pp, dp=dp, zero_stage=zero_stage)


@frozen
class CheckpointSize:
    """Bytes one checkpoint writes: total, on the busiest rank and on the busiest node."""

    params: float
    bytes_per_param: float
    parallelism: Parallelism
    gpus_per_node: int
    size_bytes: float
    per_rank_bytes: float
    """Largest shard any single rank writes."""
    per_node_bytes: float
    """Largest sum of shards on one node (what one node's storage NICs must push)."""
    writer_ranks: int
    """Ranks that write something (weights and/or optimizer state)."""

    @property
    def job_nodes(self) -> int:
        return -(-self.parallelism.ranks // self.gpus_per_node)

    def to_dict(self) -> dict[str, object]:
        p = self.parallelism
        return {
            "params": self.params,
            "bytes_per_param": self.bytes_per_param,
            "tp": p.tp,
            "pp": p.pp,
            "dp": p.dp,
            "zero_stage": p.zero_stage,
            "ranks": p.ranks,
            "job_nodes": self.job_nodes,
            "writer_ranks": self.writer_ranks,
            "size_bytes": self.size_bytes,
            "size_gb": self.size_bytes / units.GB,
            "size_gib": self.size_bytes / units.GiB,
            "per_rank_bytes": self.per_rank_bytes,
            "per_rank_gb": self.per_rank_bytes / units.GB,
            "per_rank_gib": self.per_rank_bytes / units.GiB,
            "per_node_bytes": self.per_node_bytes,
            "per_node_gb": self.per_node_bytes / units.GB,
            "per_node_gib": self.per_node_bytes / units.GiB,
        }


def checkpoint_size(
    params: float, parallelism: Parallelism, *, bytes_per_param: float = 14.0, gpus_per_node: int = 8
) -> CheckpointSize:
    """Size of one checkpoint of a ``params``-parameter model saved by ``parallelism`` ranks.

    ``bytes_per_param`` (default 14) splits into 2 bytes of weights and the rest of optimizer state.
    Returns total bytes, the busiest rank's bytes and the busiest node's bytes (nodes of
    ``gpus_per_node`` ranks, filled in rank order).
    """
    if not params or params <= 0 or params != params:
        raise errors.InvalidInputError(f"parameter count must be > 0, got {params!r}", hint="e.g. 405e9")
    if not bytes_per_param or bytes_per_param <= 0:
        raise errors.InvalidInputError(
            f"bytes per parameter must be > 0, got {bytes_per_param!r}", hint="14 for bf16 weights + fp32 Adam state"
        )
    if gpus_per_node < 1:
        raise errors.InvalidInputError(f"GPUs per node must be >= 1, got {gpus_per_node}")
    p = parallelism
    weights = params * min(WEIGHT_BYTES_PER_PARAM, bytes_per_param)
    optimizer = params * bytes_per_param - weights
    mp, ranks, g = p.model_parallel, p.ranks, gpus_per_node
    # Weight writers: all ranks under ZeRO-3, else the first DP replica (mp ranks).
    w_writers = ranks if p.zero_stage == 3 else mp
    # Optimizer writers: all ranks under ZeRO >= 1, else the first DP replica.
    o_writers = ranks if p.zero_stage >= 1 else mp
    per_rank = weights / w_writers + optimizer / o_writers
    # Writers are the lowest ranks, so node 0 holds the most of them.
    per_node = min(g, w_writers) * weights / w_writers + min(g, o_writers) * optimizer / o_writers
    return CheckpointSize(
        params=float(params),
        bytes_per_param=float(bytes_per_param),
        parallelism=p,
        gpus_per_node=g,
        size_bytes=weights + optimizer,
        per_rank_bytes=per_rank,
        per_node_bytes=per_node,
        writer_ranks=max(w_writers, o_writers),
    )


def params_from(model_params: float | None, arch: Architecture | None) -> float:
    """The parameter count from exactly one of a count or an architecture."""
    if model_params is not None and arch is not None:
        raise errors.InvalidInputError(
            "give either the parameter count or the architecture, not both",
            hint="drop model_params (the architecture is more precise) or the architecture fields",
        )
    if arch is not None:
        return float(arch.param_count())
    if model_params is None:
        raise errors.InvalidInputError(
            "the model is missing: give a parameter count or the architecture",
            hint="e.g. --params 405e9, or --hidden --ffn --layers --heads --kv-heads --vocab",
        )
    if not model_params > 0:
        raise errors.InvalidInputError(f"parameter count must be > 0, got {model_params!r}", hint="e.g. 405e9")
    return float(model_params)


ARCH_FIELDS = ("vocab", "hidden", "ffn", "layers", "heads", "kv_heads")


def architecture_from(values: dict[str, int | None]) -> Architecture | None:
    """An ``Architecture`` from the six fields, ``None`` when none is given; an error names missing ones."""
    given = {k: values.get(k) for k in ARCH_FIELDS}
    if all(v is None for v in given.values()):
        return None
    if given["kv_heads"] is None and given["heads"] is not None:
        given["kv_heads"] = given["heads"]  # no grouped-query attention: one KV head per head
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise errors.InvalidInputError(
            f"the architecture is incomplete: missing {', '.join(missing)}",
            hint="give all of vocab, hidden, ffn, layers, heads (kv_heads defaults to heads), or a parameter count",
        )
    arch = Architecture(**{k: v for k, v in given.items()})  # type: ignore[arg-type]
    arch.validate()
    return arch
