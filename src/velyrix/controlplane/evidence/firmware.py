"""The region's firmware baseline as a signed manifest: for each component its version and the SHA-256 of
its image. Provisioning accepts a node only when the versions and image digests it reports match the
manifest and UEFI Secure Boot is on; anything else fails the node with the component named.

The manifest lives in ``$VELYRIX_FIRMWARE_DIR/<region>.manifest.json`` (default ``$VELYRIX_HOME/firmware``),
signed with the key ``firmware-<region>`` of ``reconcile.signing`` (same document shape as acceptance
reports). ``publish`` writes one from the vendor images; ``load`` verifies the signature against the
key and refuses a tampered or unsigned file (``velyrix up`` does this at start, the reconciler before
each provisioning).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from velyrix import errors, settings
from velyrix.controlplane.reconcile import signing

KIND = "velyrix.firmware-manifest/v1"


@dataclass(frozen=True)
class Manifest:
    """A verified manifest: component -> (version, image SHA-256 hex)."""

    region: str
    components: dict[str, tuple[str, str]]
    key_id: str

    @property
    def versions(self) -> dict[str, str]:
        return {c: v for c, (v, _) in self.components.items()}


def manifest_path(region: str) -> Path:
    env = settings.load().signing.firmware_dir
    return (Path(env) if env else settings.load().paths.home / "firmware") / f"{region}.manifest.json"


def key_name(region: str) -> str:
    return f"firmware-{region}"


def publish(region: str, baseline: Mapping[str, str], image: Callable[[str, str], bytes]) -> Path:
    """Sign the manifest of ``baseline`` (component -> version) with the digests of ``image(c, v)``."""
    return publish_signed(region, {c: (v, hashlib.sha256(image(c, v)).hexdigest()) for c, v in baseline.items()})


def publish_signed(region: str, pinned: Mapping[str, tuple[str, str]]) -> Path:
    """Sign and write the manifest of ``pinned`` (component -> (version, image SHA-256 hex)), atomically."""
    components = [{"component": c, "version": v, "image_sha256": d} for c, (v, d) in sorted(pinned.items())]
    signed = signing.sign({"kind": KIND, "region": region, "components": components}, key_name(region))
    path = manifest_path(region)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(signed, indent=2, sort_keys=True))
    os.replace(tmp, path)
    return path


def load(region: str) -> Manifest:
    """The verified manifest of ``region``; ``InvalidInputError`` when it is missing, unreadable, unsigned,
    signed by another key or altered."""
    path = manifest_path(region)
    try:
        signed = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise errors.InvalidInputError(
            f"firmware manifest {path} cannot be read: {exc}",
            hint="publish the region's signed firmware manifest (velyrix up does it for the twin)",
        ) from None
    pinned = signing.public_key_b64(key_name(region))
    result = signing.verify(signed, pinned) if isinstance(signed, dict) else None
    body = signed.get("report", {}) if isinstance(signed, dict) else {}
    if result is None or not result.valid or body.get("kind") != KIND or body.get("region") != region:
        reason = result.reason if result is not None and not result.valid else "not a firmware manifest of " + region
        raise errors.InvalidInputError(
            f"firmware manifest {path} refused: {reason}",
            hint="restore the manifest signed by the region's firmware key; nothing is provisioned until then",
        )
    components = {str(c["component"]): (str(c["version"]), str(c["image_sha256"])) for c in body["components"]}
    return Manifest(region=region, components=components, key_id=result.key_id)


def check(manifest: Manifest, result: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(the node's firmware evidence, the problem or None) for a finished ``provision`` ``result``."""
    running: Mapping[str, str] = result.get("firmware") or {}
    digests: Mapping[str, str] = result.get("firmware_sha256") or {}
    boot = dict(result.get("secure_boot") or {})
    rows, problems = {}, []
    for component, (version, digest) in sorted(manifest.components.items()):
        have_v, have_d = running.get(component, "missing"), digests.get(component, "missing")
        rows[component] = {"version": have_v, "image_sha256": have_d, "matches": (have_v, have_d) == (version, digest)}
        if have_v != version:
            problems.append(f"{component} {have_v} != {version}")
        elif have_d != digest:
            problems.append(f"{component} image digest {have_d[:16]} != signed {digest[:16]}")
    if boot.get("enabled") is not True:
        problems.append("secure boot is off")
    evidence = {"manifest_key_id": manifest.key_id, "components": rows, "secure_boot": boot}
    if problems:
        return evidence, "firmware differs from the signed baseline: " + "; ".join(problems)
    return evidence, None
