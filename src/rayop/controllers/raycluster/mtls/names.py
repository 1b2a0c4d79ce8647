"""Names, labels and constants of KubeRay v1.7.0's mTLS objects (``utils/constant.go``, ``util.go``).

A RayCluster ``c`` with TLS on gets the Issuers ``ray-selfsigned-issuer-c`` and
``ray-ca-issuer-c``, the Certificates ``ray-ca-certificate-c`` (secret
``c-ca-secret-<first 8 characters of the cluster UID>``), ``ray-head-cert-c`` (secret
``ray-head-secret-c``) and ``ray-worker-cert-c`` (secret ``ray-worker-secret-c``).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from rayop.api import keys
from rayop.api.raycluster import RayCluster
from rayop.controllers.config.gates import FeatureGates
from rayop.controllers.kit.labels import APP_NAME_VALUE, CREATED_BY_VALUE
from rayop.kube.resource import Resource

__all__ = [
    "CERTIFICATES",
    "CERT_MANAGER_GROUP_VERSION",
    "ISSUERS",
    "RAY_TLS_CA_CERT",
    "RAY_TLS_SERVER_CERT",
    "RAY_TLS_SERVER_KEY",
    "RAY_USE_TLS",
    "TLS_ENV_NAMES",
    "TLS_MOUNT_PATH",
    "TLS_VOLUME",
    "WAIT_FOR_TLS_IP_SAN",
    "ca_cert_name",
    "ca_issuer_name",
    "ca_secret_name",
    "cert_manager_missing",
    "cert_name",
    "is_tls_enabled",
    "secret_name",
    "self_signed_issuer_name",
    "tls_labels",
]

CERT_MANAGER_GROUP_VERSION: Final = "cert-manager.io/v1"
ISSUERS: Final = Resource("cert-manager.io", "v1", "issuers", "Issuer")
CERTIFICATES: Final = Resource("cert-manager.io", "v1", "certificates", "Certificate")

RAY_USE_TLS: Final = "RAY_USE_TLS"
RAY_TLS_SERVER_CERT: Final = "RAY_TLS_SERVER_CERT"
RAY_TLS_SERVER_KEY: Final = "RAY_TLS_SERVER_KEY"
RAY_TLS_CA_CERT: Final = "RAY_TLS_CA_CERT"
TLS_ENV_NAMES: Final = (RAY_USE_TLS, RAY_TLS_SERVER_CERT, RAY_TLS_SERVER_KEY, RAY_TLS_CA_CERT)
"""The env vars the operator manages on TLS containers (a user may not set them)."""

TLS_VOLUME: Final = "ray-tls"
TLS_MOUNT_PATH: Final = "/etc/ray/tls"
WAIT_FOR_TLS_IP_SAN: Final = "wait-for-tls-ip-san"
"""The init container that waits until the pod's certificate lists the pod IP."""


def is_tls_enabled(rc: RayCluster, gates: FeatureGates) -> bool:
    """Tells whether mTLS is on: gate ``RayClusterMTLS`` on and ``tlsOptions.enabled: true``."""
    tls = rc.spec.tls_options
    return gates.ray_cluster_mtls and tls is not None and tls.enabled is True


def self_signed_issuer_name(cluster: str) -> str:
    """Returns the self-signed Issuer's name, ``ray-selfsigned-issuer-<cluster>``."""
    return f"ray-selfsigned-issuer-{cluster}"


def ca_cert_name(cluster: str) -> str:
    """Returns the CA Certificate's name, ``ray-ca-certificate-<cluster>``."""
    return f"ray-ca-certificate-{cluster}"


def ca_issuer_name(cluster: str) -> str:
    """Returns the CA Issuer's name, ``ray-ca-issuer-<cluster>``."""
    return f"ray-ca-issuer-{cluster}"


def ca_secret_name(cluster: str, uid: str) -> str:
    """Returns the CA Secret's name, ``<cluster>-ca-secret-<first 8 characters of the UID>``.

    The UID suffix gives a re-created cluster of the same name a new CA.
    """
    return f"{cluster}-ca-secret-{uid[:8]}"


def cert_name(cluster: str, node_type: str) -> str:
    """Returns the head (``ray-head-cert-<cluster>``) or worker Certificate's name."""
    return f"ray-{'head' if node_type == 'head' else 'worker'}-cert-{cluster}"


def secret_name(cluster: str, node_type: str) -> str:
    """Returns the head (``ray-head-secret-<cluster>``) or worker TLS Secret's name."""
    return f"ray-{'head' if node_type == 'head' else 'worker'}-secret-{cluster}"


def tls_labels(cluster: str, component: str) -> dict[str, str]:
    """Returns the labels KubeRay puts on each of a cluster's cert-manager objects."""
    return {
        keys.APP_NAME: APP_NAME_VALUE,
        keys.APP_CREATED_BY: CREATED_BY_VALUE,
        "app.kubernetes.io/component": component,
        keys.RAY_CLUSTER: cluster,
    }


class _ContextLike(Protocol):
    @property
    def rc(self) -> RayCluster: ...

    @property
    def deps(self) -> Any: ...


def cert_manager_missing(ctx: _ContextLike) -> str | None:
    """Returns KubeRay's refusal of a cluster asking for TLS when cert-manager is not served."""
    options = ctx.deps.options
    if is_tls_enabled(ctx.rc, options.feature_gates) and not options.cert_manager_available:
        return "tlsOptions requires cert-manager, but cert-manager is not installed"
    return None
