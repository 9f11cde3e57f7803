"""Per-tenant SSH certificate authorities and the short-lived user certificates they sign.

A certificate names its holder in the key id (``user:<id> tenant:<id>``) and binds itself to its
tenant through its principals: ``vlx-tenant-<tenant id>`` opens the jump host's door of that tenant
only (``jumphost.authorized_keys``), and ``root`` or ``vlx-user`` are the node logins, accepted only
by nodes that trust this tenant's CA (``jumphost.node_authorized_keys``). Uses the ``cryptography``
library's OpenSSH certificate builder (Ed25519 keys).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from velyrix import errors

MAX_VALIDITY_S = 12 * 3600
"""The longest a user certificate may live (short-lived by design; no revocation list needed)."""
DEFAULT_VALIDITY_S = 3600
ROOT = "root"
"""The node login of a root certificate (self-operated clusters only: ``modes``)."""
USER = "vlx-user"
"""The node login of an unprivileged certificate."""
OPERATOR = "vlx-operator"
"""The node login of the provider's operators (their own CA, ``provider_ca``)."""
_MAX_PUBLIC_KEY_BYTES = 16_384
_ACCEPTED_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ssh-rsa")


def tenant_principal(tenant_id: str) -> str:
    """The principal that opens the jump host for ``tenant_id``'s certificates."""
    return f"vlx-tenant-{tenant_id}"


@dataclass(frozen=True)
class CertificateAuthority:
    """A CA key pair: OpenSSH public key line and the private key as OpenSSH PEM, in memory only (the
    database keeps it sealed: ``ca_sealing``); the key never appears in this object's repr."""

    public_key: str
    private_key_pem: bytes = field(repr=False)

    def signer(self) -> ed25519.Ed25519PrivateKey:
        key = serialization.load_ssh_private_key(self.private_key_pem, password=None)
        assert isinstance(key, ed25519.Ed25519PrivateKey)
        return key


def new_authority(comment: str) -> CertificateAuthority:
    """A fresh Ed25519 CA; ``comment`` ends its public key line (e.g. ``velyrix-ca tenant:ten_x``)."""
    key = ed25519.Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    return CertificateAuthority(public_key=f"{public.decode()} {comment}", private_key_pem=pem)


def parse_public_key(text: str) -> str:
    """``text`` (one OpenSSH public key line, e.g. from ``~/.ssh/id_ed25519.pub``) checked and
    normalised to ``TYPE BASE64`` (the comment dropped). ``InvalidInputError`` (422) when it is not one."""
    if len(text) > _MAX_PUBLIC_KEY_BYTES:
        raise errors.InvalidInputError("the public key is too long", hint="give one OpenSSH public key line")
    parts = text.strip().split()
    if len(parts) < 2 or parts[0] not in _ACCEPTED_KEY_TYPES or "\n" in text.strip():
        raise errors.InvalidInputError(
            "not an OpenSSH public key line", hint="expected e.g. 'ssh-ed25519 AAAA... you@host'"
        )
    try:
        key = serialization.load_ssh_public_key(f"{parts[0]} {parts[1]}".encode())
    except (ValueError, TypeError) as exc:
        raise errors.InvalidInputError(f"the public key does not decode: {exc}") from None
    blob = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return blob.decode()


def sign_user(
    ca: CertificateAuthority,
    public_key: str,
    *,
    key_id: str,
    principals: Sequence[str],
    valid_for_s: int = DEFAULT_VALIDITY_S,
    now: dt.datetime | None = None,
) -> tuple[str, int, dt.datetime]:
    """Sign ``public_key`` (an OpenSSH line) as a user certificate valid from one minute ago (clock
    skew) for ``valid_for_s`` seconds. Returns ``(certificate line, serial, expires_at)``. The
    certificate allows a PTY and nothing else of OpenSSH's default extensions (no agent, port or X11
    forwarding: the jump host relays sessions itself)."""
    from cryptography.hazmat.primitives.serialization import ssh

    if not 60 <= valid_for_s <= MAX_VALIDITY_S:
        raise errors.InvalidInputError(
            f"valid_for_s = {valid_for_s} is out of range", hint=f"give 60 to {MAX_VALIDITY_S} seconds"
        )
    subject = serialization.load_ssh_public_key(parse_public_key(public_key).encode())
    now = now or dt.datetime.now(dt.UTC)
    serial = secrets.randbits(63)
    expires = now + dt.timedelta(seconds=valid_for_s)
    builder = (
        ssh.SSHCertificateBuilder()
        .public_key(subject)  # type: ignore[arg-type]
        .serial(serial)
        .type(ssh.SSHCertificateType.USER)
        .key_id(key_id.encode())
        .valid_principals([p.encode() for p in principals])
        .valid_after(int(now.timestamp()) - 60)
        .valid_before(int(expires.timestamp()))
        .add_extension(b"permit-pty", b"")
    )
    cert = builder.sign(ca.signer())
    return cert.public_bytes().decode(), serial, expires
