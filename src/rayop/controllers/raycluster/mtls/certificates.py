"""The cert-manager Issuers and Certificates of a RayCluster with mTLS, as KubeRay v1.7.0 builds them.

The chain is: a self-signed Issuer, a CA Certificate it signs (RSA 4096, ~10 years, renewed 30
days before expiry), a CA Issuer backed by the CA's Secret, and two leaf Certificates the CA
Issuer signs (90 days, renewed 15 days before expiry; usages digital signature, key
encipherment, server auth, client auth): the head's (DNS names ``localhost`` and the head
Service's FQDN; IP addresses 127.0.0.1 and the head pods' IPs) and the workers' (DNS name
``localhost``; 127.0.0.1 and every worker pod's IP). Every object is controlled by the
RayCluster. Durations are written as Go's ``metav1.Duration`` writes them (``2160h0m0s``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rayop.api.raycluster import RayCluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.raycluster.mtls import names

__all__ = [
    "LEAF_USAGES",
    "build_ca_certificate",
    "build_ca_issuer",
    "build_leaf_certificate",
    "build_self_signed_issuer",
    "is_certificate_ready",
    "leaf_needs_update",
    "normalize_ips",
    "pod_ips",
]

LEAF_USAGES: Final = ("digital signature", "key encipherment", "server auth", "client auth")
_ISSUER_GROUP: Final = "cert-manager.io"


def _meta(rc: RayCluster, name: str, component: str, owner: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": cs.cluster_namespace(rc),
        "labels": names.tls_labels(rc.name, component),
        "ownerReferences": [dict(owner)],
    }


def _issuer(
    rc: RayCluster, name: str, component: str, config: dict[str, Any], owner: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": names.CERT_MANAGER_GROUP_VERSION,
        "kind": "Issuer",
        "metadata": _meta(rc, name, component, owner),
        "spec": config,
    }


def build_self_signed_issuer(rc: RayCluster, owner: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the self-signed Issuer that bootstraps the cluster's CA."""
    name = names.self_signed_issuer_name(rc.name)
    return _issuer(rc, name, "selfsigned-issuer", {"selfSigned": {}}, owner)


def build_ca_issuer(rc: RayCluster, owner: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the Issuer that signs the leaf certificates with the CA's Secret."""
    secret = names.ca_secret_name(rc.name, str(rc.metadata.get("uid", "")))
    name = names.ca_issuer_name(rc.name)
    return _issuer(rc, name, "ca-issuer", {"ca": {"secretName": secret}}, owner)


def _issuer_ref(name: str) -> dict[str, str]:
    return {"name": name, "kind": "Issuer", "group": _ISSUER_GROUP}


def build_ca_certificate(rc: RayCluster, owner: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the cluster's root CA Certificate, signed by the self-signed Issuer."""
    return {
        "apiVersion": names.CERT_MANAGER_GROUP_VERSION,
        "kind": "Certificate",
        "metadata": _meta(rc, names.ca_cert_name(rc.name), "ca-certificate", owner),
        "spec": {
            "secretName": names.ca_secret_name(rc.name, str(rc.metadata.get("uid", ""))),
            "isCA": True,
            "commonName": f"ray-ca-{rc.name}",
            "privateKey": {"algorithm": "RSA", "size": 4096},
            "duration": "87600h0m0s",
            "renewBefore": "720h0m0s",
            "usages": ["cert sign", "crl sign"],
            "issuerRef": _issuer_ref(names.self_signed_issuer_name(rc.name)),
        },
    }


def normalize_ips(ips: Iterable[str]) -> list[str]:
    """Returns the IPs sorted and de-duplicated, with 127.0.0.1 always among them."""
    return sorted({ip for ip in ips if ip} | {"127.0.0.1"})


def build_leaf_certificate(
    rc: RayCluster,
    node_type: str,
    owner: Mapping[str, Any],
    *,
    ips: Iterable[str],
    head_fqdn: str,
) -> dict[str, Any]:
    """Returns the head or worker leaf Certificate for the given pod IPs.

    Args:
        rc: The RayCluster.
        node_type: ``"head"`` or ``"worker"``.
        owner: The controller ownerReference to the RayCluster.
        ips: The IPs of the running pods of that node type.
        head_fqdn: The head Service's FQDN (a DNS name of the head certificate only).
    """
    dns = {"localhost", head_fqdn} if node_type == "head" else {"localhost"}
    component = "head-certificate" if node_type == "head" else "worker-certificate"
    return {
        "apiVersion": names.CERT_MANAGER_GROUP_VERSION,
        "kind": "Certificate",
        "metadata": _meta(rc, names.cert_name(rc.name, node_type), component, owner),
        "spec": {
            "secretName": names.secret_name(rc.name, node_type),
            "duration": "2160h0m0s",
            "renewBefore": "360h0m0s",
            "dnsNames": sorted(dns),
            "ipAddresses": normalize_ips(ips),
            "usages": list(LEAF_USAGES),
            "issuerRef": _issuer_ref(names.ca_issuer_name(rc.name)),
        },
    }


def leaf_needs_update(existing: Obj, desired: Mapping[str, Any]) -> bool:
    """Tells whether a live leaf Certificate's labels, DNS names or IPs (as sets) differ."""
    if dict(cs.labels_of(existing)) != dict(desired["metadata"]["labels"]):
        return True
    have, want = existing.get("spec") or {}, desired["spec"]
    for field in ("dnsNames", "ipAddresses"):
        got: Sequence[str] = have.get(field) or ()
        if len(got) != len(want[field]) or set(got) != set(want[field]):
            return True
    return False


def is_certificate_ready(cert: Obj) -> bool:
    """Tells whether the Certificate's Ready condition is True for its current generation."""
    generation = (cert.get("metadata") or {}).get("generation")
    for cond in (cert.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(
                cond.get("status") == "True" and cond.get("observedGeneration") == generation
            )
    return False


def pod_ips(pods: Iterable[Obj]) -> list[str]:
    """Returns the IPs of the pods that are neither terminating nor finished."""
    ips = []
    for pod in pods:
        status = pod.get("status") or {}
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        if status.get("podIP"):
            ips.append(str(status["podIP"]))
    return ips
