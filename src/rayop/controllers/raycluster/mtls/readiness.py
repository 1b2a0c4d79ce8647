"""The check KubeRay v1.7.0's RayCluster controller makes before it creates a pod with mTLS on.

Both leaf Certificates must be Ready at their current generation (so a pod is never created
while an older certificate, without a newly added pod IP, is still mounted), and both leaf
Secrets must hold ``tls.crt``, ``tls.key`` and ``ca.crt``. When not, the pass fails with
``mTLS secrets not ready: <why>`` and is requeued with backoff, as KubeRay's ``reconcilePods``
does. The objects are read from the API server (they are not in the operator's caches).
"""

from __future__ import annotations

from typing import Final

from rayop.controllers.raycluster.mtls import names
from rayop.controllers.raycluster.mtls.certificates import is_certificate_ready
from rayop.kube.client import KubeClient
from rayop.kube.errors import ApiError
from rayop.kube.resources import SECRETS

__all__ = ["REQUIRED_KEYS", "MTLSNotReadyError", "check_mtls_secrets_ready"]

REQUIRED_KEYS: Final = ("tls.crt", "tls.key", "ca.crt")
_NODE_TYPES: Final = ("head", "worker")


class MTLSNotReadyError(Exception):
    """The TLS Certificates or Secrets a new pod would mount are not issued yet."""


async def check_mtls_secrets_ready(client: KubeClient, namespace: str, cluster: str) -> None:
    """Returns when both leaf certificates are issued; blocks on the API.

    Raises:
        MTLSNotReadyError: a Certificate is missing or not Ready at its generation, or a
            Secret is missing or lacks a key (the message says which).
    """
    for node_type in _NODE_TYPES:
        name = names.cert_name(cluster, node_type)
        try:
            cert = await client.get(names.CERTIFICATES, name, namespace=namespace)
        except ApiError as err:
            raise MTLSNotReadyError(f"certificate {name} not found: {err}") from err
        if not is_certificate_ready(cert):
            generation = (cert.get("metadata") or {}).get("generation", 0)
            raise MTLSNotReadyError(
                f"certificate {name} is not ready at current generation {generation}"
            )
    for node_type in _NODE_TYPES:
        name = names.secret_name(cluster, node_type)
        try:
            secret = await client.get(SECRETS, name, namespace=namespace)
        except ApiError as err:
            raise MTLSNotReadyError(f"secret {name} not found: {err}") from err
        data = secret.get("data") or {}
        for key in REQUIRED_KEYS:
            if key not in data:
                raise MTLSNotReadyError(f"secret {name} missing required key {key}")
