"""``python -m velyrix.testing.kmip_server FOLDER PORT``: PyKMIP's KMIP server on 127.0.0.1:PORT with the
certificates in FOLDER (``ca.pem``, ``server.pem``, ``server.key``), its store ``FOLDER/kmip.db`` and log
``FOLDER/kmip.log``; runs until SIGTERM (``velyrix.testing.hsm.KmipServer``)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any


def main(folder: Path, port: int) -> None:
    from kmip.services.server import KmipServer

    server = KmipServer(
        hostname="127.0.0.1",
        port=port,
        certificate_path=str(folder / "server.pem"),
        key_path=str(folder / "server.key"),
        ca_path=str(folder / "ca.pem"),
        auth_suite="TLS1.2",
        config_path=None,
        log_path=str(folder / "kmip.log"),
        policy_path=str(folder / "policies"),
        enable_tls_client_auth=True,
        database_path=str(folder / "kmip.db"),
        logging_level="INFO",
    )

    def _stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    with server:
        try:
            server.serve()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
