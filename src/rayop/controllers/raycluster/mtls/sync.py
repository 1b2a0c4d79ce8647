"""KubeRay v1.7.0's ``raycluster-mtls`` controller: the cert-manager PKI of each RayCluster.

It runs only with the ``RayClusterMTLS`` gate on and cert-manager served
(``cert-manager.io/v1``), beside the ``raycluster`` controller, as KubeRay's ``main.go`` does;
it watches RayClusters and the Issuers and Certificates they control; its events carry the
reporting controller ``raycluster-mtls-controller``. One pass over a RayCluster:

- gone, being deleted, managed by another controller (the small controllers' opening,
  :class:`~rayop.controllers.kit.opening.Opening`), or TLS off: nothing;
- the self-signed Issuer, the CA Certificate and the CA Issuer are created when absent (never
  updated: their specs are fixed); the head and worker Certificates are created, or updated
  (Normal ``MTLSCertificatesUpdated``) when their labels, DNS names or IPs (those of the running
  pods of their node type) changed; each Certificate's Secret, once issued, gets an
  ownerReference to its Certificate so that garbage collection removes it too. A failed step is
  Warning ``MTLSFailedToReconcile`` and the pass fails (requeued with backoff);
- leaf Certificates not Ready at their generation: Normal ``MTLSCertsNotReady``, again in 30 s;
- otherwise Normal ``MTLSPKIReady``, a Warning ``MTLSCertificateExpiringSoon`` for each
  certificate whose ``status.notAfter`` is less than 24 hours away, and again in 1 minute
  (which is how new pod IPs reach the certificates).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rayop.api.common import parse_time
from rayop.api.raycluster import RayCluster
from rayop.api.validation.raycluster import parse_raycluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import names as cluster_names
from rayop.controllers.kit import settings
from rayop.controllers.kit.opening import Opened, Opening
from rayop.controllers.raycluster.mtls import certificates as certs
from rayop.controllers.raycluster.mtls import names
from rayop.controllers.raycluster.pods import owner_reference
from rayop.kube.client import KubeClient
from rayop.kube.clock import Clock
from rayop.kube.errors import NotFound
from rayop.kube.resources import SECRETS
from rayop.runtime.events.recorder import EventRecorder, EventType
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.reconcile import Request, Result

__all__ = ["CONTROLLER_NAME", "REPORTING_CONTROLLER", "MTLSSync"]

log = logging.getLogger(__name__)

CONTROLLER_NAME: Final = "raycluster-mtls"
REPORTING_CONTROLLER: Final = "raycluster-mtls-controller"
EXPIRY_WARNING_HOURS: Final = 24.0

PKI_READY: Final = "MTLSPKIReady"
CERTS_NOT_READY: Final = "MTLSCertsNotReady"
FAILED_TO_RECONCILE: Final = "MTLSFailedToReconcile"
CERTIFICATES_UPDATED: Final = "MTLSCertificatesUpdated"
EXPIRING_SOON: Final = "MTLSCertificateExpiringSoon"


def _go_list(values: list[str]) -> str:
    """Formats a string list as Go's ``%v`` does (``[a b]``)."""
    return "[" + " ".join(values) + "]"


