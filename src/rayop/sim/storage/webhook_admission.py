"""Validating admission through the webhooks stored as ValidatingWebhookConfigurations.

The store serves ``admissionregistration.k8s.io/v1`` ``validatingwebhookconfigurations``
(cluster-scoped) and, like kube-apiserver, sends each create and update that passed schema
validation and defaulting to the matching webhooks before committing it
(:func:`rayop.sim.admission.webhooks.call_validating_webhooks`). Webhook configurations are
read from the store at each request, so one applied with ``kubectl apply`` takes effect at
once. Writes of the configurations themselves are never sent to webhooks (kube-apiserver
exempts them too, so a broken webhook can always be removed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rayop.apimachinery.objects import Obj
from rayop.sim.admission.webhooks import (
    AdmissionAttributes,
    ServiceResolver,
    call_validating_webhooks,
)
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.objects import ObjectTable

__all__ = ["VALIDATING_WEBHOOK_CONFIGURATIONS", "WebhookAdmission"]

VALIDATING_WEBHOOK_CONFIGURATIONS: Final = ResourceInfo(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    False,
    "validatingwebhookconfiguration",
)
_EXEMPT_GROUP: Final = "admissionregistration.k8s.io"


@dataclass(eq=False)
class WebhookAdmission:
    """Calls the stored validating webhooks for one write.

    Attributes:
        table: Where the ValidatingWebhookConfigurations are stored.
        resolve_service: Maps a webhook Service to a URL (the embedded plane has no cluster
            network); None refuses Service-addressed webhooks per their failurePolicy.
    """

    table: ObjectTable
    resolve_service: ServiceResolver | None = None

    async def admit(
        self,
        info: ResourceInfo,
        operation: str,
        namespace: str,
        name: str,
        obj: Obj,
        old: Obj | None,
        *,
        subresource: str = "",
    ) -> None:
        """Returns when every matching webhook allows the write; blocks on the calls.

        Raises:
            rayop.sim.machinery.errors.StatusError: a webhook refused the write, or could not
                be called and its failurePolicy is Fail.
        """
        if info.group == _EXEMPT_GROUP:
            return
        configurations = self.table.resources.get(
            VALIDATING_WEBHOOK_CONFIGURATIONS.group,
            VALIDATING_WEBHOOK_CONFIGURATIONS.version,
            VALIDATING_WEBHOOK_CONFIGURATIONS.plural,
        )
        if configurations is None:
            return
        stored = list(self.table.iter_objects(configurations))
        if not stored:
            return
        attrs = AdmissionAttributes(
            group=info.group,
            version=info.version,
            resource=info.plural,
            kind=info.kind,
            operation=operation,
            namespace=namespace,
            name=name,
            obj=obj,
            old_obj=old,
            subresource=subresource,
        )
        await call_validating_webhooks(stored, attrs, resolve_service=self.resolve_service)
