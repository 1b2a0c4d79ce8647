"""The ValidatingWebhookConfiguration of rayop's webhooks, as KubeRay v1.7's manifests write it.

KubeRay's ``config/webhook/manifests.yaml``: one configuration named
``validating-webhook-configuration`` with the webhooks ``vraycluster.kb.io``,
``vrayjob.kb.io`` and ``vrayservice.kb.io``, each for ``CREATE`` and ``UPDATE`` of its
``ray.io/v1`` resource, ``failurePolicy: Fail``, ``sideEffects: None``, AdmissionReview
``v1``. The client config points either at a Service (in a cluster: KubeRay's
``webhook-service``, port 443 to the operator's 9443) or at a URL (the operator running beside
an embedded control plane). A fourth webhook, ``vraycronjob.kb.io``, is rayop's own (KubeRay
has none for RayCronJob).
"""

from __future__ import annotations

from typing import Any, Final

from rayop.controllers.webhooks.validators import PATHS

__all__ = ["CONFIGURATION_NAME", "SERVICE_NAME", "webhook_configuration"]

CONFIGURATION_NAME: Final = "validating-webhook-configuration"
SERVICE_NAME: Final = "webhook-service"
_WEBHOOKS: Final = (
    ("vraycluster.kb.io", "RayCluster", "rayclusters"),
    ("vrayjob.kb.io", "RayJob", "rayjobs"),
    ("vrayservice.kb.io", "RayService", "rayservices"),
    ("vraycronjob.kb.io", "RayCronJob", "raycronjobs"),
)


def webhook_configuration(
    ca_bundle: str,
    *,
    url: str | None = None,
    service_namespace: str = "ray-system",
    service_name: str = SERVICE_NAME,
    name: str = CONFIGURATION_NAME,
) -> dict[str, Any]:
    """Returns the configuration registering the four webhooks.

    Args:
        ca_bundle: Base64 PEM of the CA that signed the serving certificate.
        url: ``https://host:port`` of the webhook server; when None, the Service
            ``service_namespace/service_name`` (port 443) is used.
        service_namespace: The webhook Service's namespace.
        service_name: The webhook Service's name.
        name: The configuration's name.
    """
    webhooks = []
    for webhook_name, kind, resource in _WEBHOOKS:
        path = PATHS[kind]
        client: dict[str, Any] = {"caBundle": ca_bundle}
        if url is not None:
            client["url"] = url.rstrip("/") + path
        else:
            client["service"] = {
                "name": service_name,
                "namespace": service_namespace,
                "path": path,
                "port": 443,
            }
        webhooks.append(
            {
                "name": webhook_name,
                "admissionReviewVersions": ["v1"],
                "clientConfig": client,
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "rules": [
                    {
                        "apiGroups": ["ray.io"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": [resource],
                    }
                ],
            }
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": webhooks,
    }
