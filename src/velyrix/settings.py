"""Settings, grouped by concern, read from ``VELYRIX_*`` environment variables.

Each group is a frozen dataclass with a docstring per attribute; ``load()`` builds them. This is the only
module that reads the environment (tests/test_settings.py checks it); every other module takes a group.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path

from velyrix.frozen import frozen


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@frozen
class PathSettings:
    home: Path = field(default_factory=lambda: Path(_env("VELYRIX_HOME", str(Path.home() / ".velyrix"))))
    """Where Velyrix keeps its state on this machine (SQLite database, keys, CLI credentials)."""


@frozen
class DatabaseSettings:
    url: str = field(default_factory=lambda: _env("VELYRIX_DATABASE_URL", ""))
    """SQLAlchemy URL; empty means a SQLite file ``velyrix.db`` under ``VELYRIX_HOME`` (WAL mode)."""
    pool_size: int = field(default_factory=lambda: int(_env("VELYRIX_DB_POOL_SIZE", "0")))
    """Connections kept open per process; 0: the backend's default (``controlplane/api/pool.py``)."""
    max_overflow: int = field(default_factory=lambda: int(_env("VELYRIX_DB_MAX_OVERFLOW", "-1")))
    """Connections opened beyond ``pool_size`` under load; -1: the backend's default."""
    pool_wait_s: float = field(default_factory=lambda: float(_env("VELYRIX_DB_POOL_WAIT_S", "2")))
    """Seconds a request waits for a connection before it answers 503 with Retry-After."""


def _float(name: str, default: float) -> float:
    return float(_env(name, str(default)))


@frozen
class ReconcileSettings:
    """The reconcile loop of the control plane (``velyrix.controlplane.reconcile``)."""

    poll_s: float = field(default_factory=lambda: _float("VELYRIX_RECONCILE_POLL_S", 0.2))
    """Wall seconds between polls of pending driver operations."""
    idle_s: float = field(default_factory=lambda: _float("VELYRIX_RECONCILE_IDLE_S", 1.0))
    """Wall seconds between looks at settled clusters (spec changes, deletions)."""
    phase_timeout_s: float = field(default_factory=lambda: _float("VELYRIX_PHASE_TIMEOUT_S", 4 * 3600.0))
    """Wall seconds a cluster may stay in one active phase before it fails with a timeout."""
    max_attempts: int = field(default_factory=lambda: int(_float("VELYRIX_RECONCILE_MAX_ATTEMPTS", 3)))
    """Tries of a temporarily failing driver request before the node is replaced."""
    retry_backoff_s: float = field(default_factory=lambda: _float("VELYRIX_RECONCILE_BACKOFF_S", 0.5))
    """Wall seconds before retrying a temporarily failed request (doubled per attempt)."""
    image: str = field(default_factory=lambda: _env("VELYRIX_NODE_IMAGE", "velyrix-ubuntu-22.04-cuda-12.8"))
    """OS image installed on tenant nodes."""


@frozen
class SigningSettings:
    key_dir: str = field(default_factory=lambda: _env("VELYRIX_SIGNING_KEY_DIR", ""))
    """Where the regions' Ed25519 acceptance-report keys live; empty means ``keys/`` under ``VELYRIX_HOME``."""
    firmware_dir: str = field(default_factory=lambda: _env("VELYRIX_FIRMWARE_DIR", ""))
    """Where the regions' signed firmware manifests live; empty means ``firmware/`` under ``VELYRIX_HOME``."""
    audit_checkpoint_interval: str = field(default_factory=lambda: _env("VELYRIX_AUDIT_CHECKPOINT_INTERVAL_S", ""))
    """Seconds between automatic signed checkpoints of the audit log, as written (empty: the default, 60)."""
    pkcs11_module: str = field(default_factory=lambda: _env("VELYRIX_SIGNING_PKCS11_MODULE", ""))
    """PKCS#11 module (e.g. ``/usr/lib/softhsm/libsofthsm2.so``) whose token holds the region signing keys;
    empty: the keys are PEM files in ``key_dir``."""
    pkcs11_token: str = field(default_factory=lambda: _env("VELYRIX_SIGNING_PKCS11_TOKEN", ""))
    """Label of the token holding the signing keys (each an Ed25519 key pair labelled ``velyrix-<name>``)."""
    pkcs11_pin_file: str = field(default_factory=lambda: _env("VELYRIX_SIGNING_PKCS11_PIN_FILE", ""))
    """File holding that token's user PIN (first line)."""


@frozen
class ClientSettings:
    """The CLI as a client of a control plane."""

    endpoint: str = field(default_factory=lambda: _env("VELYRIX_ENDPOINT", ""))
    """Control-plane URL; overrides the stored login (``velyrix login``) when set with ``api_key``."""
    api_key: str = field(default_factory=lambda: _env("VELYRIX_API_KEY", ""))
    """Bearer API key (``vlx_...``); overrides the stored login when set with ``endpoint``."""
    debug: bool = field(default_factory=lambda: _env("VELYRIX_DEBUG", "") == "1")
    """Show tracebacks (like ``--debug``)."""
    ca_bundle: str = field(default_factory=lambda: _env("VELYRIX_CA_BUNDLE", ""))
    """PEM file of the CA that signed the control plane's TLS certificate; empty: the system's trust store."""


@frozen
class AgentSettings:
    node_token: str = field(default_factory=lambda: _env("VELYRIX_NODE_TOKEN", ""))
    """The node agent's credential (``vlxn_...``) when ``--node-token`` is not given."""
    ca_bundle: str = field(default_factory=lambda: _env("VELYRIX_CA_BUNDLE", ""))
    """PEM file of the CA the control plane's TLS certificate chains to, when ``--ca-bundle`` is not given."""


