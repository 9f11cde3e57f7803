"""The problems of customer-managed keys (RFC 9457 codes, stable; docs/keys.md lists them)."""

from __future__ import annotations

from velyrix import errors


class KeyInvalidError(errors.VelyrixError):
    """The key's description or credential is refused before any HSM is contacted."""

    code = "cmk_invalid"
    http_status = 422
    user_error = True


class EndpointNotAllowedError(errors.VelyrixError):
    """A PKCS#11 module or KMIP endpoint the provider has not allowed (``velyrix.settings.CustomerKeySettings``)."""

    code = "cmk_endpoint_not_allowed"
    http_status = 403
    user_error = True


class KeyUnreachableError(errors.VelyrixError):
    """The tenant's HSM or key manager could not be reached (connection, TLS, library)."""

    code = "cmk_unreachable"
    http_status = 502
    user_error = False


class KeyUnavailableError(errors.VelyrixError):
    """The tenant's key refused to work: destroyed, revoked or deactivated at the tenant's side, or the
    credential no longer opens it. Data under it cannot be read."""

    code = "cmk_key_unavailable"
    http_status = 409


class KeyDestroyedError(errors.VelyrixError):
    """The key was destroyed through Velyrix (crypto-shredding): its volumes are unreadable for good."""

    code = "cmk_destroyed"
    http_status = 409
    template = "customer key '{name}' was destroyed at {at}: its volumes' data keys cannot be unwrapped"


class GrantRevokedError(errors.VelyrixError):
    """The tenant revoked Velyrix's grant to use the key."""

    code = "cmk_grant_revoked"
    http_status = 409
    template = "the grant to use customer key '{name}' was revoked at {at}: nothing under it can be read"


class NoCustomerKeyError(errors.VelyrixError):
    """A volume created without a customer key holds no data key: the tier stores nothing on it."""

    code = "volume_without_customer_key"
    http_status = 409
    template = "volume '{name}' was created without a customer key: it has no data key to encrypt with"
