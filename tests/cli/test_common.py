"""The flag parsers shared by command modules."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.cli import common


def test_node_counts_parse_repeated_type_count_flags() -> None:
    assert common.parse_node_counts(["hgx-h200-8g=96", " hgx-b200-8g =4"]) == {"hgx-h200-8g": 96, "hgx-b200-8g": 4}
    assert common.parse_node_counts(None) is None
    assert common.parse_node_counts([]) is None


@pytest.mark.parametrize("flag", ["hgx-h200-8g", "hgx-h200-8g=", "hgx-h200-8g=-1", "hgx-h200-8g=two"])
def test_node_counts_reject_a_flag_without_a_count_with_the_caller_example(flag: str) -> None:
    with pytest.raises(errors.InvalidInputError) as err:
        common.parse_node_counts([flag], example="hgx-h200-8g=1000")
    assert "NODE_TYPE=COUNT" in str(err.value) and err.value.hint == "e.g. --nodes hgx-h200-8g=1000"
