"""API key format: ``vlx_`` + 32 base62 characters (~190 bits of entropy) + a 6-character base62
CRC-32 checksum of the body, like GitHub's tokens, so that secret scanners can tell a real key
offline. The secret is shown once; the database stores only its SHA-256 and a display prefix.
"""

from __future__ import annotations

import hashlib
import secrets
import string
import zlib

PREFIX = "vlx_"
NODE_PREFIX = "vlxn_"
"""Node agents' credentials (``velyrix.controlplane.nodecreds``): same shape, their own prefix, so that a
node token can never pass for an API key (nor the reverse) and scanners tell them apart."""
BODY_LEN = 32
CHECKSUM_LEN = 6
TOKEN_LEN = len(PREFIX) + BODY_LEN + CHECKSUM_LEN
DISPLAY_LEN = len(PREFIX) + 8
_ALPHABET = string.digits + string.ascii_letters
_ALPHABET_SET = frozenset(_ALPHABET)


def _base62(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


def checksum(body: str) -> str:
    """The 6-character base62 CRC-32 of ``body``."""
    return _base62(zlib.crc32(body.encode()), CHECKSUM_LEN)


def generate(prefix: str = PREFIX) -> str:
    """A new random API key (the secret; show it once, store ``digest(token)``); ``NODE_PREFIX`` for a
    node agent's token."""
    body = _base62(secrets.randbelow(len(_ALPHABET) ** BODY_LEN), BODY_LEN)  # uniform over all bodies
    return prefix + body + checksum(body)


def looks_valid(token: str, prefix: str = PREFIX) -> bool:
    """True when ``token`` has the key format (with ``prefix``) and a correct checksum (checked before any
    DB lookup)."""
    if len(token) != TOKEN_LEN - len(PREFIX) + len(prefix) or not token.startswith(prefix):
        return False
    rest = token[len(prefix) :]
    if not set(rest) <= _ALPHABET_SET:
        return False
    return secrets.compare_digest(checksum(rest[:BODY_LEN]), rest[BODY_LEN:])


def digest(token: str) -> str:
    """Hex SHA-256 of the key: what the database stores and looks keys up by.

    A fast hash suffices (unlike passwords) because the key has ~190 random bits: no dictionary exists.
    """
    return hashlib.sha256(token.encode()).hexdigest()


def display_prefix(token: str) -> str:
    """The part of a key that may be shown and logged (``vlx_`` or ``vlxn_`` + 8 characters)."""
    return token[: token.index("_") + 9]