@frozen
class PostgresHarnessSettings:
    """The PostgreSQL server the test harness starts (``velyrix.testing.postgres``)."""

    bin_dir: str = field(default_factory=lambda: _env("VELYRIX_PG_BIN", ""))
    """Directory of ``initdb`` and ``pg_ctl``; empty means the Debian locations and ``PATH``."""
    run_as: str = field(default_factory=lambda: _env("VELYRIX_PG_USER", "nobody"))
    """The user the server runs as when the harness runs as root."""


@frozen
class NocSettings:
    sweep_s: float = field(default_factory=lambda: float(_env("VELYRIX_NOC_SWEEP_S", "30")))
    """Seconds between escalation sweeps of ``velyrix server`` (0: no sweeps)."""
    smtp_host: str = field(default_factory=lambda: _env("VELYRIX_SMTP_HOST", "127.0.0.1"))
    """SMTP server that email pages go through."""
    smtp_port: int = field(default_factory=lambda: int(_env("VELYRIX_SMTP_PORT", "25")))
    """Its TCP port."""
    pagerduty_routing_key: str = field(default_factory=lambda: _env("VELYRIX_PAGERDUTY_ROUTING_KEY", "velyrix"))
    """``routing_key`` of the PagerDuty Events v2 pages."""
    escalation_policies: str = field(default_factory=lambda: _env("VELYRIX_ESCALATION_POLICIES", ""))
    """A TOML file of ``[escalation_policy.NAME]`` sections that add to (or replace) the catalog's, e.g. to
    page ``pagerduty:URL`` (docs/sla.md, 'Incidents'); empty: the catalog's only."""


@frozen
class SiemSettings:
    """``velyrix audit forward``'s defaults (docs/audit.md); its options override them."""

    to: str = field(default_factory=lambda: _env("VELYRIX_SIEM_TO", ""))
    """The syslog receiver, ``HOST:PORT`` (TLS, RFC 5425)."""
    ca_bundle: str = field(default_factory=lambda: _env("VELYRIX_SIEM_CA_BUNDLE", ""))
    """PEM file of the CAs that may sign the receiver's certificate."""
    format: str = field(default_factory=lambda: _env("VELYRIX_SIEM_FORMAT", "ocsf"))
    """``ocsf`` or ``cef``."""


@frozen
class IdentitySettings:
    """The control plane as a WebAuthn relying party (``controlplane/identity/webauthn_rp.py``)."""

    webauthn_rp_id: str = field(default_factory=lambda: _env("VELYRIX_WEBAUTHN_RP_ID", "localhost"))
    """The RP ID: the domain users' browsers see the control plane on (credentials are bound to it)."""
    webauthn_origins: str = field(default_factory=lambda: _env("VELYRIX_WEBAUTHN_ORIGINS", ""))
    """Comma-separated origins (``https://cloud.example``) assertions may come from; empty:
    ``https://<rp id>``, or, for the RP ID ``localhost``, any http(s)://localhost port."""
    provider_tenant: str = field(default_factory=lambda: _env("VELYRIX_PROVIDER_TENANT", ""))
    """The tenant of the provider's own staff: its users with a provider role (operator, auditor) act as
    provider staff in the console (``controlplane/identity/provider_staff.py``); empty: none."""


@frozen
class ApiSettings:
    access_log: bool = field(default_factory=lambda: _env("VELYRIX_ACCESS_LOG", "1") != "0")
    """One log line per API request (logger ``velyrix.access``, written off the event loop); 0: none."""
    max_in_flight: int = field(default_factory=lambda: int(_env("VELYRIX_API_MAX_IN_FLIGHT", "32")))
    """Requests one server process serves at once (``cli/serving.py``); more wait, ``/healthz`` and ``/readyz``
    never; 0: no limit."""
    queue_wait_s: float = field(default_factory=lambda: float(_env("VELYRIX_API_QUEUE_WAIT_S", "1")))
    """Seconds a request waits for one of those at most, then is answered 503 ``server_busy`` with ``Retry-After``."""


@frozen
class CustomerKeySettings:
    """Where tenants' keys may live (``velyrix.controlplane.cmk``): the provider allows each HSM library and
    key manager it connects to; nothing else is loaded or dialled."""

    pkcs11_modules: str = field(default_factory=lambda: _env("VELYRIX_CMK_PKCS11_MODULES", ""))
    """PKCS#11 modules tenants' tokens may be reached through, separated by ``:`` (empty: none)."""
    kmip_endpoints: str = field(default_factory=lambda: _env("VELYRIX_CMK_KMIP_ENDPOINTS", ""))
    """KMIP key managers tenants' keys may live on, ``host:port`` separated by ``,`` (empty: none)."""


@frozen
class Settings:
    paths: PathSettings = field(default_factory=PathSettings)
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    signing: SigningSettings = field(default_factory=SigningSettings)
    client: ClientSettings = field(default_factory=ClientSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    postgres_harness: PostgresHarnessSettings = field(default_factory=PostgresHarnessSettings)
    noc: NocSettings = field(default_factory=NocSettings)
    siem: SiemSettings = field(default_factory=SiemSettings)
    identity: IdentitySettings = field(default_factory=IdentitySettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    cmk: CustomerKeySettings = field(default_factory=CustomerKeySettings)

    def database_url(self) -> str:
        """The effective database URL (the SQLite default when none is configured)."""
        if self.database.url:
            return self.database.url
        return f"sqlite:///{self.paths.home / 'velyrix.db'}"


def load() -> Settings:
    """Settings from the current environment (read anew on every call)."""
    return Settings()


def terraform_variables() -> dict[str, str]:
    """``TF_VAR_name`` environment variables (Terraform's way to set input variables), name -> raw text."""
    return {k: v for k, v in os.environ.items() if k.startswith("TF_VAR_")}
