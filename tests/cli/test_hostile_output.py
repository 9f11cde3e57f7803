"""The CLI prints user and server text verbatim: rich markup in a message is text, never a tag, and a
figure that is not finite is an error (exit 2), never ``inf``/``nan`` or non-JSON ``Infinity``."""

from __future__ import annotations

import json

import pytest

from velyrix import errors
from velyrix.cli import common, main


@pytest.mark.parametrize("text", ["pattern '^[a-z][a-z0-9-]{0,62}$'", "[/]", "[blink]infiniband[/blink]", "[link=x]y"])
def test_server_messages_print_verbatim(capsys: pytest.CaptureFixture[str], text: str) -> None:
    main._print_error(errors.RemoteError(f"name: {text}", code="invalid_request", status=422, hint=f"see {text}"))
    err = capsys.readouterr().err
    assert f"name: {text}" in err and f"see {text}" in err


def test_json_output_refuses_non_finite_figures(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(errors.InvalidInputError, match=r"non-finite figure at cost\.monthly_usd: inf"):
        common.print_json({"cost": {"monthly_usd": float("inf")}})
    assert capsys.readouterr().out == ""
    common.print_json({"cost": {"monthly_usd": 1.5}})
    assert json.loads(capsys.readouterr().out) == {"cost": {"monthly_usd": 1.5}}
