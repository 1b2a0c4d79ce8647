"""Self-signed TLS material for the embedded API server (:mod:`rayop.apimachinery.certs`).

kubectl (client-go) sends bearer tokens only over HTTPS, so a server that requires a token
must speak TLS. The certificate is its own CA: put :attr:`TlsMaterial.ca_data` into the
kubeconfig's ``certificate-authority-data``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from rayop.apimachinery.certs import base64_pem, write_self_signed

__all__ = ["TlsMaterial", "generate_self_signed", "server_ssl_context"]


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of a certificate and key, and the certificate as base64 PEM (kubeconfig form)."""

    cert_path: Path
    key_path: Path
    ca_data: str


def generate_self_signed(
    directory: str | Path, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> TlsMaterial:
    """Writes ``server.crt`` and ``server.key`` (EC P-256, 10 years) into ``directory``.

    Blocks for the openssl run (tens of milliseconds); reuses existing files.

    Raises:
        RuntimeError: openssl failed.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    cert, key = d / "server.crt", d / "server.key"
    if not (cert.exists() and key.exists()):
        write_self_signed(
            cert,
            key,
            common_name="rayop-embedded-apiserver",
            hosts=hosts,
            extensions=(
                "keyUsage=critical,digitalSignature,keyCertSign",
                "extendedKeyUsage=serverAuth",
            ),
        )
        key.chmod(0o600)
    return TlsMaterial(cert, key, base64_pem(cert))


def server_ssl_context(material: TlsMaterial) -> ssl.SSLContext:
    """Returns a server-side SSLContext loaded with the material."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(material.cert_path), str(material.key_path))
    return ctx
