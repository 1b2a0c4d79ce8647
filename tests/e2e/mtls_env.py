"""Support for the mTLS tests: cert-manager's CRDs on a plane.

:func:`cert_manager_crds` returns the CRDs ``scripts/cert-manager-crds`` fetched from the
cert-manager Go module at the version KubeRay v1.7.0's go.mod names (it runs the script when
they are not cached; a fast-tier test skips when it fails); :func:`install_cert_manager_crds`
creates them and waits until Issuers and Certificates are served. The real tier
(tests/real/test_differential_mtls.py) loads this module by path.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Any

import yaml

from rayop.controllers.raycluster.mtls.names import CERTIFICATES, ISSUERS
from rayop.kube.client import KubeClient
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resources import CRDS
from rayop.testing import eventually

__all__ = ["CrdsUnavailable", "cert_manager_crds", "install_cert_manager_crds"]

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]


class CrdsUnavailable(RuntimeError):
    """The cert-manager CRDs could not be fetched."""


def cert_manager_crds() -> list[Obj]:
    """Returns the ``cert-manager.io`` CRDs, fetching them with ``scripts/cert-manager-crds``.

    Raises:
        CrdsUnavailable: the script failed (its output is the message).
    """
    script = ROOT / "scripts/cert-manager-crds"
    done = subprocess.run([script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CrdsUnavailable(done.stderr.strip() or done.stdout.strip())
    printed = subprocess.run(
        [script, "--print-dir"], capture_output=True, text=True, check=True
    ).stdout
    directory = Path(printed.strip().split("=", 1)[1]) / "crds"
    crds: list[Obj] = []
    for path in sorted(directory.glob("cert-manager.io_*.yaml")):
        crds.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return crds


async def install_cert_manager_crds(
    client: KubeClient, crds: list[Obj], *, timeout: float = 30.0
) -> None:
    """Creates the CRDs (keeping those that exist) and blocks until they are served."""
    for crd in crds:
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)

    async def served() -> bool:
        try:
            for resource in (ISSUERS, CERTIFICATES):
                await client.list(resource, namespace="default", limit=1)
        except NotFound:
            return False
        return True

    await eventually(served, timeout=timeout, what="cert-manager.io served")
