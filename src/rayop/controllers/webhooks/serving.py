"""Running the webhooks beside the operator (``ENABLE_WEBHOOKS=true``), as KubeRay does.

KubeRay's main registers its three webhooks on the manager's webhook server when
``ENABLE_WEBHOOKS`` is ``"true"``; controller-runtime serves them on port 9443 with the
certificate in ``<tmp>/k8s-webhook-server/serving-certs`` (``tls.crt``, ``tls.key``), which
KubeRay's manifests fill from cert-manager. rayop does the same, and when that directory holds
no certificate it makes its own (self-signed, for the webhook Service's names, localhost and
127.0.0.1). Given ``register_url``, it also registers KubeRay's ValidatingWebhookConfiguration
pointing there with its CA (``rayop up``: the embedded plane calls the operator directly);
otherwise the configuration is the deployment's business (the chart, kustomize), as in KubeRay.
The server runs whether or not this replica leads, like controller-runtime's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.webhooks.configuration import SERVICE_NAME, webhook_configuration
from rayop.controllers.webhooks.validators import handlers
from rayop.kube.client import KubeClient
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource
from rayop.runtime.serving.admission_server import AdmissionServer
from rayop.runtime.serving.serving_cert import ca_bundle, ensure_serving_cert, service_hosts

__all__ = ["DEFAULT_CERT_DIR", "VALIDATING_WEBHOOK_CONFIGURATIONS", "WebhookSettings", "serving"]

log = logging.getLogger(__name__)

DEFAULT_CERT_DIR: Final = Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"
"""controller-runtime's default ``CertDir``."""

VALIDATING_WEBHOOK_CONFIGURATIONS: Final = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)


def _namespace() -> str:
    return os.environ.get("POD_NAMESPACE") or "ray-system"


@dataclass(frozen=True, kw_only=True)
class WebhookSettings:
    """Where and how the webhook server runs.

    Attributes:
        host: The interface to bind (every interface by default).
        port: The port (controller-runtime's 9443; 0 picks a free one).
        cert_dir: The directory of ``tls.crt`` and ``tls.key``; a self-managed pair is written
            there when it holds none.
        service_namespace: The namespace of the webhook Service named in a self-managed
            certificate (``POD_NAMESPACE``, else ``ray-system``).
        register_url: When set (``https://host:port``, the port may be 0 for the bound one),
            the operator registers the configuration with this URL and its CA.
    """

    host: str = "0.0.0.0"
    port: int = 9443
    cert_dir: Path = DEFAULT_CERT_DIR
    service_namespace: str = field(default_factory=_namespace)
    register_url: str | None = None


def _serving_cert(settings: WebhookSettings) -> Path:
    hosts = (*service_hosts(SERVICE_NAME, settings.service_namespace), "localhost", "127.0.0.1")
    return ensure_serving_cert(settings.cert_dir, hosts)


async def _register(client: KubeClient, url: str, ca: str) -> None:
    desired = webhook_configuration(ca, url=url)
    name = desired["metadata"]["name"]
    try:
        current = await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, name)
    except NotFound:
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, desired)
    else:
        metadata = {
            **desired["metadata"],
            "resourceVersion": current["metadata"]["resourceVersion"],
        }
        await client.update(VALIDATING_WEBHOOK_CONFIGURATIONS, {**desired, "metadata": metadata})
    log.info("registered the validating webhooks at %s", url)


@contextlib.asynccontextmanager
async def serving(
    client: KubeClient, gates: FeatureGates, settings: WebhookSettings
) -> AsyncIterator[AdmissionServer]:
    """Serves the webhooks for the duration of the block (and registers them if told to).

    Blocks on the certificate, the bind and the registration.

    Raises:
        OSError: the port cannot be bound or the certificate cannot be read or made.
        RuntimeError: openssl could not make a certificate.
        rayop.kube.errors.ApiError: the registration failed.
    """
    cert_dir = _serving_cert(settings)
    server = AdmissionServer(handlers(gates), cert_dir, settings.host, settings.port)
    await server.start()
    try:
        if settings.register_url is not None:
            url = settings.register_url
            if url.endswith(":0"):
                url = f"{url[:-2]}:{server.port}"
            await _register(client, url, ca_bundle(cert_dir))
        yield server
    finally:
        await server.stop()
