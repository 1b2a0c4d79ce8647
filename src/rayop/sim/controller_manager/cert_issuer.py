"""A simulated cert-manager: issues Certificates of ``selfSigned`` and ``ca`` Issuers.

Once the cert-manager CRDs are applied to the embedded plane, every Certificate whose
``issuerRef`` names an Issuer of the same namespace (kind ``Issuer``) is issued as cert-manager
would: its ``spec.secretName`` Secret (type ``kubernetes.io/tls``) gets ``tls.crt``,
``tls.key`` and ``ca.crt`` (the certificate itself for a self-signed one, the CA's for a ``ca``
Issuer, which signs with its ``spec.ca.secretName`` Secret once that holds a key pair), and its
status ``Ready=True`` at the current generation, with ``notBefore``, ``notAfter`` and
``renewalTime``. A spec change (a new IP address) issues again. Issuers get ``Ready=True``.
ClusterIssuers, ACME, Vault and the rest of cert-manager are not simulated: a Certificate
naming one stays unissued. Material: :mod:`~rayop.sim.controller_manager.cert_material`.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import time
from typing import Any, Final

from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.cert_material import IssuedPair, issue
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.machinery.timestamps import timestamp
from rayop.sim.storage.controller_base import StoreController, error_code, meta

__all__ = ["CertIssuerController"]

log = logging.getLogger(__name__)

GROUP: Final = "cert-manager.io"
_DEFAULT_DURATION_HOURS: Final = 2160.0
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")


def _hours(text: Any, default: float) -> float:
    """Returns a Go duration (``2160h0m0s``) in hours, ``default`` when absent or unparsable."""
    match = _DURATION.match(str(text or ""))
    if not text or match is None:
        return default
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    return h + m / 60 + s / 3600


def _ready(generation: Any, message: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": message,
        "lastTransitionTime": timestamp(time.time()),
        "observedGeneration": generation,
    }


def _is_issued(cert: Obj) -> bool:
    generation = meta(cert).get("generation")
    for cond in (cert.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(
                cond.get("status") == "True" and cond.get("observedGeneration") == generation
            )
    return False


class CertIssuerController(StoreController):
    """Issues cert-manager Certificates of ``selfSigned`` and ``ca`` Issuers (see the module)."""

    name = "cert-issuer"
    watched = frozenset({(GROUP, "certificates"), (GROUP, "issuers"), ("", "secrets")})

    async def resync(self) -> None:
        certificates = self.resource(GROUP, "v1", "certificates")
        if certificates is None:
            return
        items, _ = self.store.list(certificates)
        for cert in items:
            await self._issue(str(meta(cert).get("namespace")), str(meta(cert).get("name")))

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        if event_type == "DELETED":
            return
        namespace = str(meta(obj).get("namespace") or "")
        if info.plural == "issuers":
            await self._issuer_ready(namespace, str(meta(obj).get("name")))
            await self._pending(namespace)
        elif info.plural == "certificates":
            await self._issue(namespace, str(meta(obj).get("name")))
        else:  # a Secret: maybe a CA's key pair that pending Certificates wait for
            await self._pending(namespace)

    async def _pending(self, namespace: str) -> None:
        certificates = self.resource(GROUP, "v1", "certificates")
        if certificates is None:
            return
        items, _ = self.store.list(certificates, namespace=namespace)
        for cert in items:
            if not _is_issued(cert):
                await self._issue(namespace, str(meta(cert).get("name")))

    async def _issuer_ready(self, namespace: str, name: str) -> None:
        issuers = self.resource(GROUP, "v1", "issuers")
        if issuers is None:
            return

        def change(obj: Obj) -> bool:
            generation = meta(obj).get("generation")
            conditions = (obj.get("status") or {}).get("conditions") or []
            if any(
                c.get("type") == "Ready" and c.get("observedGeneration") == generation
                for c in conditions
            ):
                return False
            obj["status"] = {"conditions": [_ready(generation, "Signing CA verified")]}
            return True

        await self.mutate(issuers, namespace, name, change, subresource="status")

    async def _signer(self, namespace: str, issuer: Obj) -> IssuedPair | bool | None:
        """Returns the CA pair of a ``ca`` Issuer, None for ``selfSigned``, False when not ready."""
        spec = issuer.get("spec") or {}
        if "selfSigned" in spec:
            return None
        secret_name = (spec.get("ca") or {}).get("secretName")
        secrets = self.resource("", "v1", "secrets")
        if not secret_name or secrets is None:
            return False
        secret = self.store.peek(secrets, namespace, str(secret_name))
        data = (secret or {}).get("data") or {}
        if "tls.crt" not in data or "tls.key" not in data:
            return False
        return IssuedPair(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))

    async def _issue(self, namespace: str, name: str) -> None:
        certificates = self.resource(GROUP, "v1", "certificates")
        issuers = self.resource(GROUP, "v1", "issuers")
        secrets = self.resource("", "v1", "secrets")
        if certificates is None or issuers is None or secrets is None:
            return
        cert = self.store.peek(certificates, namespace, name)
        if cert is None or meta(cert).get("deletionTimestamp") or _is_issued(cert):
            return
        spec = cert.get("spec") or {}
        ref = spec.get("issuerRef") or {}
        if ref.get("kind", "Issuer") != "Issuer" or ref.get("group", GROUP) != GROUP:
            return
        issuer = self.store.peek(issuers, namespace, str(ref.get("name")))
        if issuer is None:
            return
        signer = await self._signer(namespace, issuer)
        if signer is False:
            return
        hours = _hours(spec.get("duration"), _DEFAULT_DURATION_HOURS)
        renew = _hours(spec.get("renewBefore"), hours / 3)
        pair = await asyncio.to_thread(
            issue,
            common_name=str(spec.get("commonName") or ""),
            dns=[str(d) for d in spec.get("dnsNames") or ()],
            ips=[str(i) for i in spec.get("ipAddresses") or ()],
            usages=[
                str(u) for u in spec.get("usages") or ("digital signature", "key encipherment")
            ],
            is_ca=bool(spec.get("isCA")),
            days=int(hours // 24),
            signer=signer if isinstance(signer, IssuedPair) else None,
        )
        ca = signer.cert if isinstance(signer, IssuedPair) else pair.cert
        await self._write_secret(secrets, namespace, cert, pair, ca)
        now = time.time()
        generation = meta(cert).get("generation")
        uid = meta(cert).get("uid")

        def change(obj: Obj) -> bool:
            if meta(obj).get("generation") != generation:
                return False  # changed meanwhile: its own event issues it again
            obj["status"] = {
                "conditions": [_ready(generation, "Certificate is up to date and has not expired")],
                "notBefore": timestamp(now),
                "notAfter": timestamp(now + hours * 3600),
                "renewalTime": timestamp(now + (hours - renew) * 3600),
                "revision": int((obj.get("status") or {}).get("revision") or 0) + 1,
            }
            return True

        await self.mutate(certificates, namespace, name, change, subresource="status", uid=str(uid))

    async def _write_secret(
        self, secrets: ResourceInfo, namespace: str, cert: Obj, pair: IssuedPair, ca: bytes
    ) -> None:
        secret_name = str((cert.get("spec") or {}).get("secretName") or "")
        if not secret_name:
            return
        data = {
            "tls.crt": base64.b64encode(pair.cert).decode(),
            "tls.key": base64.b64encode(pair.key).decode(),
            "ca.crt": base64.b64encode(ca).decode(),
        }
        annotations = {
            "cert-manager.io/certificate-name": str(meta(cert).get("name")),
            "cert-manager.io/issuer-name": str(
                ((cert.get("spec") or {}).get("issuerRef") or {}).get("name")
            ),
            "cert-manager.io/issuer-kind": "Issuer",
            "cert-manager.io/issuer-group": GROUP,
        }

        def change(obj: Obj) -> bool:
            obj["data"] = data
            meta(obj).setdefault("annotations", {}).update(annotations)
            return True

        if self.store.peek(secrets, namespace, secret_name) is not None:
            await self.mutate(secrets, namespace, secret_name, change)
            return
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": secret_name, "namespace": namespace, "annotations": annotations},
            "data": data,
        }
        try:
            await self.store.create(secrets, namespace, body)
        except Exception as exc:
            if error_code(exc) != 409:
                raise
            await self.mutate(secrets, namespace, secret_name, change)
