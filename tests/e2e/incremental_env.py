"""Support for the incremental-upgrade tests: the Gateway API CRDs and KubeRay's sample.

* :func:`gateway_api_crds` returns the standard-channel CRDs ``scripts/gateway-api-crds``
  fetched (it runs the script when they are not cached; a fast-tier test skips when it fails);
* :func:`incremental_sample` reads ``config/samples/ray-service.incremental-upgrade.yaml`` from
  KubeRay v1.7.0's source archive (tests/kuberay_compat.py), never from a copy in the repository.

On the embedded plane its own Gateway implementation (``rayop.sim.controller_manager.gateways``)
programs the Gateway and the HTTPRoute; on the real tier
(tests/real/test_differential_incremental_upgrade.py, which loads this module by path) no
implementation runs, and :class:`rayop.testing.GatewayProgrammer` plays one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from rayop.testing.gateway_api import GATEWAYS, HTTP_ROUTES
from tests.kuberay_compat import source_sample

__all__ = ["GATEWAYS", "HTTP_ROUTES", "CrdsUnavailable", "gateway_api_crds", "incremental_sample"]

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = "ray-service.incremental-upgrade.yaml"


class CrdsUnavailable(RuntimeError):
    """The Gateway API CRDs could not be fetched."""


def gateway_api_crds() -> list[Obj]:
    """Returns the Gateway API CRDs, fetching them with ``scripts/gateway-api-crds`` if needed.

    Raises:
        CrdsUnavailable: the script failed (its output is the message).
    """
    script = ROOT / "scripts/gateway-api-crds"
    done = subprocess.run([script], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CrdsUnavailable(done.stderr.strip() or done.stdout.strip())
    printed = subprocess.run(
        [script, "--print-dir"], capture_output=True, text=True, check=True
    ).stdout
    directory = Path(printed.strip().split("=", 1)[1]) / "crds"
    crds: list[Obj] = []
    for path in sorted(directory.glob("*.yaml")):
        crds.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return crds


def incremental_sample() -> Obj:
    """Returns KubeRay v1.7.0's incremental-upgrade RayService sample."""
    (service,) = [d for d in source_sample(SAMPLE) if d.get("kind") == "RayService"]
    return dict(service)
