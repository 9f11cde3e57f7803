"""The CLI prints user and server text verbatim: rich markup in a message is text, never a tag, and a
figure that is not finite is an error (exit 2), never ``inf``/``nan`` or non-JSON ``Infinity``."""

from __future__ import annotations

import json
from typing import Any

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


def _signed(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    from velyrix.controlplane.reconcile import signing

    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    report = {"cluster": {"name": "acme"}, "nodes": [], "passed": True}
    return signing.sign(report, "us-east-1")


@pytest.mark.parametrize("key", ["abc", "!!!!", "AAAA", "a" * 45])
def test_verify_with_a_malformed_public_key_is_exit_2(tmp_path: Any, monkeypatch: Any, velyrix: Any, key: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_signed(tmp_path, monkeypatch)))
    result = velyrix("verify", "acceptance", str(path), "--public-key", key)
    assert result.exit_code == 2, result.stderr
    assert "is not a base64 Ed25519 public key" in result.stderr and "internal error" not in result.stderr


def test_a_report_with_a_duplicated_key_is_invalid(tmp_path: Any, monkeypatch: Any, velyrix: Any) -> None:
    signed = _signed(tmp_path, monkeypatch)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(signed))
    key = signed["signature"]["public_key"]
    assert velyrix("verify", "acceptance", str(path), "--public-key", key).exit_code == 0
    text = json.dumps(signed).replace('"passed": true', '"passed": false, "passed": true')
    path.write_text(text)
    result = velyrix("verify", "acceptance", str(path), "--public-key", key)
    assert result.exit_code == 1 and "INVALID" in result.stdout and '"passed" twice' in result.stdout
