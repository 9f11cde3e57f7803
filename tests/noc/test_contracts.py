"""Contracts as data: the catalog default, HCL contracts with every problem at its position, credit tiers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from velyrix import errors
from velyrix.ops.sla import contract_hcl, contracts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'contract "g" {\n  escalation_policy = "defualt"\n}\n',
            "2:3: unknown escalation policy 'defualt' (did you mean 'default'?)",
        ),
        (
            'contract "g" {\n  availability_target_percent = 120\n}\n',
            "2:3: availability_target_percent must be between 0 and 100",
        ),
        ('contract "g" {\n  credit {\n    below_percent = 99\n  }\n}\n', "2:3: credit block lacks credit_percent"),
        ('contract "g" {\n  respons "P1" {\n  }\n}\n', "2:3: unknown block 'respons'"),
        ('contract "g" {}\ncontract "h" {}\n', "1:1: a contract file holds exactly one contract"),
        ('contract "g" {\n  measure = "minutes"\n}\n', "2:3: unknown availability measure 'minutes'"),
    ],
)
def test_bad_contracts_say_where_and_what(text: str, expected: str) -> None:
    with pytest.raises(errors.SpecError) as caught:
        contract_hcl.loads(text, "c.hcl")
    assert f"c.hcl:{expected}" in caught.value.message


def test_default_contract_round_trips_and_picks_the_lowest_tier() -> None:
    terms = contracts.default()
    assert contracts.from_dict("default", terms.to_dict()) == terms
    assert terms.credit_percent(Decimal("99.95")) == 0
    assert terms.credit_percent(Decimal("99.9")) == 0  # strictly below earns the credit
    assert terms.credit_percent(Decimal("99.89")) == 10
    assert terms.credit_percent(Decimal("98.99")) == 25
    assert terms.credit_percent(Decimal("12")) == 100
    assert terms.response["P1"].first_response_min == 15
