"""The ``sushy-tools`` Redfish emulator (OpenStack's BMC emulator, the ``dev`` extra) on loopback, in its
libvirt-free fake-driver mode, behind HTTP Basic authentication (a bcrypt htpasswd file), with an image
server beside it for virtual media (the emulator downloads an inserted image, as a BMC does).

``with SushyEmulator.start(tmp_path) as emu:`` gives ``emu.url``, ``emu.system_id`` and ``emu.endpoint()``
(a ``BmcEndpoint`` with the right or a given password); the processes and servers stop on exit.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bcrypt
import httpx

from velyrix.fleet.drivers.redfish import BmcEndpoint, Secret

USERNAME = "velyrix"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SushyEmulator:
    """A running emulator: Redfish at ``url`` with one fake ComputerSystem ``system_id`` (powered off);
    installer images under ``image_base`` (files of ``image_dir``)."""

    url: str
    system_id: str
    password: str
    image_dir: Path
    image_base: str
    process: subprocess.Popen[bytes]
    log: Path

    def endpoint(self, password: str | None = None, *, node_type: str = "") -> BmcEndpoint:
        return BmcEndpoint(
            address=self.url,
            system_id=self.system_id,
            username=USERNAME,
            password=Secret(self.password if password is None else password),
            verify_tls=False,
            node_type=node_type,
        )

    @classmethod
    @contextlib.contextmanager
    def start(cls, workdir: Path, *, timeout_s: float = 60.0) -> Iterator[SushyEmulator]:
        exe = Path(sys.executable).with_name("sushy-emulator")
        if not exe.exists():
            found = shutil.which("sushy-emulator")
            if found is None:
                raise RuntimeError("sushy-emulator is not installed (pip install -e '.[dev]')")
            exe = Path(found)
        workdir.mkdir(parents=True, exist_ok=True)
        images = workdir / "images"
        images.mkdir(exist_ok=True)
        password = uuid.uuid4().hex
        auth = workdir / "htpasswd"
        auth.write_text(f"{USERNAME}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
        system_id = str(uuid.uuid4())
        port = free_port()
        config = workdir / "emulator.conf"
        config.write_text(
            "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
            f"SUSHY_EMULATOR_AUTH_FILE = {str(auth)!r}\n"
            f"SUSHY_EMULATOR_STATE_DIR = {str(workdir / 'state')!r}\n"
            "SUSHY_EMULATOR_FAKE_SYSTEMS = [{"
            f"'uuid': {system_id!r}, 'name': 'velyrix-emu-0', 'power_state': 'Off', "
            "'nics': [{'mac': '00:5c:52:31:3a:9c', 'ip': '127.0.0.2'}]}]\n"
        )
        handler = functools.partial(_QuietFiles, directory=str(images))
        files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=files.serve_forever, daemon=True).start()
        log = workdir / "emulator.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(exe), "--config", str(config), "-i", "127.0.0.1", "-p", str(port), "--fake"],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        emu = cls(
            url=f"http://127.0.0.1:{port}",
            system_id=system_id,
            password=password,
            image_dir=images,
            image_base=f"http://127.0.0.1:{files.server_address[1]}",
            process=proc,
            log=log,
        )
        try:
            _wait_up(emu, timeout_s)
            yield emu
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            files.shutdown()
            files.server_close()


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _wait_up(emu: SushyEmulator, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if emu.process.poll() is not None:
            raise RuntimeError(f"sushy-emulator exited: {emu.log.read_text()[-2000:]}")
        try:
            if httpx.get(emu.url + "/redfish/v1", timeout=1.0).status_code in (200, 401):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"sushy-emulator did not answer within {timeout_s:g} s: {emu.log.read_text()[-2000:]}")