@dataclass(slots=True)
class MTLSSync:
    """The pass of the ``raycluster-mtls`` controller; pass :meth:`reconcile` to a controller.

    Args:
        client: The API client.
        clusters: The RayCluster cache.
        issuers: The cert-manager Issuer cache.
        certificates: The cert-manager Certificate cache.
        pods: The pod cache (the pod IPs of the leaf certificates).
        recorder: The event recorder (reporting controller ``raycluster-mtls-controller``).
        gates: The operator's feature gates.
        cluster_domain: The DNS domain of the head Service's FQDN.
        clock: The clock of ``status.notAfter`` comparisons.
    """

    client: KubeClient
    clusters: CacheReader
    issuers: CacheReader
    certificates: CacheReader
    pods: CacheReader
    recorder: EventRecorder
    gates: FeatureGates
    cluster_domain: str
    clock: Clock

    async def reconcile(self, request: Request) -> Result:
        """Runs one pass for ``request`` (see the module docstring).

        Raises:
            ApiError: a create, update or read failed (after a Warning event).
        """
        opened = Opening(cache=self.clusters, parse=parse_raycluster).open(request)
        if not isinstance(opened, Opened):
            return Result()  # done, or a spec the raycluster controller reports
        cached, rc = opened.cached, opened.model
        if not names.is_tls_enabled(rc, self.gates):
            return Result()
        owner = owner_reference(rc)
        steps: tuple[tuple[str, Callable[[], Awaitable[None]]], ...] = (
            ("self-signed issuer", lambda: self._issuer(certs.build_self_signed_issuer(rc, owner))),
            ("CA certificate", lambda: self._ca_certificate(rc, owner)),
            ("CA issuer", lambda: self._issuer(certs.build_ca_issuer(rc, owner))),
            ("head certificate", lambda: self._leaf(rc, cached, "head", owner)),
            ("worker certificate", lambda: self._leaf(rc, cached, "worker", owner)),
        )
        for what, step in steps:
            try:
                await step()
            except Exception as err:
                note = f"Failed to reconcile mTLS {what}: {err}"
                self._event(cached, "Warning", FAILED_TO_RECONCILE, note, action="Reconcile")
                raise
        for node_type in ("head", "worker"):
            cert = await self._get_certificate(rc, names.cert_name(rc.name, node_type))
            if not certs.is_certificate_ready(cert):
                note = "Waiting for cert-manager to issue mTLS certificates"
                self._event(cached, "Normal", CERTS_NOT_READY, note, action="Reconcile")
                return Result(requeue_after=settings.MTLS_NOT_READY_REQUEUE)
        note = "mTLS PKI is ready: CA, head, and worker certificates issued"
        self._event(cached, "Normal", PKI_READY, note, action="Reconcile")
        await self._warn_expiring(rc, cached)
        return Result(requeue_after=settings.MTLS_PERIODIC_REQUEUE)

    def _event(
        self, cluster: Obj, event_type: EventType, reason: str, note: str, *, action: str
    ) -> None:
        regarding = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": cs.meta(cluster)}
        self.recorder.event(regarding, event_type, reason, note, action=action)

    async def _get_certificate(self, rc: RayCluster, name: str) -> Obj:
        namespace = cs.cluster_namespace(rc)
        cached = self.certificates.get(namespace, name)
        if cached is not None:
            return cached
        return await self.client.get(names.CERTIFICATES, name, namespace=namespace)

    async def _issuer(self, issuer: dict[str, Any]) -> None:
        namespace, name = cs.namespace(issuer), cs.name(issuer)
        if self.issuers.get(namespace, name) is not None:
            return
        try:
            await self.client.get(names.ISSUERS, name, namespace=namespace)
        except NotFound:
            await self.client.create(names.ISSUERS, issuer, namespace=namespace)

    async def _lookup(self, namespace: str, name: str) -> Obj | None:
        cached = self.certificates.get(namespace, name)
        if cached is not None:
            return cached
        try:
            return await self.client.get(names.CERTIFICATES, name, namespace=namespace)
        except NotFound:
            return None

    async def _ca_certificate(self, rc: RayCluster, owner: Mapping[str, Any]) -> None:
        desired = certs.build_ca_certificate(rc, owner)
        namespace, name = cs.namespace(desired), cs.name(desired)
        existing = await self._lookup(namespace, name)
        if existing is None:
            await self.client.create(names.CERTIFICATES, desired, namespace=namespace)
            return
        await self._own_secret(existing)

    async def _leaf(self, rc: RayCluster, cluster: Obj, node_type: str, owner: Any) -> None:
        namespace = cs.cluster_namespace(rc)
        selector = {"ray.io/cluster": rc.name, "ray.io/node-type": node_type}
        ips = certs.pod_ips(self.pods.list(namespace, label_selector=selector))
        fqdn = cluster_names.head_service_fqdn(rc, cluster_domain=self.cluster_domain)
        desired = certs.build_leaf_certificate(rc, node_type, owner, ips=ips, head_fqdn=fqdn)
        existing = await self._lookup(namespace, cs.name(desired))
        if existing is None:
            await self.client.create(names.CERTIFICATES, desired, namespace=namespace)
            return
        if certs.leaf_needs_update(existing, desired):
            updated = copy.deepcopy(dict(existing))
            updated.setdefault("apiVersion", names.CERT_MANAGER_GROUP_VERSION)
            updated.setdefault("kind", "Certificate")
            meta = updated.setdefault("metadata", {})
            meta["labels"] = desired["metadata"]["labels"]
            refs = [r for r in meta.get("ownerReferences") or () if not r.get("controller")]
            meta["ownerReferences"] = [*refs, dict(owner)]
            updated["spec"] = desired["spec"]
            addresses = _go_list(desired["spec"]["ipAddresses"])
            note = f"Updated {node_type} certificate SANs (IPs: {addresses})"
            self._event(cluster, "Normal", CERTIFICATES_UPDATED, note, action="Update")
            existing = await self.client.update(names.CERTIFICATES, updated)
        await self._own_secret(existing)

    async def _own_secret(self, cert: Obj) -> None:
        """Gives the Certificate's issued Secret an ownerReference to it (once issued)."""
        namespace = cs.namespace(cert)
        secret_name = (cert.get("spec") or {}).get("secretName")
        if not secret_name:
            return
        try:
            secret = await self.client.get(SECRETS, str(secret_name), namespace=namespace)
        except NotFound:
            return
        uid = cs.meta(cert).get("uid", "")
        refs = list(cs.meta(secret).get("ownerReferences") or ())
        if any(r.get("uid") == uid for r in refs):
            return
        refs.append(
            {
                "apiVersion": names.CERT_MANAGER_GROUP_VERSION,
                "kind": "Certificate",
                "name": cs.name(cert),
                "uid": uid,
            }
        )
        secret.setdefault("metadata", {})["ownerReferences"] = refs
        await self.client.update(SECRETS, secret)

    async def _warn_expiring(self, rc: RayCluster, cluster: Obj) -> None:
        now = self.clock.wall()
        for name in (
            names.cert_name(rc.name, "head"),
            names.cert_name(rc.name, "worker"),
            names.ca_cert_name(rc.name),
        ):
            try:
                cert = await self._get_certificate(rc, name)
            except Exception:  # KubeRay skips a certificate it cannot read here
                continue
            not_after = (cert.get("status") or {}).get("notAfter")
            if not not_after:
                continue
            hours = (parse_time(str(not_after)) - now).total_seconds() / 3600
            if hours < EXPIRY_WARNING_HOURS:
                note = (
                    f"TLS certificate {name} expires in {hours:.1f} hours; Ray does not "
                    "hot-reload certs so a pod restart will be needed after renewal"
                )
                self._event(cluster, "Warning", EXPIRING_SOON, note, action="Reconcile")
