"""Whether the API server serves cert-manager, asked once at startup as KubeRay's ``main.go`` does."""

from __future__ import annotations

import logging

from rayop.controllers.raycluster.mtls.names import CERT_MANAGER_GROUP_VERSION
from rayop.kube.client import KubeClient

__all__ = ["cert_manager_served"]

log = logging.getLogger(__name__)


async def cert_manager_served(client: KubeClient) -> bool:
    """Tells whether ``cert-manager.io/v1`` is served; any failure to find out counts as no.

    KubeRay then neither starts its mTLS controller nor creates pods of a cluster asking for
    TLS (``tlsOptions requires cert-manager, but cert-manager is not installed``).
    """
    try:
        status, _body = await client.request("GET", f"/apis/{CERT_MANAGER_GROUP_VERSION}")
    except Exception as err:  # KubeRay: a discovery error means "not available"
        log.info("cert-manager discovery failed: %s", err)
        return False
    return status == 200
