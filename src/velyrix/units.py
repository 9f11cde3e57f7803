"""Explicit units. Decimal (GB, TB, Gb/s) and binary (GiB, TiB) are never mixed silently.

Conventions: ``*_bytes`` are bytes; ``*_gbps`` is gigabits per second (network links);
``*_gBps`` is avoided: storage bandwidth is named ``*_gb_s`` (gigabytes per second);
``*_s`` seconds; ``*_h`` hours; ``*_tb`` decimal terabytes.
"""

from __future__ import annotations

KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
PB = 1000**5
KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

HOURS_PER_MONTH = 730.0
"""Billing month: 8,760 h / 12, the convention of public cloud price lists."""

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0


def gbps_to_gb_s(gbps: float) -> float:
    """Network gigabits per second to gigabytes per second (decimal)."""
    return gbps / 8.0


def gb_s_to_gbps(gb_s: float) -> float:
    """Gigabytes per second to gigabits per second (decimal)."""
    return gb_s * 8.0


def bytes_to_gb(n: float) -> float:
    return n / GB


def bytes_to_gib(n: float) -> float:
    return n / GiB


def tb_to_bytes(tb: float) -> float:
    return tb * TB


def fmt_bytes(n: float) -> str:
    """Human size in both decimal and binary units, e.g. ``5.67 TB (5.16 TiB)``."""
    for dec, dname, binu, bname in (
        (PB, "PB", 1024**5, "PiB"),
        (TB, "TB", TiB, "TiB"),
        (GB, "GB", GiB, "GiB"),
        (MB, "MB", MiB, "MiB"),
    ):
        if abs(n) >= dec:
            return f"{n / dec:,.2f} {dname} ({n / binu:,.2f} {bname})"
    return f"{n:,.0f} B"


def fmt_usd(x: float) -> str:
    return f"${x:,.2f}" if abs(x) < 100 and x != int(x) else f"${x:,.0f}"
