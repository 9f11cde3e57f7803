"""Money: ``Decimal`` US dollars, never floats.

The rounding rule (docs/sla.md, 'Money'): every amount is computed exactly from integer minutes and
catalog prices, then rounded ONCE, to the cent, half up (``ROUND_HALF_UP``: 0.005 -> 0.01), per invoice
line and per credit note. Totals are sums of rounded lines, so a total always equals the sum of its
lines to the cent.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
CURRENCY = "USD"


def cents(amount: Decimal) -> Decimal:
    """``amount`` rounded half up to the cent."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def price(value: float | str | Decimal) -> Decimal:
    """A catalog price (TOML gives floats) as the exact decimal it was written as (``str`` round-trip)."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def show(amount: Decimal) -> str:
    """``1234.5`` -> ``'1,234.50'``."""
    return f"{cents(amount):,.2f}"
