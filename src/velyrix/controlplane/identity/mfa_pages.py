"""The browser side of the second factor: the script every MFA page shares (WebAuthn through the
browser's JSON helpers, ``PublicKeyCredential.parse*OptionsFromJSON`` and ``credential.toJSON()``), the
page of a login's second step (``/auth/mfa``) and the security page (``/ui/security``: register a key,
recovery codes, TOTP, and the owner-key form whose step-up asks the key again)."""

from __future__ import annotations

import html

SCRIPT = """
const csrf = document.body.dataset.csrf || "";
async function post(url, body) {
  const r = await fetch(url, {method: "POST", credentials: "same-origin",
    headers: {"content-type": "application/json", "x-csrf-token": csrf}, body: JSON.stringify(body || {})});
  const data = await r.json().catch(() => ({}));
  if (!r.ok) { const e = new Error(data.code || String(r.status)); e.problem = data; throw e; }
  return data;
}
function show(id, text) { document.getElementById(id).textContent = text; }
async function assertKey(optionsUrl) {
  const options = await post(optionsUrl);
  const cred = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options)});
  return cred.toJSON();
}
async function registerKey() {
  try {
    const options = await post("/auth/mfa/webauthn/register/options");
    const cred = await navigator.credentials.create(
      {publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options)});
    const made = await post("/auth/mfa/webauthn/register", {credential: cred.toJSON(), name: "security key"});
    show("status", "registered " + made.id);
  } catch (e) { show("status", "refused: " + e.message); }
}
async function stepUp() {
  await post("/auth/mfa/step-up", {credential: await assertKey("/auth/mfa/step-up/options")});
}
async function ownerKey() {
  const body = {name: document.getElementById("key-name").value, role: "owner"};
  try {
    let made;
    try { made = await post("/v1/api-keys", body); }
    catch (e) {
      if (e.message !== "identity_step_up_required") throw e;
      show("status", "step-up: touch your security key");
      await stepUp();
      made = await post("/v1/api-keys", body);
    }
    show("status", "owner key " + made.id + " created");
    show("secret", made.secret);
  } catch (e) { show("status", "refused: " + e.message); }
}
async function secondFactor() {
  try {
    const done = await post("/auth/mfa/login", {credential: await assertKey("/auth/mfa/login/options")});
    window.location = done.redirect;
  } catch (e) { show("status", "refused: " + e.message); }
}
async function codeFactor(field) {
  try {
    const body = {}; body[field] = document.getElementById(field).value;
    window.location = (await post("/auth/mfa/login", body)).redirect;
  } catch (e) { show("status", "refused: " + e.message); }
}
"""


def page(title: str, body: str, csrf: str = "") -> str:
    """A whole page with the shared script; ``csrf``: the session's token (mutations send it)."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        + html.escape(title)
        + f" - Velyrix</title></head><body data-csrf='{html.escape(csrf)}'><h1>"
        + html.escape(title)
        + "</h1>"
        + body
        + "<p id='status' role='status'></p><script>"
        + SCRIPT
        + "</script></body></html>"
    )


def second_step(user_name: str, factors: list[str], totp_allowed: bool) -> str:
    """``/auth/mfa``: the login's second step for ``user_name``."""
    parts = [f"<p>Signed in at your identity provider as <b>{html.escape(user_name)}</b>.</p>"]
    if "webauthn" in factors:
        parts.append("<button id='use-key' onclick='secondFactor()'>Use your security key</button>")
    if totp_allowed and "totp" in factors:
        parts.append(
            "<p><input id='totp' autocomplete='one-time-code' maxlength='8'>"
            " <button id='use-totp' onclick=\"codeFactor('totp')\">Use the code</button></p>"
        )
    parts.append(
        "<p><input id='recovery_code' maxlength='40' placeholder='recovery code'>"
        " <button id='use-recovery' onclick=\"codeFactor('recovery_code')\">Use a recovery code</button></p>"
    )
    return page("Second factor", "".join(parts))


def security(user_name: str, keys: list[tuple[str, str]], csrf: str) -> str:
    """``/ui/security``: ``keys`` as (id, name) of the user's registered security keys."""
    listed = "".join(f"<li class='key'>{html.escape(i)} {html.escape(n)}</li>" for i, n in keys) or "<li>none</li>"
    body = (
        f"<p>Security of <b>{html.escape(user_name)}</b>.</p><h2>Security keys</h2><ul id='keys'>{listed}</ul>"
        "<button id='register-key' onclick='registerKey()'>Register a security key</button>"
        "<h2>Owner API key</h2><input id='key-name' value='owner key' maxlength='200'>"
        " <button id='create-owner-key' onclick='ownerKey()'>Create an owner key</button>"
        "<pre id='secret'></pre><p><a href='/ui'>Back</a></p>"
    )
    return page("Security", body, csrf)
