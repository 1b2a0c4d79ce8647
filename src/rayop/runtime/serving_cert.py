"""A self-managed serving certificate for the admission webhook server (openssl CLI).

When no certificate is given (controller-runtime's ``--webhook-cert-dir`` holds none), the
operator makes its own: a self-signed certificate whose subject alternative names are the
webhook Service's DNS names (``<svc>``, ``<svc>.<ns>``, ``<svc>.<ns>.svc``, ...) and any IPs
given, written as ``tls.crt`` and ``tls.key``. The certificate is its own CA: its PEM is the
``caBundle`` of the ValidatingWebhookConfiguration.
"""

from __future__ import annotations

import base64
import ipaddress
import subprocess
from pathlib import Path

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
    sans = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
            sans.append(f"IP:{host}")
        except ValueError:
            sans.append(f"DNS:{host}")
    command = [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(cert),
        "-days",
        "3650",
        "-subj",
        f"/CN={hosts[0] if hosts else 'webhook'}",
        "-addext",
        "subjectAltName=" + ",".join(sans),
        "-addext",
        "basicConstraints=critical,CA:TRUE",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl could not make the webhook certificate: {done.stderr}")
    return cert_dir


def ca_bundle(cert_dir: Path) -> str:
    """Returns ``tls.crt`` as base64 PEM (a webhook configuration's ``caBundle``)."""
    return base64.b64encode((cert_dir / "tls.crt").read_bytes()).decode()
