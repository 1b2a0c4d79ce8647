"""A self-managed serving certificate for the admission webhook server (openssl CLI).

When no certificate is given (controller-runtime's ``--webhook-cert-dir`` holds none), the
operator makes its own: a self-signed certificate whose subject alternative names are the
webhook Service's DNS names (``<svc>``, ``<svc>.<ns>``, ``<svc>.<ns>.svc``, ...) and any IPs
given, written as ``tls.crt`` and ``tls.key`` (by :mod:`rayop.apimachinery.certs`). The
certificate is its own CA: its PEM is the ``caBundle`` of the ValidatingWebhookConfiguration.
"""

from __future__ import annotations

from pathlib import Path

from rayop.apimachinery.certs import base64_pem, write_self_signed

__all__ = ["ca_bundle", "ensure_serving_cert", "service_hosts"]


def service_hosts(service: str, namespace: str) -> tuple[str, ...]:
    """Returns the DNS names the API server may use to reach ``service`` in ``namespace``."""
    return (
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    )


def ensure_serving_cert(cert_dir: Path, hosts: tuple[str, ...]) -> Path:
    """Writes a self-signed ``tls.crt``/``tls.key`` (EC P-256, 10 years) for ``hosts`` into
    ``cert_dir`` unless both exist; returns ``cert_dir``. Blocks for the openssl run.

    Raises:
        RuntimeError: openssl failed.
    """
    cert_dir.mkdir(parents=True, exist_ok=True)
    cert, key = cert_dir / "tls.crt", cert_dir / "tls.key"
    if cert.exists() and key.exists():
        return cert_dir
    write_self_signed(
        cert,
        key,
        common_name=hosts[0] if hosts else "webhook",
        hosts=hosts,
        failure="openssl could not make the webhook certificate",
    )
    return cert_dir


def ca_bundle(cert_dir: Path) -> str:
    """Returns ``tls.crt`` as base64 PEM (a webhook configuration's ``caBundle``)."""
    return base64_pem(cert_dir / "tls.crt")
